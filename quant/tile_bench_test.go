package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// BenchmarkTiles: the packed tiles per level on Qwen3-8B shapes (rows x
// cols), 1 and 4 columns; ns/block is per row-block per column.
func BenchmarkTiles(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []gguf.GGMLType{gguf.Q2_0, gguf.Q1_0} {
		for _, shape := range [][2]int{{4096, 4096}, {4096, 12288}} {
			rows, cols := shape[0], shape[1]
			nb := cols / typ.BlockSize()
			w := randLowbitBlocks(r, rows*nb, typ.TypeSize())
			p := packMatrix(typ, w, rows, nb)
			for _, n := range []int{1, 4} {
				var a q8Act
				a.reset(cols, n)
				for c := range n {
					a.quantizeGo(c, randRow(r, cols))
				}
				tmp := make([]float32, 16*n)
				acc := make([]float32, 128*n)
				for _, l := range Levels() {
					b.Run(fmt.Sprintf("%s/%dx%d/n=%d/%s", typ, rows, cols, n, l), func(b *testing.B) {
						b.SetBytes(int64(len(w)))
						for b.Loop() {
							for g := range p.groups {
								codes, scales := p.group(g)
								if typ == gguf.Q2_0 {
									tileQ2_0(l, codes, scales, p.nb, &a, 0, n, tmp)
								} else {
									tileQ1_0(l, codes, scales, p.nb, &a, 0, n, tmp, acc)
								}
							}
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*nb*n), "ns/block")
					})
				}
			}
		}
	}
}
