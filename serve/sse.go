package serve

import (
	"net/http"
)

// sseWriter writes server-sent events as llama-server's format_oai_sse does: each event "data: JSON\n\n",
// flushed at once; the stream ends with "data: [DONE]\n\n". Headers are sent with the first event, so that
// an error before it can still be a plain JSON answer.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func newSSE(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
}

// events writes one event per value (JSON without HTML escaping) and flushes; an error means the client is
// gone (generation should stop).
func (s *sseWriter) events(vs ...any) error {
	s.start()
	var buf []byte
	for _, v := range vs {
		b, err := marshalJSON(v)
		if err != nil {
			return err
		}
		buf = append(buf, "data: "...)
		buf = append(buf, b...)
		buf = append(buf, "\n\n"...)
	}
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

// done writes the terminating "data: [DONE]" event.
func (s *sseWriter) done() error {
	s.start()
	if _, err := s.w.Write([]byte("data: [DONE]\n\n")); err != nil {
		return err
	}
	return s.rc.Flush()
}

// fail answers err on a stream: a plain JSON error answer (writeError) when no event was sent yet, as
// llama-server answers an error that is the first result; else a "data: {"error": {...}}" event, after
// which the stream ends.
func (s *sseWriter) fail(err error) {
	if !s.started {
		writeError(s.w, err)
		return
	}
	_ = s.events(map[string]any{"error": asAPIError(err).body()["error"]})
}
