package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/sample"
)

// TestForcedToolChoiceAnswersMatchReference runs a reviewer's report ("forcing a tool call does not force
// one") through Engine.Generate and through the reference's own sampler (llama.cpp's common_sampler, as a
// llama-server slot runs it), with the grammar, generation prompt and preserved tokens package chat makes for
// the request (equal to common_chat_templates_apply's: chat's TestForcedToolChoiceMatchesReference): Qwen3's
// template, one get_weather tool, enable_thinking false, tool_choice "required" or a named function (bankml's
// required over that function), with and without a logit bias of +100 on <tool_call>. Both sides draw the same
// tokens. The grammar llama.cpp's autoparser makes for "required" admits content before the call: anything
// that does not contain the call marker "<tool_call>\n" (Optional(Content(Until(marker))) before the calls),
// and the <tool_call> token followed by another <tool_call> is not that marker; so with the bias the reference
// too answers "<tool_call><tool_call>…" up to max_tokens, with no call, and without it free text.
func TestForcedToolChoiceAnswersMatchReference(t *testing.T) {
	tm := qwen3(t).withRef(t)
	const nCtx = 512
	f, err := gguf.Open(tm.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tmpl, err := chat.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	toolCall := tm.tok.Tokenize("<tool_call>", false, true)
	if len(toolCall) != 1 {
		t.Fatalf("<tool_call> is %d tokens", len(toolCall))
	}
	const tools = `"tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get weather", "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]`
	cases := []struct {
		name, choice string
		bias         bool
		repeats      bool // the answer is the <tool_call> token over and over
	}{
		{name: "required with the marker biased up repeats the marker as content on both sides", choice: `"required"`, bias: true, repeats: true},
		{name: "required without a bias answers the same free text on both sides", choice: `"required"`},
		{name: "a named function with the marker biased up repeats the marker as content on both sides", choice: `{"type": "function", "function": {"name": "get_weather"}}`, bias: true, repeats: true},
		{name: "a named function without a bias answers the same free text on both sides", choice: `{"type": "function", "function": {"name": "get_weather"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := chat.ParseRequest([]byte(`{"messages": [{"role": "user", "content": "What is the weather in Paris?"}], ` + tools +
				`, "tool_choice": ` + c.choice + `, "chat_template_kwargs": {"enable_thinking": false}}`))
			if err != nil {
				t.Fatal(err)
			}
			res, err := tmpl.Apply(in)
			if err != nil {
				t.Fatal(err)
			}
			if res.Grammar == "" || res.GrammarLazy {
				t.Fatalf("grammar %d bytes, lazy %v: want a grammar from the first token", len(res.Grammar), res.GrammarLazy)
			}
			prompt, err := tm.ref.Tokenize(res.Prompt, true, true)
			if err != nil {
				t.Fatal(err)
			}
			p := sample.DefaultParams()
			p.Seed = 1
			p.Grammar, p.GrammarType, p.GenerationPrompt = res.Grammar, sample.GrammarToolCalls, res.GenerationPrompt
			for _, w := range res.PreservedTokens {
				if ids := tm.tok.Tokenize(w, false, true); len(ids) == 1 {
					p.PreservedTokens = append(p.PreservedTokens, ids[0])
				}
			}
			if c.bias {
				p.LogitBias = []sample.LogitBias{{Token: toolCall[0], Bias: 100}}
			}
			req := Request{Prompt: Prompt{Segments: res.Segments}, Sampling: p, NPredict: 32, CachePrompt: true, Slot: -1}
			e := newEngine(t, tm, Options{NCtx: nCtx})
			s, err := tm.ref.NewSession(nCtx, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			want := refGenerate(t, tm, s, prompt, 0, req)
			got, err := e.Generate(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			check(t, got, want, prompt, 0)
			if got.FinishReason != "length" {
				t.Errorf("finish %q: want length (the grammar never lets the answer end before a call)", got.FinishReason)
			}
			if n := strings.Count(want.Text, "<tool_call>"); c.repeats != (n == len(want.Tokens)) {
				t.Errorf("the reference's answer %q has %d <tool_call> in %d tokens", want.Text, n, len(want.Tokens))
			}
			t.Logf("%d tokens, finish %q: %.80q", len(got.Tokens), got.FinishReason, got.Text)
		})
	}
}
