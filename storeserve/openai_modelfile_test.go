package storeserve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bankml/bankml/store"
	"github.com/bankml/bankml/storeserve"
)

// TestAModelfilesSettingsApplyToTheOpenAIRoutesAsOllamaAppliesThem: Ollama's openai middleware hands a /v1
// request to the handler its /api route has, so a stored model's Modelfile applies there too: its MESSAGEs
// before the request's, its SYSTEM when the request has no system message (a chat), its PARAMETERs beneath the
// request's own fields (stop, num_predict, num_ctx, sampling) — but temperature and top_p, which the middleware
// always sets. Each answer is the one the plain model gives with the same settings spelt out in the request;
// llama-server's own /completion takes none of them.
func TestAModelfilesSettingsApplyToTheOpenAIRoutesAsOllamaAppliesThem(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	create := func(name, modelfile string) {
		t.Helper()
		if _, err := f.s.Create(context.Background(), name, strings.NewReader("FROM stories260K\n"+modelfile), store.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("brief", "SYSTEM Be brief.\nPARAMETER num_predict 5\nPARAMETER top_k 1\nMESSAGE user Hi\nMESSAGE assistant Hello\n")
	create("hot", "PARAMETER temperature 0\nPARAMETER top_p 0.5\n")
	create("small", "PARAMETER num_ctx 8\n")
	// answer is the status, and the count of tokens and the text an answer of any of the three routes carries
	// (the body for another status than 200).
	answer := func(path, body string) (int, int, string) {
		t.Helper()
		st, b := f.post(t, path, body)
		var out struct {
			Choices []struct {
				Text    string `json:"text"`
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Content   string `json:"content"`
			Predicted int    `json:"tokens_predicted"`
		}
		if st != 200 || json.Unmarshal(b, &out) != nil {
			return st, 0, string(b)
		}
		n, text := out.Usage.CompletionTokens+out.Predicted, out.Content
		if len(out.Choices) > 0 {
			text = out.Choices[0].Text + out.Choices[0].Message.Content
		}
		return st, n, text
	}
	// The greedy story's third word is the stop string of a model made for it.
	_, _, story := answer("/v1/completions", `{"model":"stories260K","prompt":"Once upon a time","max_tokens":12,"top_k":1}`)
	words := strings.Fields(story)
	if len(words) < 3 {
		t.Fatalf("the greedy story %q has fewer than 3 words", story)
	}
	create("stopper", "PARAMETER top_k 1\nPARAMETER stop "+words[2]+"\n")
	user := `{"role":"user","content":"Tell me a story."}`
	modelTurns := `{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}`
	for _, tc := range []struct {
		name, path string
		body       string // the request to the stored model
		same       string // the same request to stories260K with the model's settings spelt out; "" for want
		want       string // with same "", in the answer (a refusal)
	}{
		{name: "a chat gets the model's SYSTEM, MESSAGEs and PARAMETERs", path: "/v1/chat/completions",
			body: `{"model":"brief","messages":[` + user + `]}`,
			same: `{"model":"stories260K","messages":[{"role":"system","content":"Be brief."},` + modelTurns + `,` + user + `],"max_tokens":5,"top_k":1}`},
		{name: "a chat's own system message replaces the model's SYSTEM, its MESSAGEs still first", path: "/v1/chat/completions",
			body: `{"model":"brief","messages":[{"role":"system","content":"Be long."},` + user + `]}`,
			same: `{"model":"stories260K","messages":[` + modelTurns + `,{"role":"system","content":"Be long."},` + user + `],"max_tokens":5,"top_k":1}`},
		{name: "a request's max_tokens and top_k override the model's num_predict and top_k", path: "/v1/chat/completions",
			body: `{"model":"brief","messages":[` + user + `],"max_tokens":2,"top_k":40,"seed":3}`,
			same: `{"model":"stories260K","messages":[{"role":"system","content":"Be brief."},` + modelTurns + `,` + user + `],"max_tokens":2,"top_k":40,"seed":3}`},
		{name: "a raw completion gets the model's PARAMETERs and no SYSTEM", path: "/v1/completions",
			body: `{"model":"brief","prompt":"Once upon a time"}`,
			same: `{"model":"stories260K","prompt":"Once upon a time","max_tokens":5,"top_k":1}`},
		{name: "the model's stop ends the answer", path: "/v1/completions",
			body: `{"model":"stopper","prompt":"Once upon a time","max_tokens":12}`,
			same: `{"model":"stories260K","prompt":"Once upon a time","max_tokens":12,"top_k":1,"stop":["` + words[2] + `"]}`},
		{name: "a request's stop replaces the model's", path: "/v1/completions",
			body: `{"model":"stopper","prompt":"Once upon a time","max_tokens":12,"stop":["zzzz"]}`,
			same: `{"model":"stories260K","prompt":"Once upon a time","max_tokens":12,"top_k":1}`},
		{name: "the model's temperature and top_p do not reach a chat, as Ollama's middleware always sets them", path: "/v1/chat/completions",
			body: `{"model":"hot","messages":[` + user + `],"max_tokens":8,"seed":7}`,
			same: `{"model":"stories260K","messages":[` + user + `],"max_tokens":8,"seed":7}`},
		{name: "the model's num_ctx bounds the prompt, named as the model's", path: "/v1/completions",
			body: `{"model":"small","prompt":"Once upon a time there was a little girl named Lily"}`,
			want: "which does not fit the model's num_ctx of 8 (its Modelfile's PARAMETER)"},
		{name: "on /api/generate too the model's num_ctx is named as the model's", path: "/api/generate",
			body: `{"model":"small","prompt":"Once upon a time there was a little girl named Lily","stream":false}`,
			want: "which does not fit the model's num_ctx of 8 (its Modelfile's PARAMETER)"},
		{name: "llama-server's own /completion takes none of them", path: "/completion",
			body: `{"model":"brief","prompt":"Once upon a time","n_predict":8,"seed":5}`,
			same: `{"model":"stories260K","prompt":"Once upon a time","n_predict":8,"seed":5}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, n, got := answer(tc.path, tc.body)
			if tc.same == "" {
				if st != 400 || !strings.Contains(got, tc.want) {
					t.Fatalf("%d %s; want 400 with %q", st, got, tc.want)
				}
				return
			}
			wst, wn, want := answer(tc.path, tc.same)
			if st != 200 || wst != 200 || n != wn || got != want || n == 0 {
				t.Fatalf("the stored model answered %d %q (%d tokens); stories260K with its settings spelt out %d %q (%d)", st, got, n, wst, want, wn)
			}
		})
	}
}
