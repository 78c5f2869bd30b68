package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/reference"
)

// k456Kernels returns the reference with its Q4_K/Q5_K/Q6_K oracles bound.
func k456Kernels(t testing.TB) *reference.Kernels {
	t.Helper()
	return familyKernels(t, (*reference.Kernels).K456Err)
}

// k456Format is one format of the family with its bankml functions, its
// reference oracles and the scalar specifications of its dot products.
type k456Format struct {
	name        string
	blockSize   int
	dequant     func(src []byte, y []float32)
	quantize    func(x []float32, dst []byte)
	dot         func(w, a []byte, nb int) float32
	generic     func(w, a []byte, nb int) float32
	k456SpecDot func(w, a []byte, nb int) float32
	k456SpecGen func(w, a []byte, nb int) float32
	// scaleOffs are the offsets of the block's f16 scales (kept finite).
	scaleOffs []int

	refDequant  func(k *reference.Kernels) func(x []byte, y []float32)
	refQuantize func(k *reference.Kernels) func(x []float32, y []byte)
	refDot      func(k *reference.Kernels) func(n int, x, y []byte) float32
	refGeneric  func(k *reference.Kernels) func(n int, x, y []byte) float32
}

var k456Formats = []k456Format{
	{
		name: "Q4_K", blockSize: BlockQ4_KSize,
		dequant: DequantizeRowQ4_K, quantize: QuantizeRowQ4_KRef,
		dot: VecDotQ4_KQ8_K, generic: VecDotQ4_KQ8_KGeneric,
		k456SpecDot: k456SpecVecDotQ4_K,
		k456SpecGen: func(w, a []byte, nb int) float32 { return k456SpecGenericQ45(w, a, nb, false) },
		scaleOffs:   []int{0, 2},
		refDequant:  func(k *reference.Kernels) func([]byte, []float32) { return k.DequantizeRowQ4_K },
		refQuantize: func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ4_KRef },
		refDot:      func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ4_KQ8_K },
		refGeneric:  func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ4_KQ8_KGeneric },
	},
	{
		name: "Q5_K", blockSize: BlockQ5_KSize,
		dequant: DequantizeRowQ5_K, quantize: QuantizeRowQ5_KRef,
		dot: VecDotQ5_KQ8_K, generic: VecDotQ5_KQ8_KGeneric,
		k456SpecDot: k456SpecVecDotQ5_K,
		k456SpecGen: func(w, a []byte, nb int) float32 { return k456SpecGenericQ45(w, a, nb, true) },
		scaleOffs:   []int{0, 2},
		refDequant:  func(k *reference.Kernels) func([]byte, []float32) { return k.DequantizeRowQ5_K },
		refQuantize: func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ5_KRef },
		refDot:      func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ5_KQ8_K },
		refGeneric:  func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ5_KQ8_KGeneric },
	},
	{
		name: "Q6_K", blockSize: BlockQ6_KSize,
		dequant: DequantizeRowQ6_K, quantize: QuantizeRowQ6_KRef,
		dot: VecDotQ6_KQ8_K, generic: VecDotQ6_KQ8_KGeneric,
		k456SpecDot: k456SpecVecDotQ6_K, k456SpecGen: k456SpecGenericQ6,
		scaleOffs:   []int{q6KOffD},
		refDequant:  func(k *reference.Kernels) func([]byte, []float32) { return k.DequantizeRowQ6_K },
		refQuantize: func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ6_KRef },
		refDot:      func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ6_KQ8_K },
		refGeneric:  func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ6_KQ8_KGeneric },
	},
}

// k456F16 draws a finite f16: usually a magnitude real K-quant scales have,
// sometimes any finite value (zeros, subnormals, negatives included).
func k456F16(r *rand.Rand) uint16 {
	if r.IntN(4) > 0 {
		return uint16(r.IntN(2))<<15 | uint16(0x0c00+r.IntN(0x2000))
	}
	h := uint16(r.Uint32())
	for h&0x7c00 == 0x7c00 {
		h = uint16(r.Uint32())
	}
	return h
}

// k456RandBlocks returns nb random blocks of f: random bytes with finite f16
// scales; a quarter of the time the reference quantizer's output for a random
// row instead (the blocks real files hold).
func k456RandBlocks(r *rand.Rand, f *k456Format, nb int, quantize func([]float32, []byte)) []byte {
	w := make([]byte, nb*f.blockSize)
	if quantize != nil && r.IntN(4) == 0 {
		quantize(k456Row(r, nb*QK_K), w)
		return w
	}
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for b := range nb {
		for _, o := range f.scaleOffs {
			binary.LittleEndian.PutUint16(w[b*f.blockSize+o:], k456F16(r))
		}
	}
	return w
}

// k456Row draws activations: randRow's mixed magnitudes, sometimes with
// outliers, whole zero super-blocks, constant or tiny (subnormal) blocks, or
// large finite values.
func k456Row(r *rand.Rand, n int) []float32 {
	x := randRow(r, n)
	for b := 0; b < n/QK_K; b++ {
		xb := x[b*QK_K : (b+1)*QK_K]
		switch r.IntN(10) {
		case 0:
			clear(xb)
		case 1: // outliers
			for range 1 + r.IntN(4) {
				xb[r.IntN(QK_K)] = float32(r.NormFloat64() * 1e4)
			}
		case 2: // one value
			v := float32(r.NormFloat64())
			for i := range xb {
				xb[i] = v
			}
		case 3: // tiny
			for i := range xb {
				xb[i] = math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31)
			}
		case 4: // large, finite
			for i := range xb {
				xb[i] = float32(r.NormFloat64() * 1e18)
			}
		case 5: // a few nonzero values in a zero block
			clear(xb)
			for range 1 + r.IntN(3) {
				xb[r.IntN(QK_K)] = float32(r.NormFloat64())
			}
		}
	}
	return x
}

// k456Acts returns nb Q8_K activation blocks: usually the reference's own
// quantize_row_q8_K of a k456Row, sometimes raw random bytes with a random
// finite d (bsums then need not match qs: the kernels must use them as given).
func k456Acts(r *rand.Rand, k *reference.Kernels, nb int) []byte {
	a := make([]byte, nb*BlockQ8_KSize)
	if r.IntN(5) > 0 {
		x := k456Row(r, nb*QK_K)
		if k != nil {
			k.K456QuantizeRowQ8_K(x, a)
		} else {
			QuantizeRowQ8_K(x, a)
		}
		return a
	}
	for i := range a {
		a[i] = byte(r.Uint32())
	}
	for b := range nb {
		d := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(20)-14)))
		binary.LittleEndian.PutUint32(a[b*BlockQ8_KSize:], math.Float32bits(d))
	}
	return a
}

// k456Shapes are the row lengths in blocks the dot-product oracles cover:
// 1..16 and the real shapes 4096, 5120, 8192, 11008, 12288, 14336.
var k456Shapes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 32, 43, 48, 56}

func TestDequantizeRowK456MatchesReference(t *testing.T) {
	k := k456Kernels(t)
	for fi := range k456Formats {
		f := &k456Formats[fi]
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(41, uint64(fi)))
			ref := f.refDequant(k)
			blocks, bad := 0, 0
			for trial := range 2000 {
				nb := 1 + r.IntN(8)
				src := k456RandBlocks(r, f, nb, f.refQuantize(k))
				got, want := make([]float32, nb*QK_K), make([]float32, nb*QK_K)
				f.dequant(src, got)
				ref(src, want)
				for i := range got {
					if !bitsEq(got[i], want[i]) {
						if bad < 5 {
							t.Errorf("trial %d value %d: %g (%#x), reference %g (%#x)", trial, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
						bad++
						break
					}
				}
				blocks += nb
			}
			t.Logf("%s: %d random blocks, %d rows: %d/%d rows identical", f.name, blocks, 2000, 2000-bad, 2000)
		})
	}
}

func TestQuantizeRowK456RefMatchesReference(t *testing.T) {
	k := k456Kernels(t)
	for fi := range k456Formats {
		f := &k456Formats[fi]
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(43, uint64(fi)))
			ref := f.refQuantize(k)
			const trials = 3000
			bad, blocks := 0, 0
			for trial := range trials {
				nb := 1 + r.IntN(4)
				x := k456Row(r, nb*QK_K)
				got, want := make([]byte, nb*f.blockSize), make([]byte, nb*f.blockSize)
				f.quantize(x, got)
				ref(x, want)
				blocks += nb
				if string(got) != string(want) {
					if bad < 3 {
						t.Errorf("trial %d: quantize_row_%s_ref differs\n got %x\nwant %x", trial, f.name, got, want)
					}
					bad++
				}
			}
			t.Logf("%s: %d/%d rows (%d super-blocks) quantize to identical bytes", f.name, trials-bad, trials, blocks)
		})
	}
}

// TestVecDotK456MatchesReference: many rows of every k456Shapes length, bit
// for bit against the haswell kernel and against its exported _generic twin.
func TestVecDotK456MatchesReference(t *testing.T) {
	k := k456Kernels(t)
	for fi := range k456Formats {
		f := &k456Formats[fi]
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(47, uint64(fi)))
			refDot, refGen := f.refDot(k), f.refGeneric(k)
			quant := f.refQuantize(k)
			var n, badDot, badGen int
			for _, nb := range k456Shapes {
				rows := 150
				if nb > 16 {
					rows = 60
				}
				for range rows {
					w := k456RandBlocks(r, f, nb, quant)
					a := k456Acts(r, k, nb)
					n++
					if got, want := f.dot(w, a, nb), refDot(nb*QK_K, w, a); !bitsEq(got, want) {
						if badDot < 5 {
							t.Errorf("%s nb=%d: vec_dot %g (%#x), reference %g (%#x)", f.name, nb, got, math.Float32bits(got), want, math.Float32bits(want))
						}
						badDot++
					}
					if got, want := f.generic(w, a, nb), refGen(nb*QK_K, w, a); !bitsEq(got, want) {
						if badGen < 5 {
							t.Errorf("%s nb=%d: generic %g (%#x), reference %g (%#x)", f.name, nb, got, math.Float32bits(got), want, math.Float32bits(want))
						}
						badGen++
					}
				}
			}
			t.Logf("%s: %d/%d dots (haswell), %d/%d dots (_generic)", f.name, n-badDot, n, n-badGen, n)
		})
	}
}

// TestVecDotK456FastMatchesSpec fuzzes the fast paths against the
// transliterated kernels of k456_spec_test.go on random blocks (no reference
// needed).
func TestVecDotK456FastMatchesSpec(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for fi := range k456Formats {
		f := &k456Formats[fi]
		for trial := range 3000 {
			nb := 1 + r.IntN(6)
			w := k456RandBlocks(r, f, nb, nil)
			a := k456Acts(r, nil, nb)
			if err := k456CheckSpec(f, w, a, nb); err != nil {
				t.Fatalf("trial %d: %v", trial, err)
			}
		}
	}
}

func k456CheckSpec(f *k456Format, w, a []byte, nb int) error {
	if got, want := f.dot(w, a, nb), f.k456SpecDot(w, a, nb); !bitsEq(got, want) {
		return fmt.Errorf("%s nb=%d: vec_dot %g, spec %g", f.name, nb, got, want)
	}
	if got, want := f.generic(w, a, nb), f.k456SpecGen(w, a, nb); !bitsEq(got, want) {
		return fmt.Errorf("%s nb=%d: generic %g, spec %g", f.name, nb, got, want)
	}
	if f.name == "Q4_K" {
		if got, want := RepackGemvQ4_KQ8_K(w, a, nb), k456SpecRepackQ4_K(w, a, nb, false); !bitsEq(got, want) {
			return fmt.Errorf("Q4_K nb=%d: gemv %g, spec %g", nb, got, want)
		}
		if got, want := RepackGemmQ4_KQ8_K(w, a, nb), k456SpecRepackQ4_K(w, a, nb, true); !bitsEq(got, want) {
			return fmt.Errorf("Q4_K nb=%d: gemm %g, spec %g", nb, got, want)
		}
	}
	return nil
}

// FuzzVecDotK456 drives the same comparison from fuzzer-chosen seeds
// (go test -fuzz FuzzVecDotK456 ./quant).
func FuzzVecDotK456(f *testing.F) {
	for s := range uint64(8) {
		f.Add(s, s*977, uint8(s))
	}
	f.Fuzz(func(t *testing.T, s1, s2 uint64, nbSel uint8) {
		r := rand.New(rand.NewPCG(s1, s2))
		nb := 1 + int(nbSel%8)
		for fi := range k456Formats {
			fm := &k456Formats[fi]
			w := k456RandBlocks(r, fm, nb, nil)
			a := k456Acts(r, nil, nb)
			if err := k456CheckSpec(fm, w, a, nb); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestK456BadLengths: short or odd buffers are clamped, never read past.
func TestK456BadLengths(t *testing.T) {
	for fi := range k456Formats {
		f := &k456Formats[fi]
		for _, tc := range []struct {
			name       string
			wlen, alen int
			nb         int
		}{
			{"empty", 0, 0, 1},
			{"short weights", f.blockSize - 1, BlockQ8_KSize, 1},
			{"short activations", f.blockSize, BlockQ8_KSize - 1, 1},
			{"nb too large", 2 * f.blockSize, 2 * BlockQ8_KSize, 5},
			{"negative nb", f.blockSize, BlockQ8_KSize, -3},
		} {
			w, a := make([]byte, tc.wlen), make([]byte, tc.alen)
			_ = f.dot(w, a, tc.nb)
			_ = f.generic(w, a, tc.nb)
			_ = RepackGemvQ4_KQ8_K(w, a, tc.nb)
			_ = RepackGemmQ4_KQ8_K(w, a, tc.nb)
			f.dequant(w, make([]float32, 2*QK_K+5))
			f.quantize(make([]float32, 2*QK_K+5), w)
			QuantizeRowQ8_K4x8(make([]float32, QK_K), a)
		}
	}
}

func k456Bench(b *testing.B, nb int, dot func(w, a []byte, nb int) float32, w, a []byte) {
	var s float32
	for b.Loop() {
		s += dot(w, a, nb)
	}
	_ = s
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb), "ns/block")
}

// k456BenchCols is the row length of the benchmarks: n_ff of the Bonsai-8B
// (Qwen3-8B) shapes, the input width of ffn_down (48 super-blocks), long
// enough that purego's cost per call into the reference (~0.8 µs, measured by
// BenchmarkK456Alternating/RefCallOverhead) adds only ~16 ns per block.
const k456BenchCols = 12288

// k456BenchData is a k456BenchCols-wide row of f, quantized by bankml's
// reference quantizer from a random row, and its Q8_K activations.
func k456BenchData(f *k456Format) (w, a []byte, nb int) {
	r := rand.New(rand.NewPCG(61, 62))
	nb = k456BenchCols / QK_K
	w = make([]byte, nb*f.blockSize)
	f.quantize(randRow(r, nb*QK_K), w)
	a = make([]byte, nb*BlockQ8_KSize)
	QuantizeRowQ8_K(randRow(r, nb*QK_K), a)
	return w, a, nb
}

func k456BenchDot(b *testing.B, fi int, generic, ref bool) {
	f := &k456Formats[fi]
	w, a, nb := k456BenchData(f)
	dot := f.dot
	if generic {
		dot = f.generic
	}
	if ref {
		k := k456Kernels(b)
		rd := f.refDot(k)
		if generic {
			rd = f.refGeneric(k)
		}
		dot = func(w, a []byte, nb int) float32 { return rd(nb*QK_K, w, a) }
	}
	k456Bench(b, nb, dot, w, a)
}

func BenchmarkVecDotQ4_KQ8_K(b *testing.B)           { k456BenchDot(b, 0, false, false) }
func BenchmarkRefVecDotQ4_KQ8_K(b *testing.B)        { k456BenchDot(b, 0, false, true) }
func BenchmarkVecDotQ5_KQ8_K(b *testing.B)           { k456BenchDot(b, 1, false, false) }
func BenchmarkRefVecDotQ5_KQ8_K(b *testing.B)        { k456BenchDot(b, 1, false, true) }
func BenchmarkVecDotQ6_KQ8_K(b *testing.B)           { k456BenchDot(b, 2, false, false) }
func BenchmarkRefVecDotQ6_KQ8_K(b *testing.B)        { k456BenchDot(b, 2, false, true) }
func BenchmarkVecDotQ4_KQ8_KGeneric(b *testing.B)    { k456BenchDot(b, 0, true, false) }
func BenchmarkRefVecDotQ4_KQ8_KGeneric(b *testing.B) { k456BenchDot(b, 0, true, true) }
func BenchmarkVecDotQ5_KQ8_KGeneric(b *testing.B)    { k456BenchDot(b, 1, true, false) }
func BenchmarkRefVecDotQ5_KQ8_KGeneric(b *testing.B) { k456BenchDot(b, 1, true, true) }
func BenchmarkVecDotQ6_KQ8_KGeneric(b *testing.B)    { k456BenchDot(b, 2, true, false) }
func BenchmarkRefVecDotQ6_KQ8_KGeneric(b *testing.B) { k456BenchDot(b, 2, true, true) }

func k456BenchDequant(b *testing.B, fi int, ref bool) {
	f := &k456Formats[fi]
	w, _, nb := k456BenchData(f)
	y := make([]float32, nb*QK_K)
	deq := f.dequant
	if ref {
		deq = f.refDequant(k456Kernels(b))
	}
	for b.Loop() {
		deq(w, y)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb), "ns/block")
}

func BenchmarkDequantizeRowQ4_K(b *testing.B)    { k456BenchDequant(b, 0, false) }
func BenchmarkRefDequantizeRowQ4_K(b *testing.B) { k456BenchDequant(b, 0, true) }
func BenchmarkDequantizeRowQ5_K(b *testing.B)    { k456BenchDequant(b, 1, false) }
func BenchmarkRefDequantizeRowQ5_K(b *testing.B) { k456BenchDequant(b, 1, true) }
func BenchmarkDequantizeRowQ6_K(b *testing.B)    { k456BenchDequant(b, 2, false) }
func BenchmarkRefDequantizeRowQ6_K(b *testing.B) { k456BenchDequant(b, 2, true) }

func k456BenchQuantize(b *testing.B, fi int, ref bool) {
	f := &k456Formats[fi]
	r := rand.New(rand.NewPCG(63, 64))
	nb := k456BenchCols / QK_K
	x := randRow(r, nb*QK_K)
	dst := make([]byte, nb*f.blockSize)
	q := f.quantize
	if ref {
		q = f.refQuantize(k456Kernels(b))
	}
	for b.Loop() {
		q(x, dst)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb), "ns/block")
}

func BenchmarkQuantizeRowQ4_KRef(b *testing.B)    { k456BenchQuantize(b, 0, false) }
func BenchmarkRefQuantizeRowQ4_KRef(b *testing.B) { k456BenchQuantize(b, 0, true) }
func BenchmarkQuantizeRowQ5_KRef(b *testing.B)    { k456BenchQuantize(b, 1, false) }
func BenchmarkRefQuantizeRowQ5_KRef(b *testing.B) { k456BenchQuantize(b, 1, true) }
func BenchmarkQuantizeRowQ6_KRef(b *testing.B)    { k456BenchQuantize(b, 2, false) }
func BenchmarkRefQuantizeRowQ6_KRef(b *testing.B) { k456BenchQuantize(b, 2, true) }

// BenchmarkK456Alternating times bankml's kernels and the reference's in one
// run, alternating batches of calls on the same k456BenchCols-wide row, and
// reports per kernel the median ns/block of each, the
// min/median/max of the paired ratios bankml/reference, and the cost of one
// empty call into the reference through purego (included in its times).
func BenchmarkK456Alternating(b *testing.B) {
	k := k456Kernels(b)
	type pair struct {
		name     string
		nb       int
		bml, ref func()
	}
	var pairs []pair
	sink := float32(0)
	for fi := range k456Formats {
		f := &k456Formats[fi]
		w, a, nb := k456BenchData(f)
		refDot, refGen := f.refDot(k), f.refGeneric(k)
		y := make([]float32, nb*QK_K)
		refDeq := f.refDequant(k)
		pairs = append(pairs,
			pair{"VecDot" + f.name + "Q8_K", nb, func() { sink += f.dot(w, a, nb) }, func() { sink += refDot(nb*QK_K, w, a) }},
			pair{"VecDot" + f.name + "Q8_KGeneric", nb, func() { sink += f.generic(w, a, nb) }, func() { sink += refGen(nb*QK_K, w, a) }},
			pair{"DequantizeRow" + f.name, nb, func() { f.dequant(w, y) }, func() { refDeq(w, y) }},
		)
		if f.name == "Q4_K" {
			// The repacked gemv against its reference on eight rows.
			w8 := make([]byte, 0, 8*len(w))
			for range 8 {
				w8 = append(w8, w...)
			}
			vx := q4KTestRepack(w8, 8, nb)
			s := make([]float32, 8)
			pairs = append(pairs, pair{"RepackGemvQ4_KQ8_K(8 rows)", 8 * nb, func() {
				for i := range 8 {
					sink += RepackGemvQ4_KQ8_K(w8[i*len(w):(i+1)*len(w)], a, nb)
				}
			}, func() { k.GemvQ4_K8x8Q8_K(nb*QK_K, s, vx, a, 8) }})
		}
	}
	const batch = 10
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			var tb, tr, ratios []float64
			for b.Loop() {
				t0 := time.Now()
				for range batch {
					p.bml()
				}
				t1 := time.Now()
				for range batch {
					p.ref()
				}
				t2 := time.Now()
				nsb := float64(t1.Sub(t0).Nanoseconds()) / batch / float64(p.nb)
				nsr := float64(t2.Sub(t1).Nanoseconds()) / batch / float64(p.nb)
				tb, tr, ratios = append(tb, nsb), append(tr, nsr), append(ratios, nsb/nsr)
			}
			slices.Sort(tb)
			slices.Sort(tr)
			slices.Sort(ratios)
			b.ReportMetric(tb[len(tb)/2], "bankml-ns/block")
			b.ReportMetric(tr[len(tr)/2], "ref-ns/block")
			b.ReportMetric(ratios[0], "ratio-min")
			b.ReportMetric(ratios[len(ratios)/2], "ratio-med")
			b.ReportMetric(ratios[len(ratios)-1], "ratio-max")
		})
	}
	b.Run("RefCallOverhead", func(b *testing.B) {
		w, a, _ := k456BenchData(&k456Formats[0])
		for b.Loop() {
			sink += k.VecDotQ4_KQ8_K(0, w, a)
		}
	})
	_ = sink
}
