package clients

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/bankml/bankml/serve"
)

// ollamaJS is the official Ollama JavaScript client the test installs.
const ollamaJS = "ollama@0.6.4"

// TestOllamaJSReadsErrorsAndNames runs ollama-js against bankml serve on stories260K and checks the edges
// Ollama's clients meet: the model's file stem and name:latest accepted as its name, and every refusal read
// by ollama-js as a status and a message string (Ollama's {"error": "..."}): an unknown model (404), an
// Ollama route bankml does not serve (404), a missing API key (401), think on a template without thinking
// (Ollama's 400), a num_ctx past the server's context (clamped to it, answered) and keep_alive 0 (400: the
// model stays loaded for the server's lifetime).
func TestOllamaJSReadsErrorsAndNames(t *testing.T) {
	script := installNpm(t, ollamaJS, "ollama_js_client.mjs")
	path := stories(t)
	open := startTestServer(t, path, serve.Options{})
	keyed := startTestServer(t, path, serve.Options{APIKey: "sk-test"})
	msgs := []map[string]string{{"role": "user", "content": "Hi"}}
	type want struct {
		status int    // 0: success
		text   string // a piece of the error message, or of the JSON result
	}
	cases := []struct {
		name string
		host string
		call string
		args map[string]any
		want want
	}{
		{"the file stem names the model", open.URL, "show", map[string]any{"model": "stories260K"}, want{0, `"family":"llama"`}},
		{"the file stem with :latest names the model", open.URL, "show", map[string]any{"model": "stories260K:latest"}, want{0, `"family":"llama"`}},
		{"the file name with :latest names the model", open.URL, "show", map[string]any{"model": "stories260K.gguf:latest"}, want{0, `"family":"llama"`}},
		{"a generation by the file stem", open.URL, "generate", map[string]any{"model": "stories260K", "prompt": "Once upon a time", "stream": false,
			"options": map[string]any{"num_predict": 4, "temperature": 0}}, want{0, `"done":true`}},
		{"another tag is another model: 404", open.URL, "show", map[string]any{"model": "stories260K:v2"}, want{404, "model 'stories260K:v2' not found"}},
		{"an unknown model: 404", open.URL, "generate", map[string]any{"model": "llama3", "prompt": "x", "stream": false}, want{404, "model 'llama3' not found"}},
		{"an Ollama route bankml does not serve: 404 naming it", open.URL, "pull", map[string]any{"model": "llama3", "stream": false}, want{404, "POST /api/pull: bankml serve does not serve this Ollama route"}},
		{"no API key: 401", keyed.URL, "list", nil, want{401, "Invalid API Key"}},
		{"think on a template without thinking: Ollama's 400", open.URL, "chat", map[string]any{"model": "stories260K.gguf", "messages": msgs, "think": true, "stream": false},
			want{400, `"stories260K.gguf" does not support thinking`}},
		{"think false on a template without thinking is answered", open.URL, "chat", map[string]any{"model": "stories260K.gguf", "messages": msgs, "think": false, "stream": false,
			"options": map[string]any{"num_predict": 2}}, want{0, `"done":true`}},
		{"a think level on a template without thinking: Ollama's 400", open.URL, "generate", map[string]any{"model": "stories260K.gguf", "prompt": "x", "think": "high", "stream": false},
			want{400, `think value "high" is not supported for this model`}},
		{"num_ctx past the server's context is clamped to it, as Ollama clamps it", open.URL, "generate", map[string]any{"model": "stories260K.gguf", "prompt": "x", "stream": false,
			"options": map[string]any{"num_ctx": 1 << 20, "num_predict": 2}}, want{0, `"done":true`}},
		{"num_ctx within the server's context is honoured", open.URL, "generate", map[string]any{"model": "stories260K.gguf", "prompt": "Once upon a time", "stream": false,
			"options": map[string]any{"num_ctx": 16, "num_predict": 64, "temperature": 0}}, want{0, `"done_reason":"length"`}},
		{"keep_alive 0 (unload): 400, the model stays loaded", open.URL, "generate", map[string]any{"model": "stories260K.gguf", "keep_alive": 0}, want{400, "keep_alive"}},
	}
	// one node process per server, its cases in order
	type result struct {
		OK         bool            `json:"ok"`
		Result     json.RawMessage `json:"result"`
		StatusCode int             `json:"status_code"`
		Error      any             `json:"error"`
		ErrorType  string          `json:"error_type"`
	}
	results := make([]result, len(cases))
	for _, host := range []string{open.URL, keyed.URL} {
		var idx []int
		var calls []map[string]any
		for i, c := range cases {
			if c.host == host {
				idx = append(idx, i)
				calls = append(calls, map[string]any{"call": c.call, "args": c.args})
			}
		}
		in, _ := json.Marshal(map[string]any{"host": host, "cases": calls})
		cmd := exec.Command("node", script)
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
		}
		var res []result
		if err := json.Unmarshal(out, &res); err != nil || len(res) != len(idx) {
			t.Fatalf("script output %q: %v", out, err)
		}
		for j, i := range idx {
			results[i] = res[j]
		}
	}
	passed := 0
	for i, c := range cases {
		r := results[i]
		msg, _ := r.Error.(string)
		switch {
		case c.want.status == 0 && (!r.OK || !strings.Contains(string(r.Result), c.want.text)):
			t.Errorf("%s: %+v, want a result holding %s", c.name, r, c.want.text)
		case c.want.status != 0 && (r.OK || r.StatusCode != c.want.status || r.ErrorType != "string" || !strings.Contains(msg, c.want.text)):
			t.Errorf("%s: %+v, want ollama-js's error %d with a message string holding %q", c.name, r, c.want.status, c.want.text)
		default:
			passed++
		}
	}
	t.Logf("ollama-js (%s): %d of %d", ollamaJS, passed, len(cases))
}
