package quant

// Benchmarks of the Q8_0×Q8_0 and Q4_0×Q8_0 dot products paired with the
// reference's exported ggml_vec_dot_q8_0_q8_0 / ggml_vec_dot_q4_0_q8_0 on the
// same data, in ns per 32-value block: one row of 65536 values per call
// (so that purego's call overhead, about 1 µs, stays near 1 ns/block), the
// reference and bankml at each CPU level (Level.VecDot), then the same bytes
// as 16 rows of 4096 values per call of the multi-row kernel MatMul runs;
// side by side in one run:
//
//	go test ./quant -run '^$' -bench 'Q0DotPairs' -count 5

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
)

func BenchmarkQ0DotPairs(b *testing.B) {
	k, err := reference.LoadKernels()
	if err != nil {
		b.Skip("reference not installed")
	}
	const nb, nr = legacyBenchN / QK8_0, 16
	r := rand.New(rand.NewPCG(83, 84))
	a := make([]byte, nr*nb*BlockQ8_0Size) // one long row; its first nb blocks for the 16 rows
	QuantizeRowQ8_0(randRow(r, nr*legacyBenchN), a)
	w8 := make([]byte, nr*nb*BlockQ8_0Size)
	QuantizeRowQ8_0(randRow(r, nr*legacyBenchN), w8)
	w4 := legacyRandBlocks(r, nr*nb, BlockQ4_0Size, 0)
	cases := []struct {
		typ gguf.GGMLType
		w   []byte
		ref func(n int, x, y []byte) float32
	}{
		{gguf.Q8_0, w8, k.VecDotQ8_0Q8_0},
		{gguf.Q4_0, w4, k.VecDotQ4_0Q8_0},
	}
	for _, c := range cases {
		rb := len(c.w) / nr
		b.Run(c.typ.String()+"/ref", func(b *testing.B) {
			t := startLegacyTimer(b)
			for b.Loop() {
				c.ref(nr*legacyBenchN, c.w, a)
			}
			t.stopBlocks(nr * nb)
		})
		for _, l := range Levels() {
			dot := l.VecDot(c.typ)
			b.Run(fmt.Sprintf("%s/%s", c.typ, l), func(b *testing.B) {
				t := startLegacyTimer(b)
				for b.Loop() {
					dot(c.w, a, nr*nb)
				}
				t.stopBlocks(nr * nb)
			})
			rd := rowsDot(l, c.typ)
			if rd == nil {
				continue
			}
			out := make([]float32, nr)
			b.Run(fmt.Sprintf("%s/%s-%drows", c.typ, l, nr), func(b *testing.B) {
				t := startLegacyTimer(b)
				for b.Loop() {
					rd(c.w, rb, a[:nb*BlockQ8_0Size], nb, out)
				}
				t.stopBlocks(nr * nb)
			})
		}
	}
}
