package ternary

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkQuantizeMatrix times PTQTP on 64 rows of 2048 Gaussian weights (512 groups of 256) on one goroutine;
// ns/op divided by 512 is the cost of one group.
func BenchmarkQuantizeMatrix(b *testing.B) {
	w := gaussian(rand.New(rand.NewPCG(1, 2)), 64*2048, 0.02)
	for _, k := range []int{1, 2, 3} {
		b.Run("K="+string(rune('0'+k)), func(b *testing.B) {
			opt := DefaultOptions()
			opt.Planes = k
			for b.Loop() {
				if _, _, err := QuantizeMatrix(w, 64, 2048, opt, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeTQ2_0 times the ggml TQ2_0 encoder on a 2048×2048 matrix.
func BenchmarkEncodeTQ2_0(b *testing.B) {
	w := gaussian(rand.New(rand.NewPCG(1, 2)), 2048*2048, 0.02)
	dst := make([]byte, FormatTQ2_0.RowBytes(len(w)))
	b.SetBytes(int64(4 * len(w)))
	for b.Loop() {
		if err := EncodeTQ2_0(w, dst); err != nil {
			b.Fatal(err)
		}
	}
}
