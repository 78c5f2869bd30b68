package grammar

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestParseMatchesTheReference parses every grammar of the oracles, and the
// refused ones, with Parse and with llama_grammar_parser::parse: the same
// symbol ids and rules element by element, or the same error message.
func TestParseMatchesTheReference(t *testing.T) {
	lib, shim := shimFor(t)
	type tc struct{ name, text string }
	var cases []tc
	named := llamaGrammars(t)
	for _, n := range slices.Sorted(maps.Keys(named)) {
		cases = append(cases, tc{"grammars/" + n + ".gbnf", named[n]})
	}
	for _, g := range ownGrammars {
		cases = append(cases, tc{g.name, g.text})
	}
	for _, g := range badGrammars {
		cases = append(cases, tc{"refused: " + g.name, g.text})
	}
	total, same := 0, 0
	for _, vm := range vocabs(t, lib) {
		for _, c := range cases {
			t.Run(vm.name+"/"+c.name, func(t *testing.T) {
				total++
				want, stderr, err := shim.ParseGrammar(vm.ref, c.text)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Parse(c.text, vm.tok)
				if want == nil {
					const prefix = "parse: error parsing grammar: "
					// parse prints "parse: error parsing grammar: <what>\n\n<text>\n"
					src := c.text
					if k := strings.IndexByte(src, 0); k >= 0 {
						src = src[:k]
					}
					i := strings.Index(stderr, prefix)
					j := strings.LastIndex(stderr, "\n\n"+src+"\n")
					if i < 0 || j < i+len(prefix) {
						t.Fatalf("reference stderr %q has no parse error", stderr)
					}
					msg := stderr[i+len(prefix) : j]
					var pe *ParseError
					if !errors.As(err, &pe) || pe.Msg != msg {
						t.Fatalf("error %v, want the reference's %q", err, msg)
					}
					same++
					return
				}
				if err != nil {
					t.Fatalf("Parse: %v; the reference parses it", err)
				}
				if !maps.Equal(got.Symbols, want.Symbols) {
					t.Fatalf("symbols %v, want %v", got.Symbols, want.Symbols)
				}
				if len(got.Rules) != len(want.Rules) {
					t.Fatalf("%d rules, want %d", len(got.Rules), len(want.Rules))
				}
				for i, r := range got.Rules {
					w := want.Rules[i]
					if len(r) != len(w) {
						t.Fatalf("rule %d: %d elements, want %d", i, len(r), len(w))
					}
					for k, e := range r {
						if uint32(e.Type) != w[k][0] || e.Value != w[k][1] {
							t.Fatalf("rule %d element %d: %v, want %v", i, k, e, w[k])
						}
					}
				}
				same++
			})
		}
	}
	t.Logf("parse: %d of %d grammars (rules or error message) equal to llama_grammar_parser's", same, total)
}

// TestNewRefusesAsTheReference builds every refused grammar with New and with
// llama_sampler_init_grammar: both refuse, New with the reference's message
// (the parser's, or the init's log line: no rules, no root, left recursion).
func TestNewRefusesAsTheReference(t *testing.T) {
	lib, shim := shimFor(t)
	vm := vocabs(t, lib)[1]
	same := 0
	for _, c := range badGrammars {
		t.Run(c.name, func(t *testing.T) {
			rg, msg := shim.NewGrammar(vm.ref, c.text, "root", false, nil, nil)
			if rg != nil {
				rg.Free()
				if c.text == "" {
					// an empty grammar makes a sampler that constrains nothing
					same++
					return
				}
				t.Fatalf("the reference accepts %q", c.text)
			}
			_, err := New(c.text, vm.v, Options{})
			var pe *ParseError
			var ie *InitError
			switch {
			case errors.As(err, &pe):
				if !strings.Contains(msg, "error parsing grammar: "+pe.Msg) {
					t.Fatalf("error %q; the reference said %q", pe.Msg, msg)
				}
			case errors.As(err, &ie):
				if !strings.Contains(msg, ie.Msg+"\n") {
					t.Fatalf("error %q; the reference said %q", ie.Msg, msg)
				}
			default:
				t.Fatalf("New: %v; the reference said %q", err, msg)
			}
			same++
		})
	}
	t.Logf("refusals: %d of %d refused grammars refused with the reference's message", same, len(badGrammars))
}
