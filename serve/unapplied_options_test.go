package serve

import (
	"log/slog"
	"strings"
	"testing"
)

// TestModelfileOptionsNotAppliedAreLoggedOnEveryRoute: a stored model's PARAMETERs bankml does not apply
// (num_gpu, use_mmap, ...) are logged once per request, in the Ollama routes' one WARN line, on the OpenAI
// routes that take the Modelfile (/v1/chat/completions, /v1/completions) as on /api/chat and /api/generate;
// a model whose PARAMETERs are all applied logs nothing, and the answer never names them.
func TestModelfileOptionsNotAppliedAreLoggedOnEveryRoute(t *testing.T) {
	chat := `{"model":"stories260K.gguf","stream":false,"messages":[{"role":"user","content":"x"}]}`
	text := `{"model":"stories260K.gguf","stream":false,"prompt":"x"}`
	for _, c := range []struct {
		name    string
		options map[string]any // the model's PARAMETERs
		path    string
		body    string
		logged  []string // named in the one log line; nil: no line
	}{
		{name: "/v1/chat/completions logs the model's num_gpu and use_mmap once",
			options: map[string]any{"num_predict": int64(2), "num_gpu": int64(1), "use_mmap": true},
			path:    "/v1/chat/completions", body: chat, logged: []string{"num_gpu", "use_mmap"}},
		{name: "a streamed /v1/chat/completions logs them once too",
			options: map[string]any{"num_predict": int64(2), "num_gpu": int64(1)},
			path:    "/v1/chat/completions", body: strings.Replace(chat, `"stream":false`, `"stream":true`, 1), logged: []string{"num_gpu"}},
		{name: "/v1/completions logs the model's num_thread once",
			options: map[string]any{"num_predict": int64(2), "num_thread": int64(4)},
			path:    "/v1/completions", body: text, logged: []string{"num_thread"}},
		{name: "/api/chat logs the model's num_gpu once, as before",
			options: map[string]any{"num_predict": int64(2), "num_gpu": int64(1)},
			path:    "/api/chat", body: chat, logged: []string{"num_gpu"}},
		{name: "/v1/chat/completions logs nothing when every PARAMETER applies",
			options: map[string]any{"num_predict": int64(2), "top_k": int64(5)},
			path:    "/v1/chat/completions", body: chat},
		{name: "/v1/completions logs nothing when every PARAMETER applies",
			options: map[string]any{"num_predict": int64(2)},
			path:    "/v1/completions", body: text},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log syncBuffer
			ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Threads: 1,
				Log: slog.New(slog.NewTextHandler(&log, nil)), Defaults: ModelDefaults{Options: c.options}})
			st, b := ts.post(t, c.path, []byte(c.body))
			if st != 200 {
				t.Fatalf("%d %s, want 200", st, b)
			}
			logged := log.String()
			if n, want := strings.Count(logged, "ollama: options not applied"), min(len(c.logged), 1); n != want {
				t.Errorf("%d log lines, want %d:\n%s", n, want, logged)
			}
			for _, name := range c.logged {
				if !strings.Contains(logged, name) {
					t.Errorf("the log does not name %q:\n%s", name, logged)
				}
				if strings.Contains(string(b), name) {
					t.Errorf("the answer names %q: %s", name, b)
				}
			}
		})
	}
}
