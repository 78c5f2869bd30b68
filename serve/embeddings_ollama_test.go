package serve

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/synth"
)

// TestOllamasEmbeddingRoutesTakeNumCtxAndRefuseInOllamasWords: Ollama loads its runner with num_ctx (the
// request's options over the model's PARAMETERs) and cuts an /api/embed input to min(num_ctx, the model's
// context); an input it does not truncate (truncate false, or /api/embeddings, which never truncates) is
// refused with its runner's words, "the input length exceeds the context length". llama-server's routes keep
// llama-server's words.
func TestOllamasEmbeddingRoutesTakeNumCtxAndRefuseInOllamasWords(t *testing.T) {
	path := embedServeModel(t, synth.ArchQwen3, 0)
	plain := newTestServer(t, path, AdmitOptions{}, Options{Embeddings: true, Pooling: "mean", NCtx: 2048})
	modelCtx := newTestServer(t, path, AdmitOptions{}, Options{Embeddings: true, Pooling: "mean", NCtx: 2048,
		Defaults: ModelDefaults{Options: map[string]any{"num_ctx": int64(16)}}})
	// textOf is "word " repeated until the tokenizer gives at least n tokens (specials added), and its count.
	textOf := func(n int) (string, int) {
		s := ""
		for {
			s += "word "
			if k := len(plain.Server.m.Tokenizer.Tokenize(s, true, true)); k >= n {
				return s, k
			}
		}
	}
	w40, n40 := textOf(40)
	w600, n600 := textOf(600)
	embed := func(ts *testServer, input, extra string) string {
		return `{"model":"` + ts.name + `","input":` + input + extra + `}`
	}
	q := strconv.Quote
	for _, tc := range []struct {
		name   string
		ts     *testServer
		path   string
		body   string
		status int
		want   string // in the answer
		count  [2]int // /api/embed's prompt_eval_count in [lo, hi], when hi > 0
	}{
		{name: "/api/embed cuts an input to the request's num_ctx", ts: plain, path: "/api/embed",
			body: embed(plain, q(w40), `,"options":{"num_ctx":16}`), status: 200, want: `"embeddings"`, count: [2]int{14, 16}},
		{name: "/api/embed takes num_ctx from the model's PARAMETER", ts: modelCtx, path: "/api/embed",
			body: embed(modelCtx, q(w40), ""), status: 200, want: `"embeddings"`, count: [2]int{14, 16}},
		{name: "a request's num_ctx overrides the model's", ts: modelCtx, path: "/api/embed",
			body: embed(modelCtx, q(w40), `,"options":{"num_ctx":64}`), status: 200, want: `"embeddings"`, count: [2]int{n40, n40}},
		{name: "/api/embed with truncate false refuses an input past num_ctx in Ollama's words", ts: plain, path: "/api/embed",
			body: embed(plain, `["hi",`+q(w40)+`]`, `,"truncate":false,"options":{"num_ctx":16}`), status: 400,
			want: "the input length exceeds the context length: input 1 has " + strconv.Itoa(n40) + " tokens, more than the request's num_ctx of 16"},
		{name: "/api/embed with truncate false refuses an input past the physical batch in Ollama's words", ts: plain, path: "/api/embed",
			body: embed(plain, q(w600), `,"truncate":false`), status: 400,
			want: `{"error":"the input length exceeds the context length: input 0 has ` + strconv.Itoa(n600) + ` tokens, more than the 512 tokens the server embeds at once (its physical batch, -ub)"}`},
		{name: "/api/embeddings refuses a prompt past num_ctx in Ollama's words", ts: plain, path: "/api/embeddings",
			body: `{"model":"` + plain.name + `","prompt":` + q(w40) + `,"options":{"num_ctx":16}}`, status: 400,
			want: "the input length exceeds the context length: the prompt has " + strconv.Itoa(n40) + " tokens, more than the request's num_ctx of 16"},
		{name: "/api/embeddings takes num_ctx from the model's PARAMETER", ts: modelCtx, path: "/api/embeddings",
			body: `{"model":"` + modelCtx.name + `","prompt":` + q(w40) + `}`, status: 400,
			want: "the input length exceeds the context length: the prompt has " + strconv.Itoa(n40) + " tokens, more than the model's num_ctx of 16 (its Modelfile's PARAMETER)"},
		{name: "/api/embeddings refuses a prompt past the physical batch in Ollama's words", ts: plain, path: "/api/embeddings",
			body: `{"model":"` + plain.name + `","prompt":` + q(w600) + `}`, status: 400,
			want: "the input length exceeds the context length: the prompt has " + strconv.Itoa(n600) + " tokens"},
		{name: "/api/embeddings within num_ctx embeds", ts: plain, path: "/api/embeddings",
			body: `{"model":"` + plain.name + `","prompt":` + q(w40) + `,"options":{"num_ctx":64}}`, status: 200, want: `"embedding":[`},
		{name: "/api/embed refuses a num_ctx of the wrong type in Ollama's words", ts: plain, path: "/api/embed",
			body: embed(plain, q("hi"), `,"options":{"num_ctx":"many"}`), status: 400, want: `option \"num_ctx\" must be of type integer`},
		{name: "/v1/embeddings keeps llama-server's words", ts: plain, path: "/v1/embeddings",
			body: `{"input":` + q(w600) + `}`, status: 400, want: "input (" + strconv.Itoa(n600) + " tokens) is too large to process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := tc.ts.post(t, tc.path, []byte(tc.body))
			if st != tc.status || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%d %.400s; want %d with %q", st, body, tc.status, tc.want)
			}
			if tc.count[1] == 0 {
				return
			}
			var got struct {
				PromptEvalCount int `json:"prompt_eval_count"`
			}
			if err := json.Unmarshal(body, &got); err != nil || got.PromptEvalCount < tc.count[0] || got.PromptEvalCount > tc.count[1] {
				t.Fatalf("prompt_eval_count %d (%v); want %d to %d", got.PromptEvalCount, err, tc.count[0], tc.count[1])
			}
		})
	}
}
