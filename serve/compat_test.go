package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestUnknownRoutes checks the answers for a path no route serves and for a known path asked with another
// method: llama-server's 404 File Not Found body everywhere but /api/ (cpp-httplib has no 405, and answers
// HEAD as GET), under /api/ Ollama's JSON error shape for a 404 (gin's text "404 page not found" as the
// error, or a message naming an Ollama route bankml does not serve) and gin's text for a 405 ("405 method
// not allowed"; HEAD only where Ollama registers it).
func TestUnknownRoutes(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	const llamaNotFound = `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`
	for _, c := range []struct {
		method, path string
		status       int
		ctype, body  string
		allow        string // the Allow header (gin's, on a 405 under /api/)
	}{
		{"GET", "/nope", 404, "application/json; charset=utf-8", llamaNotFound, ""},
		{"POST", "/v1/images/generations", 404, "application/json; charset=utf-8", llamaNotFound, ""},
		{"GET", "/v1/completions", 404, "application/json; charset=utf-8", llamaNotFound, ""},
		{"GET", "/v1/chat/completions", 404, "application/json; charset=utf-8", llamaNotFound, ""},
		{"GET", "/chat/completions", 404, "application/json; charset=utf-8", llamaNotFound, ""},
		{"DELETE", "/health", 404, "application/json; charset=utf-8", llamaNotFound, ""},
		{"GET", "/api/nope", 404, "application/json; charset=utf-8", `{"error":"404 page not found"}`, ""},
		{"POST", "/api/pull", 404, "application/json; charset=utf-8", `{"error":"POST /api/pull: bankml serve does not serve this Ollama route (no model store or accounts): it serves the one model it was started with"}`, ""},
		{"POST", "/api/blobs/sha256:00", 404, "application/json; charset=utf-8", `{"error":"POST /api/blobs/sha256:00: bankml serve does not serve this Ollama route (no model store or accounts): it serves the one model it was started with"}`, ""},
		{"GET", "/api/chat", 405, "text/plain", "405 method not allowed", "POST"},
		{"POST", "/api/tags", 405, "text/plain", "405 method not allowed", "HEAD, GET"},
		{"DELETE", "/api/version", 405, "text/plain", "405 method not allowed", "HEAD, GET"},
		{"PUT", "/api/ps", 405, "text/plain", "405 method not allowed", "GET"},
		{"HEAD", "/health", 200, "application/json; charset=utf-8", "", ""},
		{"HEAD", "/v1/models", 200, "application/json; charset=utf-8", "", ""},
		{"HEAD", "/api/tags", 200, "application/json; charset=utf-8", "", ""},
		{"HEAD", "/api/ps", 405, "text/plain", "", "GET"},
	} {
		req, err := http.NewRequest(c.method, ts.url+c.path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st := resp.StatusCode; st != c.status || string(b) != c.body || resp.Header.Get("Content-Type") != c.ctype || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d %q (%s, Allow %q), want %d %q (%s, Allow %q)", c.method, c.path, resp.StatusCode, b, resp.Header.Get("Content-Type"), resp.Header.Get("Allow"), c.status, c.body, c.ctype, c.allow)
		}
	}
}

// TestAPIKeyPublicPaths checks get_public_endpoints (server-http.cpp): /health, /v1/health and the web UI's
// "/" need no key; /models, /v1/models, /props, /metrics, /api/tags, unknown paths and wrong methods do (the
// check runs before routing).
func TestAPIKeyPublicPaths(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{APIKey: "k"})
	for path, want := range map[string]int{
		"/health": 200, "/v1/health": 200, "/": 200,
		"/models": 401, "/v1/models": 401, "/props": 401, "/metrics": 401, "/api/tags": 401, "/api/version": 401, "/nope": 401, "/v1/chat/completions": 401, "/api/chat": 401,
	} {
		if st, b := ts.get(t, path); st != want {
			t.Errorf("GET %s without a key: %d %s, want %d", path, st, b, want)
		}
	}
}

// TestOllamaOptionErrorsNameTheOption: a bad entry of an Ollama request's "options" is a 400 naming it by
// its JSON path, as the other field errors are named ("Field 'stream': ..."), whether encoding/json or the
// option mapping refuses it; a value of the wrong type in Ollama's words (api.Options.FromMap's).
func TestOllamaOptionErrorsNameTheOption(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	const gen = `{"model":"stories260K.gguf","prompt":"x","options":`
	const chat = `{"model":"stories260K.gguf","messages":[{"role":"user","content":"x"}],"options":`
	for _, c := range []struct{ path, body, want string }{
		{"/api/generate", gen + `{"top_k":"x"}}`, `option "top_k" must be of type integer`},
		{"/api/chat", chat + `{"top_k":"x"}}`, `option "top_k" must be of type integer`},
		{"/api/chat", chat + `{"num_thread":4,"use_mmap":"yes"}}`, `option "use_mmap" must be of type boolean`},
		{"/api/generate", gen + `{"seed":1e10}}`, "Field 'options.seed': must be an integer in [-2147483648, 4294967295], not 1e+10"},
		{"/api/generate", gen + `{"top_k":1e400}}`, "Field 'options.top_k': number 1e400 is out of range for a 64-bit float"},
		{"/api/generate", gen + `{"seed": 1, "temperature" : -1e400}}`, "Field 'options.temperature': number -1e400 is out of range for a 64-bit float"},
		{"/api/chat", chat + `{"a\"b":1e999}}`, `Field 'options.a"b': number 1e999 is out of range for a 64-bit float`},
		{"/api/generate", gen + `{"num_predict":[1]}}`, `option "num_predict" must be of type integer`},
		{"/api/generate", gen + `"x"}`, "Field 'options': expected an object, got string"},
		{"/api/generate", `{"model":"stories260K.gguf","prompt":"x","stream":"x"}`, "Field 'stream': expected a boolean, got string"},
	} {
		resp, err := http.Post(ts.url+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Error string `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 400 || !strings.HasPrefix(v.Error, c.want) {
			t.Errorf("%s %s: %d %q (%v), want 400 %q", c.path, c.body, resp.StatusCode, v.Error, err, c.want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the server's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestOllamaOptionsNotAppliedAreLogged: the options front-ends send routinely (num_thread, num_batch, ...) and names Ollama does not know (mirostat, a misspelling) are answered
// 200, as Ollama answers them, with one line in the server's log naming them and nothing in the answer.
func TestOllamaOptionsNotAppliedAreLogged(t *testing.T) {
	for _, c := range []struct {
		path, options string
		logged        []string // "" : no log line
	}{
		{"/api/generate", `{"num_predict":2}`, nil},
		{"/api/generate", `{"num_predict":2,"num_thread":4,"num_ctx":256}`, []string{"num_thread"}},
		{"/api/chat", `{"num_predict":2,"num_batch":512,"use_mmap":true,"num_gpu":1}`, []string{"num_batch", "use_mmap", "num_gpu"}},
		{"/api/chat", `{"num_predict":2,"mirostat":2,"temprature":0.1}`, []string{"mirostat (not an option of Ollama", "temprature"}},
	} {
		var log syncBuffer
		ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
		body := `{"model":"stories260K.gguf","stream":false,"options":` + c.options
		if c.path == "/api/chat" {
			body += `,"messages":[{"role":"user","content":"x"}]}`
		} else {
			body += `,"prompt":"x"}`
		}
		st, b := ts.post(t, c.path, []byte(body))
		if st != 200 {
			t.Errorf("%s %s: %d %s, want 200", c.path, c.options, st, b)
			continue
		}
		lines := strings.Count(log.String(), "ollama: options not applied")
		if want := min(len(c.logged), 1); lines != want {
			t.Errorf("%s: %d log lines, want %d: %s", c.options, lines, want, log.String())
		}
		for _, name := range c.logged {
			if !strings.Contains(log.String(), name) {
				t.Errorf("%s: log %q does not name %q", c.options, log.String(), name)
			}
			if strings.Contains(string(b), strings.Fields(name)[0]) {
				t.Errorf("%s: the answer names %q: %s", c.options, name, b)
			}
		}
	}
}
