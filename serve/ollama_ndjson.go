package serve

import (
	"encoding/json"
	"errors"
	"net/http"
)

// ndjsonStream writes Ollama's streamed answers: newline-delimited JSON
// (Content-Type application/x-ndjson), one object per line, each flushed
// to the client as it is written (server/routes.go streamResponse in
// Ollama v0.17.4). An error after the first line is sent as a last
// {"error": "..."} line, as Ollama does; before it, as the HTTP status with
// that body.
type ndjsonStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func newNDJSONStream(w http.ResponseWriter) *ndjsonStream {
	return &ndjsonStream{w: w, rc: http.NewResponseController(w)}
}

// line marshals v and writes it with its newline, then flushes. Errors: the
// marshalling's, the client's connection's.
func (s *ndjsonStream) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if !s.started {
		s.w.Header().Set("Content-Type", "application/x-ndjson")
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	if _, err := s.w.Write(append(b, '\n')); err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// fail reports an error: as status and {"error": msg} before the first
// line, else as a final {"error": msg} line.
func (s *ndjsonStream) fail(status int, msg string) {
	if !s.started {
		ollamaError(s.w, status, msg)
		s.started = true
		return
	}
	_ = s.line(ollamaErrorBody{Error: msg})
}

// ollamaErrorBody is Ollama's error answer, {"error": "..."}, which
// api.Client turns into an api.StatusError.
type ollamaErrorBody struct {
	Error string `json:"error"`
}

// ollamaError writes status with Ollama's error body.
func ollamaError(w http.ResponseWriter, status int, msg string) {
	writeOllamaJSON(w, status, ollamaErrorBody{Error: msg})
}

// writeOllamaJSON writes v as a JSON answer (Content-Type
// application/json; charset=utf-8, as gin's c.JSON).
func writeOllamaJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(ollamaErrorBody{Error: "encoding the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
