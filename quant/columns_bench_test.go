package quant

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
)

// BenchmarkColumnsDRAM: what a batch's columns cost once the weights come
// from memory. Work.MatMul at the default level on a pool of 2 workers over
// sixteen Repack'ed matrices per type and shape (Qwen3-8B's gate/up,
// 12288x4096, and down, 4096x12288; 113 MB of Q1_0, 226 MB of Q2_0, 208 MB
// of TQ2_0, far more than the L3),
// with 1, 2, 4 and 8 activation columns in turn within each round, so that
// the machine's drift falls on every count alike. Reported per count: the
// minimum and median wall milliseconds of one pass over the sixteen, and
// n times the 1-column minimum over the n-column one (the throughput of n
// streams against one, at the kernel level):
//
//	go test -run '^$' -bench ColumnsDRAM -benchtime 10x ./quant/
func BenchmarkColumnsDRAM(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	level, err := DefaultLevel()
	if err != nil {
		b.Fatal(err)
	}
	for _, typ := range []gguf.GGMLType{gguf.Q1_0, gguf.Q2_0, gguf.TQ2_0} {
		for _, shape := range [][2]int{{12288, 4096}, {4096, 12288}} {
			rows, cols := shape[0], shape[1]
			b.Run(fmt.Sprintf("%s/%dx%d", typ, rows, cols), func(b *testing.B) {
				columnsDRAM(b, r, level, typ, rows, cols)
			})
		}
	}
}

// columnsDRAM is one sub-benchmark of BenchmarkColumnsDRAM: typ at rows x cols.
func columnsDRAM(b *testing.B, r *rand.Rand, level Level, typ gguf.GGMLType, rows, cols int) {
	const nm = 16
	ms := make([]*Matrix, nm)
	for i := range ms {
		ms[i] = randRepacked(b, r, typ, rows, cols)
		ms[i].Data = nil // the packed copy alone, as a loaded model keeps it
	}
	pool := parallel.New(2)
	defer pool.Close()
	ws, err := NewWork(level, pool)
	if err != nil {
		b.Fatal(err)
	}
	ns := []int{1, 2, 4, 8}
	ms1 := make([][]float64, len(ns))
	for b.Loop() {
		for i, n := range ns {
			x := randRow(r, n*cols)
			out := make([]float32, n*rows)
			t0 := time.Now()
			for _, m := range ms {
				ws.MatMul(m, x, n, out)
			}
			ms1[i] = append(ms1[i], float64(time.Since(t0).Microseconds())/1000)
		}
	}
	for i, n := range ns {
		slices.Sort(ms1[i])
		b.ReportMetric(ms1[i][0], fmt.Sprintf("min-ms-n%d", n))
		b.ReportMetric(ms1[i][len(ms1[i])/2], fmt.Sprintf("median-ms-n%d", n))
		b.ReportMetric(float64(n)*ms1[0][0]/ms1[i][0], fmt.Sprintf("x1-n%d", n))
	}
}
