package serve

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestServerNPredict: the server's -n (Options.NPredict) is the token count of a request that sets none or
// sets -1, and a request's own count wins above it or below, as llama-server takes it (server-schema.cpp:530:
// task params start from params_base.n_predict; server-context.cpp:1818: the slot's limit is the request's
// unless -1) on /completion, /v1/completions and /v1/chat/completions; on the Ollama routes an absent
// num_predict is -n, a given one (-1: unlimited) wins, as a request's options override a Modelfile's.
func TestServerNPredict(t *testing.T) {
	const prompt = `"Once upon a time"`
	const chat = `"messages":[{"role":"user","content":"Once upon a time"}]`
	three, unlimited, untilFull, low := 3, -1, -2, -100
	servers := map[*int]*testServer{}
	for _, c := range []struct {
		nPredict  *int
		path      string
		body      string // the request's fields beyond the prompt
		want      int    // tokens generated; -1: more than 5 (unlimited)
		wantParam int    // /completion's generation_settings.n_predict (when path is /completion)
	}{
		{&three, "/completion", ``, 3, 3},
		{&three, "/completion", `,"n_predict":-1`, 3, -1},
		{&three, "/completion", `,"n_predict":5`, 5, 5},
		{&three, "/completion", `,"n_predict":1`, 1, 1},
		{&three, "/completion", `,"max_tokens":5`, 5, 5},
		{&three, "/v1/completions", ``, 3, 0},
		{&three, "/v1/completions", `,"max_tokens":5`, 5, 0},
		{&three, "/v1/completions", `,"max_tokens":-1`, 3, 0},
		{&three, "/v1/chat/completions", ``, 3, 0},
		{&three, "/v1/chat/completions", `,"max_tokens":5`, 5, 0},
		{&three, "/v1/chat/completions", `,"max_completion_tokens":2`, 2, 0},
		{&three, "/api/generate", ``, 3, 0},
		{&three, "/api/generate", `,"options":{"num_predict":5}`, 5, 0},
		{&three, "/api/generate", `,"options":{"num_predict":-1}`, -1, 0},
		{&three, "/api/chat", ``, 3, 0},
		{&three, "/api/chat", `,"options":{"num_predict":1}`, 1, 0},
		{nil, "/completion", ``, -1, -1},
		{&unlimited, "/v1/completions", ``, -1, 0},
		{&unlimited, "/api/generate", ``, -1, 0},
		// -n below -1: the slot limit has no budget (server-context.cpp:462), one token then the limit.
		{&untilFull, "/completion", ``, 1, -2},
		{&untilFull, "/completion", `,"n_predict":-1`, 1, -1},
		{&untilFull, "/completion", `,"n_predict":5`, 5, 5},
		{&untilFull, "/v1/completions", ``, 1, 0},
		{&untilFull, "/v1/chat/completions", `,"max_tokens":-1`, 1, 0},
		{&untilFull, "/api/generate", ``, 1, 0},
		{&untilFull, "/api/chat", `,"options":{"num_predict":5}`, 5, 0},
		{&low, "/completion", ``, 1, -100},
		{&low, "/v1/chat/completions", `,"max_tokens":4`, 4, 0},
	} {
		name := fmt.Sprintf("-n %v %s %s", c.nPredict, c.path, c.body)
		if c.nPredict != nil {
			name = fmt.Sprintf("-n %d %s %s", *c.nPredict, c.path, c.body)
		}
		ts := servers[c.nPredict]
		if ts == nil {
			ts = newTestServer(t, storiesPath(t), AdmitOptions{}, Options{NPredict: c.nPredict})
			servers[c.nPredict] = ts
		}
		var body string
		switch c.path {
		case "/v1/chat/completions":
			body = `{"temperature":0,` + chat + c.body + `}`
		case "/api/chat":
			body = `{"model":"stories260K.gguf","stream":false,` + chat + c.body + `}`
		case "/api/generate":
			body = `{"model":"stories260K.gguf","stream":false,"raw":true,"prompt":` + prompt + c.body + `}`
		default:
			body = `{"temperature":0,"ignore_eos":true,"prompt":` + prompt + c.body + `}`
		}
		st, b := ts.post(t, c.path, []byte(body))
		if st != 200 {
			t.Errorf("%s: %d %s", name, st, b)
			continue
		}
		var v struct {
			TokensPredicted *int `json:"tokens_predicted"`
			Usage           struct {
				CompletionTokens *int `json:"completion_tokens"`
			} `json:"usage"`
			EvalCount          *int `json:"eval_count"`
			GenerationSettings struct {
				NPredict int `json:"n_predict"`
			} `json:"generation_settings"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v: %s", name, err, b)
		}
		n := v.TokensPredicted
		if n == nil {
			n = v.Usage.CompletionTokens
		}
		if n == nil {
			n = v.EvalCount
		}
		switch {
		case n == nil:
			t.Errorf("%s: no token count in %s", name, b)
		case c.want == -1 && *n <= 5, c.want != -1 && *n != c.want:
			t.Errorf("%s: %d tokens, want %d (-1: more than 5)", name, *n, c.want)
		}
		if c.path == "/completion" && v.GenerationSettings.NPredict != c.wantParam {
			t.Errorf("%s: generation_settings.n_predict %d, want %d", name, v.GenerationSettings.NPredict, c.wantParam)
		}
	}
}
