//go:build amd64 && linux

package quant

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/bankml/bankml/gguf"
)

// BenchmarkQ2_0Columns: the AVX2 Q2_0 tile over n activation columns of a
// Repack'ed 4096x4096 matrix, one worker: column by column (tileQ2_0AVX2,
// what one column runs) against all columns at once (tileQ2_0AVX2Cols,
// each block's codes unpacked once for all), alternating pass by pass;
// medians of the thread's CPU ns per row-block per column (so that a
// shared machine's preemptions do not count) and their ratio:
//
//	go test -run '^$' -bench Q2_0Columns -count 5 ./quant/
func BenchmarkQ2_0Columns(b *testing.B) {
	if LevelAVX2.Check() != nil {
		b.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(3, 4))
	const rows, cols = 4096, 4096
	nb := cols / QK2_0
	p := randRepacked(b, r, gguf.Q2_0, rows, cols).packedRows()
	for _, n := range []int{2, 4, 8} {
		var a q8Act
		a.reset(cols, n)
		for c := range n {
			a.quantize(LevelAVX2, c, randRow(r, cols))
		}
		out := make([]float32, 16*n)
		pass := func(cols bool) time.Duration {
			t0 := threadCPU()
			for g := range p.groups {
				codes, scales := p.block(g, 0) // the group's first block: the tiles step whole blocks
				if cols {
					tileQ2_0AVX2Cols(&codes[0], &scales[0], p.nb, &a.qs[0], &a.dy[0], &a.nsum[0], a.k, n, &out[0])
					continue
				}
				for c := range n {
					i := c * a.k / QK8_0
					tileQ2_0AVX2(&codes[0], &scales[0], p.nb, &a.qs[c*a.k], &a.dy[i], &a.nsum[i], &out[16*c])
				}
			}
			return threadCPU() - t0
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var per, all []float64
			round := 0
			for b.Loop() {
				for _, cols := range []bool{round%2 == 0, round%2 != 0} {
					d := float64(pass(cols).Nanoseconds()) / float64(rows*nb*n)
					if cols {
						all = append(all, d)
					} else {
						per = append(per, d)
					}
				}
				round++
			}
			slices.Sort(per)
			slices.Sort(all)
			b.ReportMetric(per[len(per)/2], "percolumn-ns/block")
			b.ReportMetric(all[len(all)/2], "columns-ns/block")
			b.ReportMetric(per[len(per)/2]/all[len(all)/2], "ratio")
		})
	}
}

// threadCPU is the calling thread's CPU time
// (clock_gettime(CLOCK_THREAD_CPUTIME_ID)).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// BenchmarkTQ2_0Columns is BenchmarkQ2_0Columns for TQ2_0: tileTQ2_0AVX2
// column by column against tileTQ2_0AVX2Cols, thread CPU time, alternating:
//
//	go test -run '^$' -bench TQ2_0Columns ./quant/
func BenchmarkTQ2_0Columns(b *testing.B) {
	if LevelAVX2.Check() != nil {
		b.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 4096, 4096
	nb := cols / QK_K
	p := randRepacked(b, r, gguf.TQ2_0, rows, cols).packedRows()
	for _, n := range []int{2, 4, 8} {
		var a q8KAct
		a.reset(cols, n)
		for c := range n {
			a.quantize(LevelAVX2, c, randRow(r, cols))
		}
		out := make([]float32, 16*n)
		acc := make([]float32, 128*n)
		pass := func(cols bool) time.Duration {
			t0 := threadCPU()
			for g := range p.groups {
				codes, scales := p.block(g, 0) // the group's first block: the tiles step whole blocks
				if cols {
					tileTQ2_0AVX2Cols(&codes[0], &scales[0], p.nb, &a.qs[0], &a.d[0], &a.nb[0], a.k, n, &acc[0], &out[0])
					continue
				}
				for c := range n {
					i := c * a.k / QK_K
					tileTQ2_0AVX2(&codes[0], &scales[0], p.nb, &a.qs[i*QK_K], &a.d[i], &a.nb[8*i], &out[16*c])
				}
			}
			return threadCPU() - t0
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var per, all []float64
			round := 0
			for b.Loop() {
				for _, cols := range []bool{round%2 == 0, round%2 != 0} {
					d := float64(pass(cols).Nanoseconds()) / float64(rows*nb*n)
					if cols {
						all = append(all, d)
					} else {
						per = append(per, d)
					}
				}
				round++
			}
			slices.Sort(per)
			slices.Sort(all)
			b.ReportMetric(per[len(per)/2], "percolumn-ns/block")
			b.ReportMetric(all[len(all)/2], "columns-ns/block")
			b.ReportMetric(per[len(per)/2]/all[len(all)/2], "ratio")
		})
	}
}
