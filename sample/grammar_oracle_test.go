package sample

import (
	"context"
	"math"
	"os"
	"testing"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/grammar"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/tokenizer"
)

// The grammar answers oracle: bankml's Chain with a grammar and the
// reference's chain (reference.NewCommonSampler) with its grammar sampler
// (llama_sampler_init_grammar through the grammar shim), joined as
// common_sampler_sample joins them: the chain draws; the grammar checks the
// token drawn alone; when it refuses it, the candidates are set afresh, the
// grammar masks them and the chain draws again. Both run on the logits the
// reference computes, step by step, until an end-of-generation token or the
// step budget; every token (the end token included) and the final candidate
// list of every step must be identical.

// refGrammarDraw is common_sampler_sample on the reference's samplers.
func refGrammarDraw(ref *reference.SamplerChain, rg *reference.RefGrammar, logits []float32, all []int32) (int32, reference.Applied, bool, error) {
	ra, err := ref.Apply(logits)
	if err != nil {
		return 0, ra, false, err
	}
	id := ra.Cands[ra.Selected].ID
	if rg.Apply([]int32{id})[0] {
		return id, ra, false, nil
	}
	masked := append([]float32(nil), logits...)
	for i, ok := range rg.Apply(all) {
		if !ok {
			masked[i] = float32(math.Inf(-1))
		}
	}
	ra, err = ref.Apply(masked)
	if err != nil {
		return 0, ra, true, err
	}
	return ra.Cands[ra.Selected].ID, ra, true, nil
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

// TestGrammarAnswersMatchTheReference is the grammar answers oracle (see
// above).
func TestGrammarAnswersMatchTheReference(t *testing.T) {
	l := loadRef(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	shim, err := l.LoadGrammarShim(ctx)
	if err != nil {
		testdata.Absent(t, "grammar shim: %v", err)
	}
	steps := 48
	if os.Getenv("BANKML_ORACLE_HEAVY") != "" {
		steps = 160
	}
	ms := oracleModels(t)
	total, same, tokens, masked := 0, 0, 0, 0
	for _, om := range ms {
		f, err := gguf.Open(om.path)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := tokenizer.FromGGUF(f)
		if err != nil {
			t.Fatal(err)
		}
		gv := grammar.NewVocab(tok)
		all := make([]int32, om.m.NVocab())
		for i := range all {
			all[i] = int32(i)
		}
		for _, c := range grammarCases(t) {
			t.Run(om.name+"/"+c.name, func(t *testing.T) {
				total++
				ours, err := New(c.p, Model{NVocab: om.m.NVocab(), SuppressTokens: om.suppress, Vocab: om.vocab, Grammar: gv})
				if err != nil {
					t.Fatal(err)
				}
				ref, err := refChain(om, c.p)
				if err != nil {
					t.Fatal(err)
				}
				defer ref.Free()
				rg, msg := shim.NewGrammar(om.m, c.grammar, "root", false, nil, nil)
				if rg == nil {
					t.Fatalf("the reference refuses the grammar: %s", msg)
				}
				defer rg.Free()
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
					ref.Accept(p)
				}
				logits, err := sess.Decode(prompt)
				if err != nil {
					t.Fatal(err)
				}
				var got []int32
				for step := range steps {
					want, ra, wasMasked, err := refGrammarDraw(ref, rg, logits, all)
					if err != nil {
						t.Fatal(err)
					}
					tk, err := ours.Sample(logits)
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					if tk != want {
						t.Fatalf("step %d: token %d %q, the reference %d %q (after %v)", step, tk, tok.TokenToPiece(tk, true), want, tok.TokenToPiece(want, true), got)
					}
					cands, sel := ours.Candidates(false)
					if err := sameCandidates(cands, ra.Cands); err != nil || sel != ra.Selected {
						t.Fatalf("step %d: %v (selected %d, the reference %d)", step, err, sel, ra.Selected)
					}
					if wasMasked {
						masked++
					}
					got = append(got, tk)
					ours.Accept(tk)
					ref.Accept(tk)
					if !tok.IsEOG(tk) {
						if err := rg.Accept(tk); err != nil {
							t.Fatalf("step %d: the reference's grammar refuses token %d: %v", step, tk, err)
						}
					}
					if tok.IsEOG(tk) {
						break
					}
					if logits, err = sess.Decode([]int32{tk}); err != nil {
						t.Fatal(err)
					}
				}
				tokens += len(got)
				t.Logf("%d tokens: %q", len(got), tok.Detokenize(got, false, false))
				same++
			})
		}
	}
	t.Logf("grammar answers: %d of %d cases token-identical to the reference's chain with its grammar sampler (%d tokens, %d drawn again after the grammar refused the first draw)",
		same, total, tokens, masked)
	if same != total {
		t.Fatalf("%d of %d cases differ", total-same, total)
	}
}
