package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
		field := te.Field
		if field == "" {
			return badRequest("invalid request: expected a JSON object, got %s", te.Value)
		}
		return badRequest("invalid request: field %q: expected %s, got %s", field, jsonKind(te.Type.Kind().String()), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest("invalid JSON: the body ends before the value is complete")
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	return badRequest("invalid request: %v", err)
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
