package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/sample"
)

// TestQuantizedKVAnswersMatchReference: requests through an engine whose
// slots hold q8_0 K and V caches (-ctk q8_0 -ctv q8_0) give the tokens the
// reference gives with type_k = type_v = q8_0 (a Session run as a
// llama-server slot, reftest.Generate), greedy and seeded, each answer
// running past 256 cells, on a llama-shaped model (synthetic, llama's
// SentencePiece vocabulary) and on qwen3 (synthetic, the real Qwen3
// vocabulary); a second turn reuses the cache. q4_0 K and V run the same
// cases for qwen3.
func TestQuantizedKVAnswersMatchReference(t *testing.T) {
	const nCtx = 512
	q8 := model.CacheTypes{K: gguf.Q8_0, V: gguf.Q8_0}
	q4 := model.CacheTypes{K: gguf.Q4_0, V: gguf.Q4_0}
	type run struct {
		tm    *testModel
		types model.CacheTypes
	}
	llama := embedModel(t, synth.ArchLlama, gguf.Q8_0, "llama-spm", 121).withRef(t)
	qw := qwen3(t).withRef(t)
	runs := []run{{llama, q8}, {qw, q8}, {qw, q4}}
	long := strings.Repeat("The cat sat on the mat and looked at the bird in the tree. ", 30)
	cases := []struct {
		name, prompt string
		req          Request
	}{
		{"greedy", "Once upon a time", Request{Sampling: greedyParams(), NPredict: 280, IgnoreEOS: true}},
		{"seed42", "The little dog was sad because", Request{Sampling: withParams(func(p *sample.Params) { p.Seed = 42 }), NPredict: 280, IgnoreEOS: true}},
		{"dist-temp1.3-long-prompt", long, Request{Sampling: withParams(func(p *sample.Params) {
			p.Seed, p.Temp, p.TopK, p.TopP, p.MinP = 7, 1.3, 0, 1, 0
		}), NPredict: 40, IgnoreEOS: true}},
	}
	pass, total := 0, 0
	for _, r := range runs {
		for _, c := range cases {
			t.Run(r.tm.name+"/"+r.types.K.String()+"/"+c.name, func(t *testing.T) {
				total++
				e := newEngine(t, r.tm, Options{NCtx: nCtx, CacheReuse: CacheReuseServer, CacheTypes: r.types})
				s, err := r.tm.ref.NewSessionTypes(nCtx, 1, int32(r.types.K), int32(r.types.V))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				prompt, err := r.tm.ref.Tokenize(c.prompt, true, true)
				if err != nil {
					t.Fatal(err)
				}
				req := c.req
				req.CachePrompt, req.Slot = true, -1
				req.Prompt = Prompt{Text: c.prompt}
				want := refGenerate(t, r.tm, s, prompt, 0, req)
				res, err := e.Generate(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				check(t, res, want, prompt, 0)
				if cells := len(prompt) + len(res.Tokens); cells <= 256 {
					t.Errorf("the answer ends at %d cells, not past 256", cells)
				}
				// A second turn reusing the cache as llama-server does.
				next := append(append([]int32(nil), prompt...), res.Tokens...)
				next = append(next[:min(len(next), nCtx-64)], r.tm.tok.Tokenize(" And then", false, false)...)
				req.Prompt = Prompt{Tokens: next}
				req.NPredict = 16
				kept := model.ReusablePrefix(s.Tokens(), next)
				res2, err := e.Generate(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				check(t, res2, refGenerate(t, r.tm, s, next, kept, req), next, kept)
				t.Logf("%d prompt tokens, %d generated; second turn %d prompt tokens, %d cached, %d generated",
					len(prompt), len(res.Tokens), len(next), kept, len(res2.Tokens))
				if !t.Failed() {
					pass++
				}
			})
		}
	}
	t.Logf("quantized KV engine oracle: %d of %d requests (two turns each) token-identical to the reference", pass, total)
}
