package engine

import (
	"context"
	"testing"

	"github.com/bankml/bankml/sample"
)

// BenchmarkGenerate times 64 greedy tokens after a 5-token prompt on
// stories260K through Engine.Generate and through the bare model.Context
// loop it wraps, side by side (ratios only count: the machine is shared).
func BenchmarkGenerate(b *testing.B) {
	tm := stories(b)
	prompt := tm.tok.Tokenize("Once upon a time", true, true)
	const n = 64
	b.Run("engine", func(b *testing.B) {
		e := newEngine(b, tm, Options{NCtx: 256})
		req := Request{Prompt: Prompt{Tokens: prompt}, Sampling: greedyParams(), NPredict: n, IgnoreEOS: true, CachePrompt: true, Slot: -1}
		for b.Loop() {
			if _, err := e.Generate(context.Background(), req, func(Token) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
	b.Run("context", func(b *testing.B) {
		c, err := tm.m.NewContext(256, 1)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for b.Loop() {
			if err := c.Truncate(0); err != nil {
				b.Fatal(err)
			}
			logits, err := c.Decode(prompt)
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				tok := sample.Greedy(logits)
				if i == n-1 {
					break
				}
				if logits, err = c.Decode([]int32{tok}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
}
