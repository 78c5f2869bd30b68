package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// BenchmarkTiles: Work.MatMul (one worker) on Repack'ed Q1_0, Q2_0 and TQ2_0
// matrices of Qwen3-8B shapes (rows x cols), 1 and 16 columns, at every
// level (generic runs the plain kernels), and Q1_0 not repacked at avx512
// (the plain-layout kernel: what the copy buys); ns/block is per row-block
// per column, activation quantization included.
func BenchmarkTiles(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []gguf.GGMLType{gguf.Q1_0, gguf.Q2_0, gguf.TQ2_0} {
		for _, shape := range [][2]int{{4096, 4096}, {4096, 12288}} {
			rows, cols := shape[0], shape[1]
			nb := cols / typ.BlockSize()
			m := randRepacked(b, r, typ, rows, cols)
			w := m.Data
			for _, n := range []int{1, 16} {
				x := randRow(r, n*cols)
				out := make([]float32, n*rows)
				plain := &Matrix{Name: "w", Type: typ, Rows: rows, Cols: cols, Data: w}
				for _, l := range Levels() {
					ws, _ := NewWork(l, nil)
					variants := []struct {
						name string
						m    *Matrix
					}{{l.String(), m}}
					if typ == gguf.Q1_0 && l == LevelAVX512 {
						variants = append(variants, struct {
							name string
							m    *Matrix
						}{"avx512-plain", plain}) // not repacked: the plain-layout kernel
					}
					for _, v := range variants {
						b.Run(fmt.Sprintf("%s/%dx%d/n=%d/%s", typ, rows, cols, n, v.name), func(b *testing.B) {
							b.SetBytes(int64(len(w)))
							for b.Loop() {
								ws.MatMul(v.m, x, n, out)
							}
							b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*nb*n), "ns/block")
						})
					}
				}
			}
		}
	}
}
