package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// decodeJSON decodes a request body into v (a struct of the fields a route reads; unknown fields are
// ignored, as llama-server ignores them). Malformed JSON, a value of the wrong type or trailing data is a
// 400 invalid_request_error naming the problem and where it is (byte offset, field).
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("the request body is empty: expected a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return jsonError(body, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("invalid JSON: data after the top-level value at byte %d", dec.InputOffset())
	}
	if fixed, changed := truncateInts(tree, reflect.TypeOf(v)); changed {
		if b, err := json.Marshal(fixed); err == nil {
			body = b
		}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return jsonError(body, err)
	}
	return nil
}

// truncateInts rewrites, in tree (a JSON value decoded with UseNumber), every number with a fraction or an
// exponent that lands in an integer field of t to that number truncated toward zero, when the truncated
// value fits the field's type: nlohmann::json's get<int>() on a float, which llama-server's field_num<T>::eval
// (tools/server/server-schema.cpp:598,600) calls, is a C++ float→integer conversion (2.0 → 2, 3.5 → 3,
// -3.5 → -3). Numbers past the type's range are left alone for encoding/json to refuse as out of range (C++
// leaves that conversion undefined). Fields whose type decodes itself (json.Unmarshaler, json.RawMessage:
// prompt token arrays, which llama-server reads only as integers) are left alone. changed reports whether
// tree was rewritten.
func truncateInts(tree any, t reflect.Type) (out any, changed bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshaler) || t.Implements(unmarshaler) {
		return tree, false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, ok := tree.(json.Number)
		if !ok || !strings.ContainsAny(string(n), ".eE") {
			return tree, false
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return tree, false
		}
		f = math.Trunc(f) + 0 // -0.5 → 0, not -0
		if !intFits(t, f) {
			return tree, false
		}
		return json.Number(strconv.FormatFloat(f, 'f', -1, 64)), true
	case reflect.Slice, reflect.Array:
		a, ok := tree.([]any)
		if !ok {
			return tree, false
		}
		for i := range a {
			var c bool
			if a[i], c = truncateInts(a[i], t.Elem()); c {
				changed = true
			}
		}
		return a, changed
	case reflect.Map:
		m, ok := tree.(map[string]any)
		if !ok {
			return tree, false
		}
		for k := range m {
			var c bool
			if m[k], c = truncateInts(m[k], t.Elem()); c {
				changed = true
			}
		}
		return m, changed
	case reflect.Struct:
		m, ok := tree.(map[string]any)
		if !ok {
			return tree, false
		}
		for k := range m {
			if ft := jsonFieldType(t, k); ft != nil {
				var c bool
				if m[k], c = truncateInts(m[k], ft); c {
					changed = true
				}
			}
		}
		return m, changed
	}
	return tree, false
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// intFits reports whether f, a whole number, is in the range of integer type t.
func intFits(t reflect.Type, f float64) bool {
	bits := t.Bits()
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return f >= 0 && f < math.Ldexp(1, bits)
	}
	return f >= -math.Ldexp(1, bits-1) && f < math.Ldexp(1, bits-1)
}

// jsonFieldType is the type of the field of struct t that encoding/json stores the object key key in (its
// json tag name or Go name, promoted fields of embedded structs included, exact match before a
// case-insensitive one), or nil when none does.
func jsonFieldType(t reflect.Type, key string) reflect.Type {
	var fold reflect.Type
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || (f.Anonymous && f.Tag.Get("json") == "" && f.Type.Kind() == reflect.Struct) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = f.Type
		}
	}
	return fold
}

// jsonError turns an encoding/json error into a 400 naming the problem.
func jsonError(body []byte, err error) *APIError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return badRequest("invalid JSON at byte %d (line %d): %v", se.Offset, lineOf(body, se.Offset), se)
	case errors.As(err, &te):
		field := jsonField(te.Field)
		if strings.HasPrefix(te.Value, "number ") && field != "" && te.Type.Kind() == reflect.Float64 {
			if key, ok := mapKeyOf(body, field); ok {
				field += "." + key // a map's entry ("options": {"top_k": 1e400}): encoding/json names the map only
			}
		}
		if field == "" {
			return badRequest("invalid request: expected a JSON object, got %s", te.Value)
		}
		kind := te.Type.Kind().String()
		if num, ok := strings.CutPrefix(te.Value, "number "); ok && outOfRange(kind, num) {
			return badRequest("Field '%s': number %s is out of range for %s", field, num, jsonRange(kind))
		}
		return badRequest("Field '%s': expected %s, got %s", field, jsonKind(kind), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest("invalid JSON: the body ends before the value is complete")
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	return badRequest("invalid request: %v", err)
}

// mapKeyOf is the key of the first entry, in the body's order, of the JSON object at path field (dotted,
// as jsonField gives it) whose number is out of float64's range: the entry encoding/json could not store
// in a map ("options": {"top_k": 1e400}), which its error names by the map only. ok is false when field is
// not an object holding such a number.
func mapKeyOf(body []byte, field string) (key string, ok bool) {
	raw := json.RawMessage(body)
	for _, part := range strings.Split(field, ".") {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || m[part] == nil {
			return "", false
		}
		raw = m[part]
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return "", false
		}
		if n, isNum := v.(json.Number); isNum {
			if _, err := n.Float64(); err != nil {
				return t.(string), true
			}
		}
	}
	return "", false
}

// jsonField is the JSON path of a field as encoding/json reports it ("stream_options.include_usage"),
// without the Go names of embedded structs it puts in the path ("Params.top_k" for samplingFields'
// embedded sample.Params): those are exported, so capitalised, and every JSON name bankml decodes is
// lower-case.
func jsonField(path string) string {
	var keep []string
	for _, p := range strings.Split(path, ".") {
		if r, _ := utf8.DecodeRuneInString(p); p != "" && !unicode.IsUpper(r) {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ".")
}

// outOfRange reports whether num, a JSON number encoding/json could not store in a Go value of kind, is
// refused for its size (1e400 for a float32; 3000000000, 1e10 or -1 for an int32 or a uint): a number that
// fits an integer field after truncation never reaches encoding/json as a float (truncateInts), so every
// number a numeric field refuses is past its range.
func outOfRange(kind, _ string) bool {
	return strings.HasPrefix(kind, "float") || strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint")
}

// jsonRange names the range of a Go numeric kind for a client.
func jsonRange(kind string) string {
	switch kind {
	case "float32":
		return "a 32-bit float"
	case "float64":
		return "a 64-bit float"
	case "int8":
		return fmt.Sprintf("an integer in [%d, %d]", math.MinInt8, math.MaxInt8)
	case "int16":
		return fmt.Sprintf("an integer in [%d, %d]", math.MinInt16, math.MaxInt16)
	case "int32":
		return fmt.Sprintf("an integer in [%d, %d]", math.MinInt32, math.MaxInt32)
	case "int", "int64":
		return fmt.Sprintf("an integer in [%d, %d]", math.MinInt64, math.MaxInt64)
	case "uint8":
		return fmt.Sprintf("an integer in [0, %d]", math.MaxUint8)
	case "uint16":
		return fmt.Sprintf("an integer in [0, %d]", math.MaxUint16)
	case "uint32":
		return fmt.Sprintf("an integer in [0, %d]", uint64(math.MaxUint32))
	}
	return fmt.Sprintf("an integer in [0, %d]", uint64(math.MaxUint64))
}

// lineOf is the 1-based line of byte offset off in b.
func lineOf(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return bytes.Count(b[:off], []byte{'\n'}) + 1
}

// jsonKind names a Go kind as the JSON type a client sends.
func jsonKind(k string) string {
	switch k {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return fmt.Sprintf("a %s", k)
}
