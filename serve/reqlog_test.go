package serve

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// requestLines are the log's "request" lines, decoded.
func requestLines(t *testing.T, s *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		var m map[string]any
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// TestEveryRequestGetsOneLogLineWithoutItsContent: the server logs one structured line per request, as
// llama-server's log_server_request does: method, path, status, bytes, duration, remote address and the
// served model, at info level (GET /v1/health, which llama-server leaves out, at debug level); never the
// prompt, the answer or the query string.
func TestEveryRequestGetsOneLogLineWithoutItsContent(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Threads: 1, Log: log})
	const secret = "PURPLE-ELEPHANT-7"
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		level                    string
	}{
		{"a chat completion is logged without its prompt", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + secret + `"}],"max_tokens":2}`, 200, "INFO"},
		{"a streamed Ollama generate is logged once", "POST", "/api/generate", `{"model":"stories260K","prompt":"` + secret + `","options":{"num_predict":2}}`, 200, "INFO"},
		{"a refused request is logged with its status", "POST", "/v1/completions", `{"prompt":"` + secret + `","temperature":"hot"}`, 400, "INFO"},
		{"an unknown path is logged as its 404", "GET", "/nope", "", 404, "INFO"},
		{"a query string is left out", "GET", "/slots?fail_on_no_slot=1&x=" + secret, "", 200, "INFO"},
		{"the health check is logged", "GET", "/health", "", 200, "INFO"},
		{"llama-server's unlogged health check is at debug level", "GET", "/v1/health", "", 200, "DEBUG"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(requestLines(t, &buf))
			req, err := http.NewRequest(c.method, ts.url+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			status, body := do(t, req)
			if status != c.status {
				t.Fatalf("%d %s, want %d", status, body, c.status)
			}
			lines := requestLines(t, &buf)[before:]
			for deadline := time.Now().Add(2 * time.Second); len(lines) == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond) // the line is written as the handler returns
				lines = requestLines(t, &buf)[before:]
			}
			if len(lines) != 1 {
				t.Fatalf("%d request lines, want 1: %v", len(lines), lines)
			}
			l := lines[0]
			path, _, _ := strings.Cut(c.path, "?")
			if l["method"] != c.method || l["path"] != path || l["status"] != float64(c.status) || l["level"] != c.level ||
				l["model"] != "stories260K.gguf" || l["remote"] == "" || l["bytes"] != float64(len(body)) {
				t.Fatalf("log line %v; want %s %s %d at %s, model stories260K.gguf, %d bytes", l, c.method, path, c.status, c.level, len(body))
			}
		})
	}
	if strings.Contains(buf.String(), secret) {
		t.Fatalf("the log holds a request's content:\n%s", buf.String())
	}
}
