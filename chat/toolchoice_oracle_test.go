package chat_test

import (
	"strings"
	"testing"

	"github.com/bankml/bankml/chat"
)

// TestForcedToolChoiceMatchesReference compares, on Qwen3's template, the requests of a reviewer's report
// ("forcing a tool call does not force one": one get_weather tool, chat_template_kwargs.enable_thinking false, a
// logit_bias on <tool_call>) with common_chat_templates_apply: the prompt, parser, grammar, grammar_lazy,
// triggers and preserved tokens are the reference's. For tool_choice "required" the grammar is not lazy, and it
// is the autoparser's: the reasoning block, optional content up to the call marker "<tool_call>\n", then one
// or more calls, so text before the call is the reference's too (engine's
// TestForcedToolChoiceAnswersMatchReference runs it through both samplers). A named function, which the
// reference reads as "auto", is compared with the reference's "required" over that one tool, which is what
// bankml makes of it.
func TestForcedToolChoiceMatchesReference(t *testing.T) {
	ref := oracle(t)
	f := loadFixtures(t)["qwen3"]
	const (
		msgs    = `"messages": [{"role": "user", "content": "What is the weather in Paris?"}]`
		tools   = `"tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get weather", "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]`
		noThink = `"chat_template_kwargs": {"enable_thinking": false}`
		bias    = `"logit_bias": [[151657, 100]]`
		named   = `"tool_choice": {"type": "function", "function": {"name": "get_weather"}}`
		req     = `"tool_choice": "required"`
	)
	body := func(fields ...string) []byte {
		return []byte(`{` + strings.Join(append([]string{msgs, tools}, fields...), ", ") + `}`)
	}
	cases := []struct {
		name       string
		bank, refd []byte // bankml's request, and the reference's equivalent (nil: the same)
	}{
		{name: "required with thinking off is the reference's grammar, not lazy", bank: body(req, noThink)},
		{name: "required with thinking off and the marker biased up is the reference's grammar", bank: body(req, noThink, bias)},
		{name: "required with thinking on is the reference's grammar", bank: body(req)},
		{name: "a named function with thinking off is the reference's required over that tool", bank: body(named, noThink), refd: body(req, noThink)},
		{name: "a named function with the marker biased up is the reference's required over that tool", bank: body(named, noThink, bias), refd: body(req, noThink, bias)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refd := c.refd
			if refd == nil {
				refd = c.bank
			}
			a, err := ref.Apply(f.path, refd, -1)
			if err != nil {
				t.Fatal(err)
			}
			if a.Error != "" {
				t.Fatalf("the reference refused: %s", a.Error)
			}
			in, err := chat.ParseRequest(c.bank)
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.tmpl.Apply(in)
			if err != nil {
				t.Fatal(err)
			}
			if d := compareParams(t, a, res); len(d) > 0 {
				t.Fatalf("%s", strings.Join(d, "\n"))
			}
			if res.Grammar == "" || res.GrammarLazy || len(res.Triggers) > 0 {
				t.Errorf("grammar %d bytes, lazy %v, triggers %v: want a grammar from the first token", len(res.Grammar), res.GrammarLazy, res.Triggers)
			}
		})
	}
}
