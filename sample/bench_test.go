package sample

import (
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/internal/reference"
)

// BenchmarkChainQwen3Vocab times one Sample+Accept on a row of 151,936
// logits (Qwen3's vocabulary) with llama-server's defaults and with top-k off
// (the full-vocabulary top-p path), bankml's chain next to the reference's
// llama_sampler chain built the same way (…/ref) in the same process;
// and TokenProbs for n_probs 5.
func BenchmarkChainQwen3Vocab(b *testing.B) {
	var qwen *oracleModel
	for _, om := range oracleModels(b) {
		if om.m.NVocab() == 151936 {
			qwen = om
		}
	}
	n := qwen.m.NVocab()
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, n)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	noTopK := DefaultParams()
	noTopK.TopK = 0
	for _, bc := range []struct {
		name string
		p    Params
	}{{"defaults", DefaultParams()}, {"top_k=0", noTopK}} {
		p := bc.p
		p.Seed = 1
		b.Run(bc.name, func(b *testing.B) {
			c, err := New(p, Model{NVocab: n})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				tok, err := c.Sample(logits)
				if err != nil {
					b.Fatal(err)
				}
				c.Accept(tok)
			}
		})
		b.Run(bc.name+"/ref", func(b *testing.B) {
			c, err := refChain(&oracleModel{m: qwen.m}, p)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Free()
			var a reference.Applied
			for b.Loop() {
				if a, err = c.Apply(logits); err != nil {
					b.Fatal(err)
				}
				c.Accept(a.Cands[a.Selected].ID)
			}
		})
	}
	b.Run("TokenProbs n_probs=5", func(b *testing.B) {
		for b.Loop() {
			TokenProbs(logits, 5)
		}
	})
}
