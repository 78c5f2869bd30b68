package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/engine"
)

// ollamaContextAnswer is what these tests read of a non-streamed /api/generate answer.
type ollamaContextAnswer struct {
	Response        string `json:"response"`
	Context         []int  `json:"context"`
	PromptEvalCount int    `json:"prompt_eval_count"`
	EvalCount       int    `json:"eval_count"`
	DebugInfo       *struct {
		RenderedTemplate string `json:"rendered_template"`
	} `json:"_debug_info"`
}

// generateWithContext posts a non-streamed /api/generate (greedy, num_predict 6) of prompt with ctx as its
// context (none when nil) and decodes the answer.
func generateWithContext(t *testing.T, ts *testServer, model, prompt string, ctx []int, debug bool) ollamaContextAnswer {
	t.Helper()
	body := map[string]any{"model": model, "prompt": prompt, "stream": false,
		"options": map[string]any{"num_predict": 6, "temperature": 0}}
	if ctx != nil {
		body["context"] = ctx
	}
	if debug {
		body["_debug_render_only"] = true
	}
	js, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	st, b := ts.post(t, "/api/generate", js)
	if st != 200 {
		t.Fatalf("/api/generate %s: %d %s", js, st, b)
	}
	var a ollamaContextAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return a
}

// TestGenerateHonoursARequestsContextAsOllama: generate(prompt A) gives context C; generate(prompt B, context
// C) evaluates exactly the tokens Ollama v0.17.4 would. Ollama's rule (server/routes.go GenerateHandler, not
// raw): prompt = r.Detokenize(C) + the rendered prompt of B (the model's MESSAGEs left out), where
// Detokenize is llm/server.go llamaServer.Detokenize (each id's llama_token_to_piece with special true,
// concatenated); the runner then tokenizes that one text with add_special true and parse_special true
// (runner/llamarunner/runner.go Server.inputs: Tokenize(part, i == 0, true)), so BOS, when the vocabulary
// adds it, comes first, before the context's text, and nowhere else. The answer's context is that prompt and
// the generated text tokenized again without BOS (GenerateHandler's r.Tokenize(prompt+sb.String())).
func TestGenerateHonoursARequestsContextAsOllama(t *testing.T) {
	for _, tc := range []struct {
		name, path string
	}{
		{name: "a model without a chat template (SentencePiece, BOS added) continues from the context's text", path: storiesPath(t)},
		{name: "a model with a chat template (Qwen3's, no BOS) puts the context's text before the rendered prompt", path: qwen3Model(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, tc.path, AdmitOptions{}, Options{})
			model := ts.name // the served name: the file's base name
			tok := ts.m.Tokenizer
			first := generateWithContext(t, ts, model, "Once upon a time", nil, false)
			if len(first.Context) == 0 {
				t.Fatalf("the first answer has no context: %+v", first)
			}
			// The sequence Ollama evaluates: BOS (if added) + tokenize(detokenize(C) + rendered(B)).
			var ctxText strings.Builder
			for _, id := range first.Context {
				ctxText.Write(tok.TokenToPiece(int32(id), true))
			}
			rendered := generateWithContext(t, ts, model, "And then", nil, true).DebugInfo.RenderedTemplate
			want := tok.Tokenize(ctxText.String()+rendered, true, true)
			t.Logf("context %v (text %q) + rendered %q -> evaluated %v", first.Context, ctxText.String(), rendered, want)
			if tok.AddBOS() && (want[0] != tok.BOS() || slices.Contains(want[1:], tok.BOS())) {
				t.Fatalf("BOS %d not first and only there: %v", tok.BOS(), want)
			}

			shown := generateWithContext(t, ts, model, "And then", first.Context, true).DebugInfo.RenderedTemplate
			if shown != ctxText.String()+rendered {
				t.Fatalf("_debug_render_only with context shows %q, want the context's text then the prompt %q", shown, ctxText.String()+rendered)
			}

			// The same sampling on the engine, prompted with that token sequence.
			set, ok := (&ollamaAPI{s: ts.Server}).settings(httptest.NewRecorder(), map[string]any{"num_predict": 6.0, "temperature": 0.0}) // as JSON decodes them
			if !ok {
				t.Fatal("settings refused")
			}
			ref, err := ts.eng.Generate(context.Background(), engine.Request{Prompt: engine.Prompt{Tokens: want},
				Sampling: set.Sampling, NPredict: set.NPredict, Slot: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}

			second := generateWithContext(t, ts, model, "And then", first.Context, false)
			if second.PromptEvalCount != len(want) || second.EvalCount != len(ref.Tokens) {
				t.Fatalf("prompt_eval_count %d, eval_count %d; want %d prompt tokens and %d generated", second.PromptEvalCount, second.EvalCount, len(want), len(ref.Tokens))
			}
			wantCtx := tok.Tokenize(ctxText.String()+rendered+ref.Text, false, true)
			got := make([]int32, len(second.Context))
			for i, v := range second.Context {
				got[i] = int32(v)
			}
			if !slices.Equal(got, wantCtx) {
				t.Fatalf("context %v, want %v (the engine's answer %q to the tokens Ollama evaluates)", got, wantCtx, ref.Text)
			}
		})
	}
}

// TestGenerateContextMessagesAndBadInput: a request's context is checked as Ollama reads it, and a continued
// conversation leaves out the model's MESSAGEs (GenerateHandler appends m.Messages only when req.Context is
// nil).
func TestGenerateContextMessagesAndBadInput(t *testing.T) {
	stories := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	qwen := newTestServer(t, qwen3Model(t), AdmitOptions{}, Options{Defaults: ModelDefaults{Messages: []api.Message{
		{Role: "user", Content: "MESSAGE-QUESTION"}, {Role: "assistant", Content: "MESSAGE-ANSWER"}}}})
	qwenName := qwen.name
	nv := stories.m.Tokenizer.NVocab()
	for _, tc := range []struct {
		name   string
		ts     *testServer
		body   string
		status int
		want   string // part of the answer
		absent string // not in the answer
	}{
		{name: "a negative id is refused naming the context element",
			ts: stories, body: `{"model": "stories260K", "prompt": "and then", "context": [1, -1], "stream": false}`,
			status: 400, want: fmt.Sprintf("context[1]: token id -1 outside the vocabulary [0, %d)", nv)},
		{name: "an id past the vocabulary is refused naming the context element",
			ts: stories, body: fmt.Sprintf(`{"model": "stories260K", "prompt": "and then", "context": [%d], "stream": false}`, nv),
			status: 400, want: fmt.Sprintf("context[0]: token id %d outside the vocabulary [0, %d)", nv, nv)},
		{name: "a context that is not an array is refused naming the field",
			ts: stories, body: `{"model": "stories260K", "prompt": "and then", "context": "1 2 3", "stream": false}`,
			status: 400, want: "Field 'context'"},
		{name: "a fractional id is refused naming the field",
			ts: stories, body: `{"model": "stories260K", "prompt": "and then", "context": [1.5], "stream": false}`,
			status: 400, want: "Field 'context'"},
		{name: "raw mode with a context is Ollama's 400",
			ts: stories, body: `{"model": "stories260K", "prompt": "and then", "raw": true, "context": [1], "stream": false}`,
			status: 400, want: "raw mode does not support template, system, or context"},
		{name: "raw mode with an empty context is answered, as Ollama checks the length",
			ts: stories, body: `{"model": "stories260K", "prompt": "and then", "raw": true, "context": [], "stream": false, "options": {"num_predict": 1}}`,
			status: 200, want: `"done":true`},
		{name: "a request without a prompt is Ollama's load answer, its context unread",
			ts: stories, body: `{"model": "stories260K", "context": [-1]}`,
			status: 200, want: `"done_reason":"load"`},
		{name: "without a context the model's MESSAGEs are rendered",
			ts: qwen, body: `{"model": "` + qwenName + `", "prompt": "and then", "_debug_render_only": true}`,
			status: 200, want: "MESSAGE-QUESTION"},
		{name: "with an empty context the model's MESSAGEs are left out",
			ts: qwen, body: `{"model": "` + qwenName + `", "prompt": "and then", "context": [], "_debug_render_only": true}`,
			status: 200, want: "and then", absent: "MESSAGE-QUESTION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := tc.ts.post(t, "/api/generate", []byte(tc.body))
			if st != tc.status || !strings.Contains(string(b), tc.want) || (tc.absent != "" && strings.Contains(string(b), tc.absent)) {
				t.Fatalf("%d %s; want %d with %q and without %q", st, b, tc.status, tc.want, tc.absent)
			}
		})
	}
}
