package grammar

import (
	"fmt"
	"testing"
)

// TestTriggerPatternsMatchTheReference compares the trigger matcher with
// llama_grammar_trigger_pattern::find run on libstdc++'s std::regex: the
// same start position (or none) for every pattern and input, and the same
// patterns refused.
func TestTriggerPatternsMatchTheReference(t *testing.T) {
	_, shim := shimFor(t)
	patterns := []string{
		`[\s\S]*?(<tool_call>)[\s\S]*`,
		`<tool_call>`,
		`^\s*(\{"name")[\s\S]*$`,
		`^$`,
		`>>>(?!all)`,
		`^\s+to$`,
		`^<\|channel\|>(?:commentary|analysis)\s+to=functions$`,
		`<\|start\|>assistant(\s+to)`,
		`<\|start\|>assistant(<\|channel\|>(?:commentary|analysis)\s+to)`,
		`[\s\S]*?(\[TOOL_CALLS\]|<function=)[\s\S]*`,
		`(a)|(b)`,
		`(x)?(y)`,
		`a.c`,
		`\bword\b`,
		`(ab)\1`,
		`[^a-z]+`,
		`\d{2,3}`,
		`a{2}?`,
		`(?=abc)a`,
		`(a*)*b`,
		`x*?y`,
		`[\w.-]+@`,
		`\x41\u0042`,
		`(`,
		`a{3,1}`,
		`[z-a]`,
		`\`,
		`*a`,
	}
	inputs := []string{
		"", "plain text", "I will call <tool_call>\n{\"name\": \"f\"}", "<tool_call>", "  {\"name\": 1}", "{\"name\"",
		">>>all", ">>>f", ">>>", " \t to", "<|channel|>commentary to=functions", "<|start|>assistant to",
		"<|start|>assistant<|channel|>analysis  to", "[TOOL_CALLS]", "text <function=f>", "b", "xy", "y", "abc", "a\nc",
		"a\rc", "a\xc3\xa9c", "a word here", "words", "abab", "ABC 123", "12345", "aaa", "aaab", "xxxy", "me.x@y", "AB",
		"日本語 <tool_call>", "\x00<tool_call>",
	}
	same, total := 0, 0
	for _, p := range patterns {
		tp, gerr := newTriggerPattern(p)
		for _, in := range inputs {
			total++
			wantStart, wantFound, werr := shim.TriggerFind(p, in)
			if werr != nil || gerr != nil {
				if (werr == nil) != (gerr == nil) {
					t.Errorf("pattern %q: error %v, the reference %v", p, gerr, werr)
					continue
				}
				same++
				continue
			}
			start, found := tp.find(in)
			if found != wantFound || found && start != wantStart {
				t.Errorf("pattern %q on %q: %v at %d, the reference %v at %d", p, in, found, start, wantFound, wantStart)
				continue
			}
			same++
		}
	}
	t.Logf("triggers: %d of %d pattern finds equal to std::regex's", same, total)
}

// TestLazyGrammarsMatchTheReference feeds texts to lazy grammars (each kind
// of trigger llama-server passes: tokens, words, patterns, full patterns) and
// compares the masks before every token and the accepts with the
// reference's llama_sampler_init_grammar_lazy_patterns.
func TestLazyGrammarsMatchTheReference(t *testing.T) {
	lib, shim := shimFor(t)
	var st maskStats
	for _, vm := range vocabs(t, lib) {
		type lazyCase struct {
			name     string
			grammar  string
			patterns []string
			tokens   []string // token texts, tokenized with parse_special (one token each)
			inputs   []string
		}
		var cases []lazyCase
		if vm.name == "qwen3" {
			tool := "root ::= <tool_call> \"\\n{\\\"name\\\": \\\"\" [a-z_]+ \"\\\"}\\n\" </tool_call>\n"
			cases = append(cases,
				lazyCase{"trigger token", tool, nil, []string{"<tool_call>"},
					[]string{"Let me check.<tool_call>\n{\"name\": \"get_weather\"}\n</tool_call>", "no tool call at all", "<tool_call>\n{\"name\": \"X\"}"}},
				lazyCase{"trigger pattern", "root ::= \"<tool_call>\" .*\n", []string{`[\s\S]*?(<tool_call>)[\s\S]*`}, nil,
					[]string{"Sure <tool_call>{}", "<tool_call>", "nothing"}},
				lazyCase{"full pattern", "root ::= \"{\\\"name\\\"\" [^}]* \"}\"\n", []string{`^\s*(\{"name")[\s\S]*$`}, nil,
					[]string{"  {\"name\": \"f\"}", "{\"name\"", "x {\"name\": 1}"}},
			)
		} else {
			cases = append(cases,
				lazyCase{"trigger word", "root ::= \"Once\" [a-z ]+ \".\"\n", []string{RegexEscape("Once")}, nil,
					[]string{"The end. Once upon a time.", "Once there was.", "once more."}},
				lazyCase{"trigger pattern mid-token", "root ::= \"pon\" [a-z ]* \".\"\n", []string{`[\s\S]*?(pon)[\s\S]*`}, nil,
					[]string{"Once upon a time.", "upon.", "up on."}},
			)
		}
		for _, c := range cases {
			t.Run(vm.name+"/"+c.name, func(t *testing.T) {
				var toks []int32
				for _, w := range c.tokens {
					ids := vm.tok.Tokenize(w, false, true)
					if len(ids) != 1 {
						t.Fatalf("%q is %d tokens", w, len(ids))
					}
					toks = append(toks, ids[0])
				}
				for _, in := range c.inputs {
					g, err := New(c.grammar, vm.v, Options{Lazy: true, TriggerPatterns: c.patterns, TriggerTokens: toks})
					if err != nil {
						t.Fatal(err)
					}
					rg, msg := shim.NewGrammar(vm.ref, c.grammar, "root", true, c.patterns, toks)
					if rg == nil {
						t.Fatalf("the reference refuses the grammar: %s", msg)
					}
					n := maskRun(t, vm, g, rg, vm.tok.Tokenize(in, false, true), &st)
					t.Logf("%q: %d tokens taken, awaiting %v", in, n, g.Awaiting())
					rg.Free()
				}
			})
		}
	}
	t.Logf("lazy: %s", fmt.Sprintf("%d of %d masks equal to the reference's lazy grammar sampler's (%d accepts, %d rejection points)", st.masks, st.masks, st.accepts, st.rejections))
}
