package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Error types of llama-server's format_error_response (tools/server/server-common.cpp): the "type" of an
// error body, each with its HTTP status.
const (
	TypeInvalidRequest = "invalid_request_error"     // 400
	TypeAuthentication = "authentication_error"      // 401
	TypeNotFound       = "not_found_error"           // 404
	TypeServer         = "server_error"              // 500
	TypePermission     = "permission_error"          // 403
	TypeNotSupported   = "not_supported_error"       // 501
	TypeUnavailable    = "unavailable_error"         // 503
	TypeExceedContext  = "exceed_context_size_error" // 400
)

// errorStatus maps an error type to its status as format_error_response does.
var errorStatus = map[string]int{
	TypeInvalidRequest: http.StatusBadRequest,
	TypeAuthentication: http.StatusUnauthorized,
	TypeNotFound:       http.StatusNotFound,
	TypeServer:         http.StatusInternalServerError,
	TypePermission:     http.StatusForbidden,
	TypeNotSupported:   http.StatusNotImplemented,
	TypeUnavailable:    http.StatusServiceUnavailable,
	TypeExceedContext:  http.StatusBadRequest,
}

// APIError is an error answered with llama-server's error body: {"error": {"code", "message", "type"}} (plus
// n_prompt_tokens and n_ctx for exceed_context_size_error, as server_task_result_error::to_json adds them).
// Status overrides the type's status when not 0 (413 and 429, which llama-server does not produce itself).
type APIError struct {
	Status        int
	Type          string
	Message       string
	NPromptTokens int // exceed_context_size_error only
	NCtx          int // exceed_context_size_error only
}

// Error is the message.
func (e *APIError) Error() string { return e.Message }

// HTTPStatus is the status the error is answered with.
func (e *APIError) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	if s, ok := errorStatus[e.Type]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// badRequest returns a 400 invalid_request_error with a formatted message.
func badRequest(format string, args ...any) *APIError {
	return &APIError{Type: TypeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON of an APIError.
func (e *APIError) body() map[string]any {
	inner := map[string]any{"code": e.HTTPStatus(), "message": e.Message, "type": e.Type}
	if e.Type == TypeExceedContext {
		inner["n_prompt_tokens"] = e.NPromptTokens
		inner["n_ctx"] = e.NCtx
	}
	return map[string]any{"error": inner}
}

// asAPIError turns any error into an APIError: an *APIError as it is, anything else a 500 server_error.
func asAPIError(err error) *APIError {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	return &APIError{Type: TypeServer, Message: err.Error()}
}

// writeError answers err with llama-server's error body (application/json; charset=utf-8) and its status.
// It is the one error writer of the OpenAI and llama-server routes; the Ollama routes write {"error": "..."}
// with writeOllamaError's shape but take the status from the same APIError.
func writeError(w http.ResponseWriter, err error) {
	ae := asAPIError(err)
	if ae.HTTPStatus() == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1") // RFC 9110 §10.2.3: seconds
	}
	writeJSON(w, ae.HTTPStatus(), ae.body())
}

// writeJSON answers v as JSON (no HTML escaping, as nlohmann::json dumps) with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshalJSON(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":500,"message":"encoding the answer failed","type":"server_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// marshalJSON encodes v without HTML escaping and without a trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var buf jsonBuffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.b
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	return b, nil
}

type jsonBuffer struct{ b []byte }

func (j *jsonBuffer) Write(p []byte) (int, error) { j.b = append(j.b, p...); return len(p), nil }
