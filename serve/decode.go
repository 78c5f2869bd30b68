package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
	if err := dec.Decode(v); err != nil {
		return jsonError(body, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("invalid JSON: data after the top-level value at byte %d", dec.InputOffset())
	}
	return nil
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

// outOfRange reports whether num, a JSON number encoding/json could not store in a Go value of kind, is a
// number of the right sort that does not fit (1e400 for a float32, 3000000000 or 1e10 for an int32)
// rather than one of the wrong sort (1.5 for an integer).
func outOfRange(kind, num string) bool {
	switch {
	case strings.HasPrefix(kind, "float"):
		return true // the only number a float field refuses is one past its range
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		f, err := strconv.ParseFloat(num, 64)
		if err != nil { // past even float64's range
			return true
		}
		return f == math.Trunc(f) && (f >= 0 || strings.HasPrefix(kind, "int"))
	}
	return false
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
