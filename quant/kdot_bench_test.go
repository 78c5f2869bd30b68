package quant

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Benchmarks of the Q8_K family, each bankml kernel next to the reference's
// exported one (BenchmarkRef...) on the same data: one 4096-wide row (an 8B
// model's n_embd, 16 blocks) per iteration, reported in ns/block. Run them
// side by side with e.g.
//
//	go test -run '^$' -bench 'TQ2_0' ./quant

const kBenchBlocks = 16

// kBenchData returns a 4096-wide weight row of format fi (quantized from
// gaussian values by the reference quantizer), its float row, and a Q8_K
// activation row.
func kBenchData(fi int) (f *kFormat, w, a []byte, x []float32) {
	f = &kFormats[fi]
	r := rand.New(rand.NewPCG(7, uint64(fi)))
	x = kRowCases[4].gen(r, kBenchBlocks*QK_K)
	w = make([]byte, kBenchBlocks*f.blockSize)
	f.quantize(x, w)
	a = make([]byte, kBenchBlocks*BlockQ8_KSize)
	QuantizeRowQ8_K(kRowCases[4].gen(r, kBenchBlocks*QK_K), a)
	return f, w, a, x
}

var kBenchSink float32

func benchKDot(b *testing.B, fi int, generic bool) {
	f, w, a, _ := kBenchData(fi)
	dot := f.dot
	if generic {
		dot = f.generic
	}
	for b.Loop() {
		kBenchSink += dot(w, a, kBenchBlocks)
	}
	reportPerBlockK(b, kBenchBlocks)
}

// kRefDotName is the exported symbol of format f's dot product.
func kRefDotName(f *kFormat, generic bool) string {
	name := "ggml_vec_dot_" + f.typ.String() + "_q8_K"
	if generic {
		name += "_generic"
	}
	return name
}

// kRefDotRaw binds the reference's dot product for benchmarks (no
// reflection in the call path).
func kRefDotRaw(b *testing.B, f *kFormat, generic bool) func(n int, x, y []byte) float32 {
	b.Helper()
	dot, err := kquantKernelsB(b).VecDotKRaw(kRefDotName(f, generic))
	if err != nil {
		b.Fatal(err)
	}
	return dot
}

func benchRefKDot(b *testing.B, fi int, generic bool) {
	f, w, a, _ := kBenchData(fi)
	dot := kRefDotRaw(b, f, generic)
	for b.Loop() {
		kBenchSink += dot(kBenchBlocks*QK_K, w, a)
	}
	reportPerBlockK(b, kBenchBlocks)
}

func benchKDequant(b *testing.B, fi int, ref bool) {
	f, w, _, _ := kBenchData(fi)
	dq := f.dequant
	if ref {
		dq = f.refDequant(kquantKernelsB(b))
	}
	y := make([]float32, kBenchBlocks*QK_K)
	for b.Loop() {
		dq(w, y)
	}
	reportPerBlockK(b, kBenchBlocks)
}

func benchKQuantize(b *testing.B, fi int, ref bool) {
	f, _, _, x := kBenchData(fi)
	q := f.quantize
	if ref {
		q = f.refQuantize(kquantKernelsB(b))
	}
	w := make([]byte, kBenchBlocks*f.blockSize)
	for b.Loop() {
		q(x, w)
	}
	reportPerBlockK(b, kBenchBlocks)
}

func BenchmarkVecDotTQ1_0Q8_K(b *testing.B)           { benchKDot(b, 0, false) }
func BenchmarkRefVecDotTQ1_0Q8_K(b *testing.B)        { benchRefKDot(b, 0, false) }
func BenchmarkVecDotTQ1_0Q8_KGeneric(b *testing.B)    { benchKDot(b, 0, true) }
func BenchmarkRefVecDotTQ1_0Q8_KGeneric(b *testing.B) { benchRefKDot(b, 0, true) }
func BenchmarkVecDotTQ2_0Q8_K(b *testing.B)           { benchKDot(b, 1, false) }
func BenchmarkRefVecDotTQ2_0Q8_K(b *testing.B)        { benchRefKDot(b, 1, false) }
func BenchmarkVecDotTQ2_0Q8_KGeneric(b *testing.B)    { benchKDot(b, 1, true) }
func BenchmarkRefVecDotTQ2_0Q8_KGeneric(b *testing.B) { benchRefKDot(b, 1, true) }
func BenchmarkVecDotQ2_KQ8_K(b *testing.B)            { benchKDot(b, 2, false) }
func BenchmarkRefVecDotQ2_KQ8_K(b *testing.B)         { benchRefKDot(b, 2, false) }
func BenchmarkVecDotQ2_KQ8_KGeneric(b *testing.B)     { benchKDot(b, 2, true) }
func BenchmarkRefVecDotQ2_KQ8_KGeneric(b *testing.B)  { benchRefKDot(b, 2, true) }
func BenchmarkVecDotQ3_KQ8_K(b *testing.B)            { benchKDot(b, 3, false) }
func BenchmarkRefVecDotQ3_KQ8_K(b *testing.B)         { benchRefKDot(b, 3, false) }
func BenchmarkVecDotQ3_KQ8_KGeneric(b *testing.B)     { benchKDot(b, 3, true) }
func BenchmarkRefVecDotQ3_KQ8_KGeneric(b *testing.B)  { benchRefKDot(b, 3, true) }

func BenchmarkDequantizeRowTQ1_0(b *testing.B)    { benchKDequant(b, 0, false) }
func BenchmarkRefDequantizeRowTQ1_0(b *testing.B) { benchKDequant(b, 0, true) }
func BenchmarkDequantizeRowTQ2_0(b *testing.B)    { benchKDequant(b, 1, false) }
func BenchmarkRefDequantizeRowTQ2_0(b *testing.B) { benchKDequant(b, 1, true) }
func BenchmarkDequantizeRowQ2_K(b *testing.B)     { benchKDequant(b, 2, false) }
func BenchmarkRefDequantizeRowQ2_K(b *testing.B)  { benchKDequant(b, 2, true) }
func BenchmarkDequantizeRowQ3_K(b *testing.B)     { benchKDequant(b, 3, false) }
func BenchmarkRefDequantizeRowQ3_K(b *testing.B)  { benchKDequant(b, 3, true) }

func BenchmarkQuantizeTQ1_0Ref(b *testing.B)    { benchKQuantize(b, 0, false) }
func BenchmarkRefQuantizeTQ1_0Ref(b *testing.B) { benchKQuantize(b, 0, true) }
func BenchmarkQuantizeTQ2_0Ref(b *testing.B)    { benchKQuantize(b, 1, false) }
func BenchmarkRefQuantizeTQ2_0Ref(b *testing.B) { benchKQuantize(b, 1, true) }
func BenchmarkQuantizeQ2_KRef(b *testing.B)     { benchKQuantize(b, 2, false) }
func BenchmarkRefQuantizeQ2_KRef(b *testing.B)  { benchKQuantize(b, 2, true) }
func BenchmarkQuantizeQ3_KRef(b *testing.B)     { benchKQuantize(b, 3, false) }
func BenchmarkRefQuantizeQ3_KRef(b *testing.B)  { benchKQuantize(b, 3, true) }

// BenchmarkRefVecDotKCallOverhead is the cost of one call into the
// reference through purego with n = 0 (no block touched): subtract it from
// the BenchmarkRef... times (per row of 16 blocks) to get the kernel alone.
func BenchmarkRefVecDotKCallOverhead(b *testing.B) {
	_, w, a, _ := kBenchData(1)
	dot := kRefDotRaw(b, &kFormats[1], false)
	for b.Loop() {
		kBenchSink += dot(0, w, a)
	}
}

// BenchmarkKQuantsAlternating runs bankml's and the reference's dot products
// in one loop, alternating batches of 32 calls on the same 4096-wide row, and
// reports each side's median ns/block over the batches, the reference's
// with the measured per-call overhead removed (ref-kernel), and the ratio
// bankml / ref-kernel. Shared machines drift; ratios measured this way hold.
func BenchmarkKQuantsAlternating(b *testing.B) {
	for fi := range kFormats {
		for _, generic := range []bool{false, true} {
			f := &kFormats[fi]
			b.Run(kRefDotName(f, generic), func(b *testing.B) {
				_, w, a, _ := kBenchData(fi)
				ref := kRefDotRaw(b, f, generic)
				dot := f.dot
				if generic {
					dot = f.generic
				}
				const batch = 32
				timeIt := func(call func()) float64 {
					t0 := time.Now()
					for range batch {
						call()
					}
					return float64(time.Since(t0).Nanoseconds()) / batch
				}
				var mine, theirs, empty []float64
				for b.Loop() {
					mine = append(mine, timeIt(func() { kBenchSink += dot(w, a, kBenchBlocks) }))
					theirs = append(theirs, timeIt(func() { kBenchSink += ref(kBenchBlocks*QK_K, w, a) }))
					empty = append(empty, timeIt(func() { kBenchSink += ref(0, w, a) }))
				}
				m, r, e := kMedian(mine), kMedian(theirs), kMedian(empty)
				b.ReportMetric(m/kBenchBlocks, "bankml-ns/block")
				b.ReportMetric(r/kBenchBlocks, "ref-ns/block")
				b.ReportMetric((r-e)/kBenchBlocks, "ref-kernel-ns/block")
				b.ReportMetric(m/max(r-e, 1), "ratio")
			})
		}
	}
}

func kMedian(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
