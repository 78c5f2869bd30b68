package quant

// Kernel benchmarks of Q4_1, Q5_0, Q5_1, Q8_1 and BF16, each paired with
// the reference's exported kernel on the same data (BenchmarkRef...): rows of
// 4096 values (Llama-7B/Qwen3-8B hidden size), reported as ns/block (a block
// is 32 values; for BF16, 32 values too, for comparison).
//
//	go test ./quant -run '^$' -bench 'Legacy|BF16' -count 5

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/reference"
)

const legacyBenchN = 4096

type legacyBenchData struct {
	q4_1, q5_0, q5_1 []byte // weights
	a8_0, a8_1       []byte // activations
	x                []float32
	bx, by           []uint16
	y                []float32 // dequantization output
}

func newLegacyBenchData() *legacyBenchData {
	r := rand.New(rand.NewPCG(41, 42))
	const nb = legacyBenchN / QK8_0
	d := &legacyBenchData{
		q4_1: make([]byte, nb*BlockQ4_1Size),
		q5_0: make([]byte, nb*BlockQ5_0Size),
		q5_1: make([]byte, nb*BlockQ5_1Size),
		a8_0: make([]byte, nb*BlockQ8_0Size),
		a8_1: make([]byte, nb*BlockQ8_1Size),
		x:    randRow(r, legacyBenchN),
		bx:   make([]uint16, legacyBenchN),
		by:   make([]uint16, legacyBenchN),
		y:    make([]float32, legacyBenchN),
	}
	QuantizeRowQ4_1Ref(randRow(r, legacyBenchN), d.q4_1)
	QuantizeRowQ5_0Ref(randRow(r, legacyBenchN), d.q5_0)
	QuantizeRowQ5_1Ref(randRow(r, legacyBenchN), d.q5_1)
	QuantizeRowQ8_0(d.x, d.a8_0)
	QuantizeRowQ8_1(d.x, d.a8_1)
	FP32ToBF16Row(randRow(r, legacyBenchN), d.bx)
	FP32ToBF16Row(d.x, d.by)
	return d
}

// legacyTimer measures one benchmark: wall time (b.Elapsed) and the CPU
// time of the benchmark's OS thread, both reported per 32-value block.
type legacyTimer struct {
	b   *testing.B
	cpu time.Duration
}

func startLegacyTimer(b *testing.B) *legacyTimer {
	runtime.LockOSThread()
	return &legacyTimer{b: b, cpu: legacyThreadCPU()}
}

// stop reports ns/block (wall) and, on Linux, cpu-ns/block (thread CPU
// time, robust on a loaded machine).
func (t *legacyTimer) stop() { t.stopBlocks(legacyBenchN / QK8_0) }

// stopBlocks is stop for blocks blocks per iteration.
func (t *legacyTimer) stopBlocks(n int) {
	cpu := legacyThreadCPU() - t.cpu
	runtime.UnlockOSThread()
	blocks := float64(t.b.N) * float64(n)
	t.b.ReportMetric(float64(t.b.Elapsed().Nanoseconds())/blocks, "ns/block")
	if cpu > 0 {
		t.b.ReportMetric(float64(cpu.Nanoseconds())/blocks, "cpu-ns/block")
	}
}

// legacyBenchCase is one kernel: bankml's and the reference's calls on the
// same row.
type legacyBenchCase struct {
	name   string
	bankml func(d *legacyBenchData) float32
	ref    func(k *reference.Kernels, d *legacyBenchData) float32
}

const legacyBenchNB = legacyBenchN / QK8_0

var legacyBenchCases = []legacyBenchCase{
	{"VecDotQ4_1Q8_1",
		func(d *legacyBenchData) float32 { return VecDotQ4_1Q8_1(d.q4_1, d.a8_1, legacyBenchNB) },
		func(k *reference.Kernels, d *legacyBenchData) float32 {
			return k.VecDotQ4_1Q8_1(legacyBenchN, d.q4_1, d.a8_1)
		}},
	{"VecDotQ5_0Q8_0",
		func(d *legacyBenchData) float32 { return VecDotQ5_0Q8_0(d.q5_0, d.a8_0, legacyBenchNB) },
		func(k *reference.Kernels, d *legacyBenchData) float32 {
			return k.VecDotQ5_0Q8_0(legacyBenchN, d.q5_0, d.a8_0)
		}},
	{"VecDotQ5_1Q8_1",
		func(d *legacyBenchData) float32 { return VecDotQ5_1Q8_1(d.q5_1, d.a8_1, legacyBenchNB) },
		func(k *reference.Kernels, d *legacyBenchData) float32 {
			return k.VecDotQ5_1Q8_1(legacyBenchN, d.q5_1, d.a8_1)
		}},
	{"VecDotQ4_1Q8_1Generic",
		func(d *legacyBenchData) float32 { return VecDotQ4_1Q8_1Generic(d.q4_1, d.a8_1, legacyBenchNB) },
		func(k *reference.Kernels, d *legacyBenchData) float32 {
			return k.VecDotQ4_1Q8_1Generic(legacyBenchN, d.q4_1, d.a8_1)
		}},
	{"VecDotBF16",
		func(d *legacyBenchData) float32 { return VecDotBF16(d.bx, d.by) },
		func(k *reference.Kernels, d *legacyBenchData) float32 { return k.VecDotBF16(d.bx, d.by) }},
	{"QuantizeRowQ8_1",
		func(d *legacyBenchData) float32 { QuantizeRowQ8_1(d.x, d.a8_1); return 0 },
		func(k *reference.Kernels, d *legacyBenchData) float32 { k.QuantizeRowQ8_1(d.x, d.a8_1); return 0 }},
	{"DequantizeRowQ5_1",
		func(d *legacyBenchData) float32 { DequantizeRowQ5_1(d.q5_1, d.y); return d.y[0] },
		func(k *reference.Kernels, d *legacyBenchData) float32 {
			k.DequantizeRowQ5_1(d.q5_1, d.y)
			return d.y[0]
		}},
}

// BenchmarkLegacy runs bankml's kernels; sub-benchmarks by kernel name.
func BenchmarkLegacy(b *testing.B) {
	d := newLegacyBenchData()
	for _, c := range legacyBenchCases {
		b.Run(c.name, func(b *testing.B) {
			var s float32
			t := startLegacyTimer(b)
			for b.Loop() {
				s += c.bankml(d)
			}
			t.stop()
			_ = s
		})
	}
	b.Run("TinyDotBF16", func(b *testing.B) {
		var s float32
		t := startLegacyTimer(b)
		for b.Loop() {
			s += TinyDotBF16(d.bx, d.by)
		}
		t.stop()
		_ = s
	})
}

// BenchmarkRefLegacy runs the reference's exported kernels on the same data
// (through purego: about 0.1 µs of call overhead per row, i.e. under 1 ns
// per block).
func BenchmarkRefLegacy(b *testing.B) {
	k, err := reference.LoadKernels()
	if err != nil || k.LegacyErr() != nil {
		b.Skip("reference not installed")
	}
	d := newLegacyBenchData()
	for _, c := range legacyBenchCases {
		b.Run(c.name, func(b *testing.B) {
			var s float32
			t := startLegacyTimer(b)
			for b.Loop() {
				s += c.ref(k, d)
			}
			t.stop()
			_ = s
		})
	}
}

// BenchmarkLegacyPairs alternates bankml and the reference kernel by kernel
// in one run (the ratio is what holds on a shared machine).
func BenchmarkLegacyPairs(b *testing.B) {
	k, err := reference.LoadKernels()
	if err != nil || k.LegacyErr() != nil {
		b.Skip("reference not installed")
	}
	d := newLegacyBenchData()
	for _, c := range legacyBenchCases {
		b.Run(c.name+"/bankml", func(b *testing.B) {
			t := startLegacyTimer(b)
			for b.Loop() {
				c.bankml(d)
			}
			t.stop()
		})
		b.Run(c.name+"/ref", func(b *testing.B) {
			t := startLegacyTimer(b)
			for b.Loop() {
				c.ref(k, d)
			}
			t.stop()
		})
	}
}
