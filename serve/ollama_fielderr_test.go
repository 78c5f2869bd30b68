package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestOllamaOptionErrorsNameTheOption: a bad entry of an Ollama request's "options" is a 400 naming it by
// its JSON path, as the other field errors are named ("Field 'stream': ..."), whether encoding/json or the
// option mapping refuses it.
func TestOllamaOptionErrorsNameTheOption(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	const gen = `{"model":"stories260K.gguf","prompt":"x","options":`
	const chat = `{"model":"stories260K.gguf","messages":[{"role":"user","content":"x"}],"options":`
	for _, c := range []struct{ path, body, want string }{
		{"/api/generate", gen + `{"top_k":"x"}}`, "Field 'options.top_k': must be an integer, not a string"},
		{"/api/chat", chat + `{"top_k":"x"}}`, "Field 'options.top_k': must be an integer, not a string"},
		{"/api/generate", gen + `{"top_k":1e400}}`, "Field 'options.top_k': number 1e400 is out of range for a 64-bit float"},
		{"/api/generate", gen + `{"seed": 1, "temperature" : -1e400}}`, "Field 'options.temperature': number -1e400 is out of range for a 64-bit float"},
		{"/api/chat", chat + `{"a\"b":1e999}}`, `Field 'options.a"b': number 1e999 is out of range for a 64-bit float`},
		{"/api/generate", gen + `{"num_predict":[1]}}`, "Field 'options.num_predict': must be an integer, not an array"},
		{"/api/generate", gen + `{"mirostat":1}}`, "Field 'options.mirostat': mirostat is not reproduced exactly by bankml; use 0"},
		{"/api/generate", gen + `{"num_ctx":100000000}}`, "Field 'options.num_ctx': 100000000 exceeds the server's context"},
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
