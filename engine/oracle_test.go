package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/sample"
)

// The engine oracle: a request through Engine.Generate gives the tokens, the
// finish reason and the counts that the reference gives for it when run as a
// llama-server slot runs it: the reference's own llama_context (a Session
// holding the slot's cache), its own sampler chain built as
// common_sampler_init builds it (reference.NewCommonSampler), every prompt
// token accepted first (server_slot::init_sampler), the draw fed back, and
// process_token's stop rules. The text is checked against the specification:
// the reference's pieces concatenated, cut before the first stop string.

// refGenerate runs req on the reference session s as a llama-server slot
// runs it (reftest.Generate), keeping kept cached tokens.
func refGenerate(t testing.TB, tm *testModel, s *reference.Session, prompt []int32, kept int, req Request) reftest.Answer {
	t.Helper()
	a, err := reftest.Generate(tm.ref, s, reftest.Turn{Prompt: prompt, Kept: kept, Sampling: req.Sampling,
		NPredict: req.NPredict, Stop: req.Stop, IgnoreEOS: req.IgnoreEOS})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// oracleCase is one request of the oracle.
type oracleCase struct {
	name   string
	prompt string
	req    Request
	// stopFrom, when > 0, makes the case's stop string the reference's text
	// of generated tokens stopFrom-1 and stopFrom (a string that spans two
	// tokens), found by a first run without stops.
	stopFrom int
	// eosBias, when non-zero, is a logit bias on the model's EOS token, to
	// reach an end-of-generation token on models that rarely sample one.
	eosBias float32
}

func withParams(f func(p *sample.Params)) sample.Params {
	p := sample.DefaultParams()
	f(&p)
	return p
}

func oracleCases() []oracleCase {
	req := func(p sample.Params, n int) Request {
		return Request{Sampling: p, NPredict: n, CachePrompt: true, Slot: -1}
	}
	return []oracleCase{
		{name: "greedy", prompt: "Once upon a time", req: req(greedyParams(), 48)},
		{name: "defaults-seed42", prompt: "The little dog was sad because", req: req(withParams(func(p *sample.Params) { p.Seed = 42 }), 48)},
		{name: "dist-temp1.3", prompt: "Lily and Tom went to the park.", req: req(withParams(func(p *sample.Params) {
			p.Seed, p.Temp, p.TopK, p.TopP, p.MinP = 7, 1.3, 0, 1, 0
		}), 40)},
		{name: "penalties-topk5", prompt: "Sun", req: req(withParams(func(p *sample.Params) {
			p.Seed, p.TopK, p.PenaltyRepeat, p.PenaltyFreq, p.PenaltyPresent = 3, 5, 1.3, 0.5, 0.4
		}), 40)},
		{name: "dry-xtc", prompt: "Mom said: \"Do not touch the hot stove.\" But Ben", req: req(withParams(func(p *sample.Params) {
			p.Seed, p.DryMultiplier, p.XTCProbability, p.XTCThreshold, p.Temp = 5, 0.8, 0.5, 0.1, 1
		}), 40)},
		{name: "ignore-eos", prompt: "The end.", req: func() Request {
			r := req(withParams(func(p *sample.Params) { p.Seed = 11 }), 64)
			r.IgnoreEOS = true
			return r
		}()},
		{name: "until-eog-or-context", prompt: "Once upon a time, there was a", req: req(withParams(func(p *sample.Params) { p.Seed = 9 }), -1)},
		{name: "stop-spanning-tokens", prompt: "One day, a boy named Tim found", req: req(greedyParams(), 48), stopFrom: 6},
		{name: "n_predict-0", prompt: "Sun", req: req(greedyParams(), 0)},
		{name: "eos-forced", prompt: "Sun", req: req(greedyParams(), 16), eosBias: 100},
		{name: "eos-biased", prompt: "Once upon a time", req: req(withParams(func(p *sample.Params) { p.Seed = 21 }), -1), eosBias: 20},
		{name: "n_probs-3", prompt: "Tom had a red", req: req(withParams(func(p *sample.Params) { p.Seed, p.NProbs = 13, 3 }), 24)},
	}
}

// TestGenerateMatchesReference runs every case on stories260K and on the
// synthetic qwen3 model, each in a fresh engine and a fresh reference
// session, then a second turn reusing the first one's cache.
func TestGenerateMatchesReference(t *testing.T) {
	const nCtx = 256
	models := []*testModel{stories(t).withRef(t), qwen3(t).withRef(t)}
	pass, total := 0, 0
	for _, tm := range models {
		for _, c := range oracleCases() {
			t.Run(tm.name+"/"+c.name, func(t *testing.T) {
				total++
				e := newEngine(t, tm, Options{NCtx: nCtx, ServerPrefixReuse: true})
				s, err := tm.ref.NewSession(nCtx, 1)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				prompt, err := tm.ref.Tokenize(c.prompt, true, true)
				if err != nil {
					t.Fatal(err)
				}
				req := c.req
				req.Prompt = Prompt{Text: c.prompt}
				if c.eosBias != 0 {
					req.Sampling.LogitBias = []sample.LogitBias{{Token: tm.tok.EOS(), Bias: c.eosBias}}
				}
				if c.stopFrom > 0 {
					first := refGenerate(t, tm, s, prompt, 0, req)
					if len(first.Tokens) <= c.stopFrom {
						t.Skipf("the reference generated %d tokens, fewer than the stop case needs", len(first.Tokens))
					}
					w, err := tm.ref.Detokenize(first.Tokens[c.stopFrom-1:c.stopFrom+1], false, false)
					if err != nil {
						t.Fatal(err)
					}
					req.Stop = []string{"never-generated", strings.TrimSpace(string(w))}
				}
				want := refGenerate(t, tm, s, prompt, 0, req)
				var streamed strings.Builder
				res, err := e.Generate(context.Background(), req, func(tk Token) error {
					streamed.WriteString(tk.Text)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				check(t, res, want, prompt, 0)
				t.Logf("%d prompt tokens, %d generated, finish %q, stopping word %q", len(prompt), len(res.Tokens), res.FinishReason, res.StoppingWord)
				if len(req.Stop) > 0 && want.Finish == "stop" && !slices.Contains(req.Stop, res.StoppingWord) {
					t.Errorf("stopping word %q, not one of %q", res.StoppingWord, req.Stop)
				}
				checkProbs(t, res, req)
				if want.Finish == "stop" && res.Unsent != "" {
					t.Errorf("unsent text %q after a stop", res.Unsent)
				}
				if got := streamed.String() + res.Unsent; got != res.Text {
					t.Errorf("streamed %q + unsent %q != text %q", streamed.String(), res.Unsent, res.Text)
				}
				if t.Failed() {
					return
				}
				// A second turn: the first prompt and answer, then more text,
				// reusing the cache as llama-server does (ServerPrefixReuse):
				// the reference keeps model.ReusablePrefix of what it holds.
				next := append(slices.Clone(prompt), res.Tokens...)
				next = append(next, tm.tok.Tokenize(" And then", false, false)...)
				if len(next) >= nCtx-8 {
					next = next[:nCtx/2]
				}
				req.Prompt = Prompt{Tokens: next}
				req.Stop = nil
				kept := model.ReusablePrefix(s.Tokens(), next)
				res2, err := e.Generate(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				want2 := refGenerate(t, tm, s, next, kept, req)
				check(t, res2, want2, next, kept)
				t.Logf("second turn: %d prompt tokens, %d cached, %d generated, finish %q", len(next), kept, len(res2.Tokens), res2.FinishReason)
				if !t.Failed() {
					pass++
				}
			})
		}
	}
	t.Logf("engine oracle: %d of %d cases (two turns each) equal to the reference", pass, total)
}

func check(t *testing.T, res Result, want reftest.Answer, prompt []int32, cached int) {
	t.Helper()
	if !slices.Equal(res.Tokens, want.Tokens) {
		t.Errorf("tokens %v\nreference %v", res.Tokens, want.Tokens)
	}
	if res.Text != want.Text {
		t.Errorf("text %q, want %q", res.Text, want.Text)
	}
	if res.FinishReason != want.Finish {
		t.Errorf("finish %q, want %q", res.FinishReason, want.Finish)
	}
	if res.PromptTokens != len(prompt) || res.Timings.PromptN != len(prompt)-cached || res.Timings.CacheN != cached {
		t.Errorf("prompt %d (want %d), prompt_n %d cache_n %d (cached %d)", res.PromptTokens, len(prompt), res.Timings.PromptN, res.Timings.CacheN, cached)
	}
	if res.Timings.PredictedN != len(res.Tokens) {
		t.Errorf("predicted_n %d for %d tokens", res.Timings.PredictedN, len(res.Tokens))
	}
}

// checkProbs: with n_probs, one entry per token that was not Pending (none
// of these are for the synthetic cases' tokens, whose pieces the test does
// not know to be complete, so only the count bound and the ids are checked),
// each for its token, with n_probs candidates at most.
func checkProbs(t *testing.T, res Result, req Request) {
	t.Helper()
	if req.Sampling.NProbs == 0 {
		if res.Probs != nil {
			t.Errorf("probs without n_probs")
		}
		return
	}
	if len(res.Probs) == 0 || len(res.Probs) > len(res.Tokens) {
		t.Fatalf("%d probs for %d tokens", len(res.Probs), len(res.Tokens))
	}
	j := 0
	for _, p := range res.Probs {
		for j < len(res.Tokens) && res.Tokens[j] != p.Token {
			j++
		}
		if j == len(res.Tokens) {
			t.Fatalf("probs %+v do not follow the tokens %v", res.Probs, res.Tokens)
		}
		if len(p.Top) == 0 || len(p.Top) > int(req.Sampling.NProbs) || p.P <= 0 || p.P > 1 {
			t.Errorf("probs for token %d: P %v, %d top entries", p.Token, p.P, len(p.Top))
		}
		j++
	}
}

// TestRepeatedRequest sends the same chat request twice to one slot, with
// penalties on (the case serve reported). With llama-server's reuse
// (ServerPrefixReuse) the second evaluation is the prompt's last token alone
// after 84 cached ones, and the answer is the reference's for that same split
// — which differs from the first answer from the fourth token on, in the
// reference too: the logits depend on the micro-batch. By default the prompt
// is evaluated afresh and the second answer equals the first.
func TestRepeatedRequest(t *testing.T) {
	tm := stories(t).withRef(t)
	const nCtx = 256
	f, err := gguf.Open(tm.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tmpl, err := chat.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	in, err := chat.ParseRequest([]byte(`{"messages":[{"role":"system","content":"You tell stories."},{"role":"user","content":"Tell me about a cat."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := tmpl.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := tm.ref.Tokenize(rendered.Prompt, true, true)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Prompt: Prompt{Segments: rendered.Segments}, NPredict: 24, CachePrompt: true, Slot: -1,
		Sampling: withParams(func(p *sample.Params) {
			p.Seed, p.PenaltyPresent, p.PenaltyFreq, p.PenaltyRepeat = 3, 0.6, 0.4, 1.2
		})}
	for _, server := range []bool{true, false} {
		t.Run(fmt.Sprintf("ServerPrefixReuse=%v", server), func(t *testing.T) {
			e := newEngine(t, tm, Options{NCtx: nCtx, ServerPrefixReuse: server})
			s, err := tm.ref.NewSession(nCtx, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var first []int32
			for turn := range 2 {
				kept := 0
				if server {
					kept = model.ReusablePrefix(s.Tokens(), prompt)
				}
				res, err := e.Generate(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				check(t, res, refGenerate(t, tm, s, prompt, kept, req), prompt, kept)
				if turn == 0 {
					first = res.Tokens
					continue
				}
				same := slices.Equal(res.Tokens, first)
				t.Logf("turn 2: %d prompt tokens, %d cached, same answer as turn 1: %v", len(prompt), kept, same)
				if !server && !same {
					t.Errorf("the repeated request gave %v, the first %v", res.Tokens, first)
				}
			}
		})
	}
}

// TestSeededOraclesAgainstAutoVariant runs the greedy and seeded
// completion oracle against the CPU variant ggml loads on this CPU as well
// as haswell (reftest.AgainstAutoVariant).
func TestSeededOraclesAgainstAutoVariant(t *testing.T) {
	reftest.AgainstAutoVariant(t, "^TestGenerateMatchesReference$")
}
