package engine

import (
	"context"
	"testing"

	"github.com/bankml/bankml/grammar"
	"github.com/bankml/bankml/sample"
)

// TestGrammarAnswersMatchReference runs requests with grammars through
// Engine.Generate and through the reference as a llama-server slot runs
// them (reftest.Generate with llama.cpp's own common_sampler): the same
// tokens (the end token included), text, finish reason and counts, greedy
// and seeded, under JSON mode, a JSON schema, user grammars, lazy grammars
// with a trigger pattern or word, a generation prompt fed to an
// output-format grammar, the end-of-generation token pushed up so that it
// is drawn wherever the grammar allows it, and (on Qwen3's vocabulary) a
// thinking block cut by the reasoning budget before a lazy tool-call
// grammar whose trigger token is preserved (shown in the text).
func TestGrammarAnswersMatchReference(t *testing.T) {
	const nCtx = 256
	jsonMode, err := grammar.FromJSONSchema([]byte(`{"type": "object"}`), true)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := grammar.FromJSONSchema([]byte(`{"type": "object", "properties": {"answer": {"type": "string", "maxLength": 16}, "n": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["answer", "n"], "additionalProperties": false}`), true)
	if err != nil {
		t.Fatal(err)
	}
	prefixed := "root ::= \"Answer: \" [a-z ]{1,24} \".\"\n"
	type gcase struct {
		name    string
		prompt  string
		p       sample.Params
		n       int
		eosBias float32
	}
	with := func(g string, typ sample.GrammarType, f func(p *sample.Params)) sample.Params {
		p := sample.DefaultParams()
		p.Grammar, p.GrammarType = g, typ
		f(&p)
		return p
	}
	cases := []gcase{
		{"JSON mode greedy", "Once upon a time", with(jsonMode, sample.GrammarOutputFormat, func(p *sample.Params) { p.Temp = 0 }), 32, 0},
		{"JSON mode seeded", "Once upon a time", with(jsonMode, sample.GrammarOutputFormat, func(p *sample.Params) { p.Seed = 5 }), 32, 0},
		{"schema seeded, EOS pushed up", "Tell me", with(schema, sample.GrammarOutputFormat, func(p *sample.Params) { p.Seed = 8 }), 48, 8},
		{"user list, EOS pushed up", "The cat", with("root ::= (\"- \" [a-z]+ \"\\n\")+\n", sample.GrammarUser, func(p *sample.Params) { p.Seed = 3; p.Temp = 1.2 }), 40, 6},
		{"user grammar ignores the generation prompt", "Sun", with(prefixed, sample.GrammarUser, func(p *sample.Params) { p.Seed = 4; p.GenerationPrompt = "Answer: " }), 24, 0},
		{"output format fed the generation prompt", "Sun", with(prefixed, sample.GrammarOutputFormat, func(p *sample.Params) { p.Seed = 4; p.GenerationPrompt = "Answer: " }), 24, 0},
		{"lazy, trigger pattern", "Once upon a time", with("root ::= \"a\" [a-z ]* \".\"\n", sample.GrammarToolCalls, func(p *sample.Params) {
			p.Seed = 6
			p.GrammarLazy = true
			p.GrammarTriggers = []sample.GrammarTrigger{{Type: sample.TriggerPattern, Value: `[\s\S]*?(a)[\s\S]*`}}
		}), 40, 0},
		{"lazy, trigger word", "Once upon a time", with("root ::= \"the\" [a-z ]* \".\"\n", sample.GrammarToolCalls, func(p *sample.Params) {
			p.Seed = 2
			p.GrammarLazy = true
			p.GrammarTriggers = []sample.GrammarTrigger{{Type: sample.TriggerWord, Value: "the"}}
		}), 40, 0},
		{"thinking budget, lazy tool call", "<|im_start|>user\nWeather?<|im_end|>\n", with("root ::= <tool_call> \"\\n{\\\"name\\\": \\\"\" [a-z_]{1,12} \"\\\"}\\n\" </tool_call>\n", sample.GrammarToolCalls, func(p *sample.Params) {
			p.Seed, p.GrammarLazy, p.ReasoningBudgetTokens = 12, true, -2 // filled in by thinkingParams
		}), 48, 0},
	}
	pass, total := 0, 0
	for _, tm := range []*testModel{stories(t).withRef(t), qwen3(t).withRef(t)} {
		for _, c := range cases {
			if c.p.ReasoningBudgetTokens == -2 && tm.name != "qwen3-tiny-Q1_0" {
				continue // needs Qwen3's <think> and <tool_call> tokens
			}
			t.Run(tm.name+"/"+c.name, func(t *testing.T) {
				total++
				e := newEngine(t, tm, Options{NCtx: nCtx})
				s, err := tm.ref.NewSession(nCtx, 1)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				prompt, err := tm.ref.Tokenize(c.prompt, true, true)
				if err != nil {
					t.Fatal(err)
				}
				if c.p.ReasoningBudgetTokens == -2 {
					c.p = thinkingParams(t, tm, c.p)
				}
				req := Request{Prompt: Prompt{Text: c.prompt}, Sampling: c.p, NPredict: c.n, CachePrompt: true, Slot: -1}
				if c.eosBias != 0 {
					req.Sampling.LogitBias = []sample.LogitBias{{Token: tm.tok.EOS(), Bias: c.eosBias}}
				}
				want := refGenerate(t, tm, s, prompt, 0, req)
				res, err := e.Generate(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				check(t, res, want, prompt, 0)
				t.Logf("%d tokens, finish %q: %q", len(res.Tokens), res.FinishReason, res.Text)
				if !t.Failed() {
					pass++
				}
			})
		}
	}
	t.Logf("grammar answers: %d of %d requests equal to the reference (tokens, text, finish reason, counts)", pass, total)
}

// thinkingParams completes p for a Qwen3 thinking turn as llama-server sets
// it for a thinking template with tools: the generation prompt opening a
// <think> block, a reasoning budget of 5 tokens forcing "\n</think>\n\n",
// the lazy grammar triggered by the <tool_call> token (preserved, and pushed
// up by a logit bias so that the synthetic model draws it).
func thinkingParams(t *testing.T, tm *testModel, p sample.Params) sample.Params {
	one := func(s string) int32 {
		ids := tm.tok.Tokenize(s, false, true)
		if len(ids) != 1 {
			t.Fatalf("%q is %d tokens", s, len(ids))
		}
		return ids[0]
	}
	think, endThink, toolCall := one("<think>"), one("</think>"), one("<tool_call>")
	end := tm.tok.Tokenize("\n</think>\n\n", false, true)
	p.GenerationPrompt = "<|im_start|>assistant\n<think>\n"
	p.ReasoningBudgetTokens = 5
	p.ReasoningBudgetStart = []int32{think}
	p.ReasoningBudgetEnd = [][]int32{{endThink}, end}
	p.ReasoningBudgetForced = end
	p.GrammarTriggers = []sample.GrammarTrigger{{Type: sample.TriggerToken, Token: toolCall, Value: "<tool_call>"}}
	p.PreservedTokens = []int32{toolCall, think, endThink}
	p.LogitBias = []sample.LogitBias{{Token: toolCall, Bias: 12}}
	return p
}
