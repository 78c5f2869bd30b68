package train

import (
	"testing"

	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// BenchmarkStep times one forward and backward pass of the default student shape (batch 4 × 256, no teacher).
func BenchmarkStep(b *testing.B) {
	cfg := Config{Vocab: 512, Embd: 256, Layers: 2, Heads: 8, KVHeads: 4, FF: 512, Seq: 256, RMSEps: 1e-5, RopeBase: 10000, Mode: ModeTernary}
	m, err := NewModel(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	pool := parallel.New(1)
	defer pool.Close()
	e := &exec{pool: pool, level: quant.Detect()}
	const batch = 4
	p := newPass(cfg, batch)
	tokens := make([]int32, batch*cfg.Seq)
	for i := range tokens {
		tokens[i] = int32(i*7) % 512
	}
	for b.Loop() {
		m.loss(e, p, tokens, tokens, nil, 0)
	}
	b.ReportMetric(float64(len(tokens))*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}
