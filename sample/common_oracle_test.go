package sample

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/grammar"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/tokenizer"
)

// The common_sampler oracle: bankml's Chain against llama.cpp's own
// common_sampler (libllama-common's common_sampler_init, _sample and _accept
// through the grammar shim), which holds all of llama-server's sampling glue:
// the grammar checked after the draw and the candidates masked and drawn
// from again when it refuses it, lazy grammars and their triggers, the
// generation prompt fed to the grammar and to the reasoning budget, the
// reasoning budget forcing the end of a thinking block and standing a lazy
// grammar aside while it counts. Both run on the reference's logits, step by
// step; every token and the candidates of every step must be identical.

// commonSamplerParams describes p to the reference's common_sampler_init.
func commonSamplerParams(p Params) (reference.CommonSamplerParams, error) {
	rp, err := refParams(p)
	if err != nil {
		return rp, err
	}
	rp.Grammar, rp.GrammarType, rp.GrammarLazy = p.Grammar, int(p.GrammarType), p.GrammarLazy
	for _, t := range p.GrammarTriggers {
		rp.GrammarTriggers = append(rp.GrammarTriggers, reference.GrammarTrigger{Type: int(t.Type), Value: t.Value, Token: t.Token})
	}
	rp.PreservedTokens, rp.GenerationPrompt = p.PreservedTokens, p.GenerationPrompt
	rp.ReasoningBudgetTokens, rp.ReasoningBudgetStart = p.ReasoningBudgetTokens, p.ReasoningBudgetStart
	rp.ReasoningBudgetEnd, rp.ReasoningBudgetForced, rp.ReasoningControl = p.ReasoningBudgetEnd, p.ReasoningBudgetForced, p.ReasoningControl
	return rp, nil
}

type grammarCase struct {
	name    string
	grammar string
	p       Params
}

func grammarCases(t *testing.T) []grammarCase {
	jsonMode, err := grammar.FromJSONSchema([]byte(`{"type": "object"}`), true)
	if err != nil {
		t.Fatal(err)
	}
	person, err := grammar.FromJSONSchema([]byte(`{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120}, "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}}, "required": ["name", "age"], "additionalProperties": false}`), true)
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(p *Params)) Params {
		p := DefaultParams()
		p.Samplers = DefaultSamplers()
		f(&p)
		return p
	}
	greedy := with(func(p *Params) { p.Temp = 0 })
	seeded := with(func(p *Params) { p.Seed = 1234 })
	hot := with(func(p *Params) { p.Seed = 99; p.Temp, p.TopK, p.TopP, p.MinP = 1.5, 0, 1, 0 })
	penalised := with(func(p *Params) { p.Seed = 7; p.PenaltyRepeat, p.DryMultiplier, p.XTCProbability = 1.3, 0.8, 0.5 })
	list := "root ::= item+\nitem ::= \"- \" [a-z ]{1,20} \"\\n\"\n"
	arith := "root ::= expr\nexpr ::= term ([-+*/] term)*\nterm ::= [0-9]+ | \"(\" expr \")\"\n"
	var out []grammarCase
	for _, g := range []struct{ name, text string }{{"JSON mode", jsonMode}, {"schema", person}, {"user list", list}, {"user arithmetic", arith}} {
		for _, p := range []struct {
			name string
			p    Params
		}{{"greedy", greedy}, {"seeded", seeded}, {"hot", hot}, {"penalties, DRY, XTC", penalised}} {
			q := p.p
			q.Grammar = g.text
			q.GrammarType = GrammarUser
			if g.name == "JSON mode" || g.name == "schema" {
				q.GrammarType = GrammarOutputFormat
			}
			out = append(out, grammarCase{name: g.name + ", " + p.name, grammar: g.text, p: q})
		}
	}
	return out
}

type commonCase struct {
	name string
	p    Params
}

// reasoningCases are the cases with a thinking block (the synthetic Qwen3
// model's vocabulary has <think>, </think> and <tool_call> tokens).
func reasoningCases(t *testing.T, m *reference.Model) []commonCase {
	one := func(s string) int32 {
		ids, err := m.Tokenize(s, false, true)
		if err != nil || len(ids) != 1 {
			t.Fatalf("%q: %v %v", s, ids, err)
		}
		return ids[0]
	}
	many := func(s string) []int32 {
		ids, err := m.Tokenize(s, false, true)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	think, endThink, toolCall := one("<think>"), one("</think>"), one("<tool_call>")
	forced := append(many("Time is up."), many("\n</think>\n\n")...)
	base := func(f func(p *Params)) Params {
		p := DefaultParams()
		p.Seed = 17
		p.GenerationPrompt = "<|im_start|>assistant\n<think>\n"
		p.ReasoningBudgetStart = []int32{think}
		p.ReasoningBudgetEnd = [][]int32{{endThink}, many("\n</think>\n\n")}
		p.ReasoningBudgetForced = forced
		f(&p)
		return p
	}
	tool := "root ::= <tool_call> \"\\n{\\\"name\\\": \\\"\" [a-z_]{1,12} \"\\\"}\\n\" </tool_call>\n"
	return []commonCase{
		{"budget 6 forces the end of thinking", base(func(p *Params) { p.ReasoningBudgetTokens = 6 })},
		{"budget 0 forces at once", base(func(p *Params) { p.ReasoningBudgetTokens = 0 })},
		{"lazy tool grammar stands aside while thinking", base(func(p *Params) {
			p.ReasoningBudgetTokens = 5
			p.Grammar, p.GrammarType, p.GrammarLazy = tool, GrammarToolCalls, true
			p.GrammarTriggers = []GrammarTrigger{{Type: TriggerToken, Token: toolCall, Value: "<tool_call>"}}
			p.PreservedTokens = []int32{toolCall, think, endThink}
			p.LogitBias = []LogitBias{{Token: toolCall, Bias: 12}}
		})},
		{"lazy grammar, unlimited budget, natural end", base(func(p *Params) {
			p.ReasoningBudgetTokens = -1
			p.Grammar, p.GrammarType, p.GrammarLazy = tool, GrammarToolCalls, true
			p.GrammarTriggers = []GrammarTrigger{{Type: TriggerPattern, Value: `[\s\S]*?(<tool_call>)[\s\S]*`}}
			p.LogitBias = []LogitBias{{Token: endThink, Bias: 9}, {Token: toolCall, Bias: 6}}
		})},
		{"output-format grammar fed the generation prompt", base(func(p *Params) {
			p.Grammar, p.GrammarType = "root ::= \"<|im_start|>assistant\\n<think>\\n\" [a-z ]{0,30} \"\\n</think>\\n\\n{}\"\n", GrammarOutputFormat
			p.ReasoningBudgetStart, p.ReasoningBudgetEnd = nil, nil
		})},
	}
}

// TestChainMatchesCommonSampler is the common_sampler oracle (see above).
func TestChainMatchesCommonSampler(t *testing.T) {
	l := loadRef(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	shim, err := l.LoadGrammarShim(ctx)
	if err != nil {
		testdata.Absent(t, "grammar shim: %v", err)
	}
	steps := 40
	if os.Getenv("BANKML_ORACLE_HEAVY") != "" {
		steps = 160
	}
	total, same, tokens := 0, 0, 0
	for _, om := range oracleModels(t) {
		f, err := gguf.Open(om.path)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := tokenizer.FromGGUF(f)
		if err != nil {
			t.Fatal(err)
		}
		gv := grammar.NewVocab(tok)
		var cases []commonCase
		for _, gc := range grammarCases(t) {
			cases = append(cases, commonCase{gc.name, gc.p})
		}
		if om.name == "qwen3-synthetic" {
			cases = append(cases, reasoningCases(t, om.m)...)
		}
		for _, c := range cases {
			t.Run(om.name+"/"+c.name, func(t *testing.T) {
				total++
				ours, err := New(c.p, Model{NVocab: om.m.NVocab(), SuppressTokens: om.suppress, Vocab: om.vocab, Grammar: gv})
				if err != nil {
					t.Fatal(err)
				}
				rp, err := commonSamplerParams(c.p)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := shim.NewCommonSampler(om.m, rp)
				if err != nil {
					t.Fatal(err)
				}
				defer ref.Free()
				prompt, err := om.m.Tokenize(om.prompt, true, true)
				if err != nil {
					t.Fatal(err)
				}
				sess, err := om.m.NewSession(len(prompt)+steps+1, 1)
				if err != nil {
					t.Fatal(err)
				}
				defer sess.Close()
				ours.Reset()
				ref.Reset()
				for _, p := range prompt {
					ours.Accept(p)
					if err := ref.Accept(p, false); err != nil {
						t.Fatal(err)
					}
				}
				logits, err := sess.Decode(prompt)
				if err != nil {
					t.Fatal(err)
				}
				var got []int32
				for step := range steps {
					want := ref.Sample(sess)
					tk, err := ours.Sample(logits)
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					if tk != want {
						t.Fatalf("step %d: token %d %q, the reference %d %q (after %q)", step, tk, tok.TokenToPiece(tk, true), want,
							tok.TokenToPiece(want, true), tok.Detokenize(got, false, true))
					}
					rc, rsel := ref.Candidates()
					cands, sel := ours.Candidates(false)
					if err := sameCandidates(cands, rc); err != nil || sel != rsel {
						t.Fatalf("step %d: %v (selected %d, the reference %d)", step, err, sel, rsel)
					}
					got = append(got, tk)
					werr := ref.Accept(tk, true)
					ours.Accept(tk)
					if (werr == nil) != (ours.Err() == nil) {
						t.Fatalf("step %d: accept %v, the reference %v", step, ours.Err(), werr)
					}
					if tok.IsEOG(tk) || werr != nil {
						break
					}
					if logits, err = sess.Decode([]int32{tk}); err != nil {
						t.Fatal(err)
					}
				}
				tokens += len(got)
				t.Logf("%d tokens, reasoning %d: %q", len(got), ours.Reasoning(), tok.Detokenize(got, false, true))
				same++
			})
		}
	}
	t.Logf("common_sampler: %d of %d cases token-identical to llama.cpp's common_sampler, candidates bit-identical at every step (%d tokens)", same, total, tokens)
	if same != total {
		t.Fatalf("%d of %d cases differ", total-same, total)
	}
}
