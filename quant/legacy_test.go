package quant

// Oracle tests of Q4_1, Q5_0, Q5_1 and Q8_1 against the reference's exported
// kernels (internal/reference/kernels_legacy.go), bit for bit.

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
)

func legacyKernels(t testing.TB) *reference.Kernels {
	t.Helper()
	return familyKernels(t, (*reference.Kernels).LegacyErr)
}

// legacyTestRow returns a row of n values (a multiple of 32) of one of
// several kinds, chosen by trial: random mixed magnitudes, outliers,
// all-zero, constant blocks, halfway cases for every quantizer's rounding,
// subnormals, and values near the float32 limits (max-min overflows).
func legacyTestRow(r *rand.Rand, trial, n int) []float32 {
	x := randRow(r, n)
	switch trial % 10 {
	case 1: // outliers
		for range 1 + r.IntN(4) {
			x[r.IntN(n)] = float32(r.NormFloat64() * 1e4)
		}
	case 2: // all zero, with signed zeros
		for i := range x {
			x[i] = float32(math.Copysign(0, float64(r.IntN(2)*2-1)))
		}
	case 3: // constant blocks: max == min, d == 0
		c := float32(r.NormFloat64())
		for i := range x {
			x[i] = c
		}
	case 4: // halves: amax = 127·2^e, values (k+½)·2^e; codes on their rounding edges
		e := math.Pow(2, float64(r.IntN(20)-10))
		for b := 0; b < n; b += 32 {
			for i := b; i < b+32; i++ {
				x[i] = float32((float64(r.IntN(254)-127) + 0.5) * e)
			}
			x[b+r.IntN(32)] = float32(127 * e)
			x[b+r.IntN(32)] = float32(-16 * e * 4)
		}
	case 5: // subnormals and tiny values
		for i := range x {
			x[i] = math.Float32frombits(uint32(r.IntN(1<<24))) * float32(r.IntN(3)-1)
		}
	case 6: // near the float32 limits: max-min and sums overflow
		for i := range x {
			x[i] = float32((r.Float64()*2 - 1) * math.MaxFloat32)
		}
	case 7: // small integers (exact codes)
		for i := range x {
			x[i] = float32(r.IntN(31) - 15)
		}
	}
	return x
}

// legacyNonFiniteRow has NaN and ±Inf values scattered in a random row.
func legacyNonFiniteRow(r *rand.Rand, n int) []float32 {
	x := randRow(r, n)
	for range 1 + r.IntN(6) {
		switch r.IntN(3) {
		case 0:
			x[r.IntN(n)] = float32(math.NaN())
		case 1:
			x[r.IntN(n)] = float32(math.Inf(1))
		default:
			x[r.IntN(n)] = float32(math.Inf(-1))
		}
	}
	return x
}

// legacyQuantizer pairs a bankml quantizer with the reference's.
type legacyQuantizer struct {
	name   string
	bsize  int
	bankml func(x []float32, dst []byte)
	ref    func(k *reference.Kernels) func(x []float32, dst []byte)
}

var legacyQuantizers = []legacyQuantizer{
	{"quantize_row_q4_1_ref", BlockQ4_1Size, QuantizeRowQ4_1Ref, func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ4_1Ref }},
	{"quantize_row_q5_0_ref", BlockQ5_0Size, QuantizeRowQ5_0Ref, func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ5_0Ref }},
	{"quantize_row_q5_1_ref", BlockQ5_1Size, QuantizeRowQ5_1Ref, func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ5_1Ref }},
	{"quantize_row_q8_1_ref", BlockQ8_1Size, QuantizeRowQ8_1Ref, func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ8_1Ref }},
	{"quantize_row_q8_1 (haswell)", BlockQ8_1Size, QuantizeRowQ8_1, func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ8_1 }},
}

// TestLegacyQuantizeMatchesReference: every quantizer, 4000 rows of the
// kinds of legacyTestRow plus 500 rows holding NaN and ±Inf, equal bytes.
func TestLegacyQuantizeMatchesReference(t *testing.T) {
	k := legacyKernels(t)
	for _, q := range legacyQuantizers {
		t.Run(q.name, func(t *testing.T) {
			ref := q.ref(k)
			r := rand.New(rand.NewPCG(21, 22))
			rows, blocks, nonFinite := 0, 0, 0
			for trial := range 4500 {
				n := QK8_0 * (1 + r.IntN(8))
				var x []float32
				if trial < 4000 {
					x = legacyTestRow(r, trial, n)
				} else {
					x = legacyNonFiniteRow(r, n)
					nonFinite++
				}
				got := make([]byte, n/QK8_0*q.bsize)
				want := make([]byte, len(got))
				q.bankml(x, got)
				ref(x, want)
				if string(got) != string(want) {
					for b := 0; b < len(got); b += q.bsize {
						if string(got[b:b+q.bsize]) != string(want[b:b+q.bsize]) {
							t.Fatalf("trial %d block %d: bytes differ\n  x %v\ngot %x\nref %x", trial, b/q.bsize, x[b/q.bsize*32:b/q.bsize*32+32], got[b:b+q.bsize], want[b:b+q.bsize])
						}
					}
				}
				rows++
				blocks += n / QK8_0
			}
			t.Logf("%s: %d/%d rows (%d blocks; %d rows with NaN/Inf) byte-identical", q.name, rows, rows, blocks, nonFinite)
		})
	}
}

// TestLegacyDequantizeMatchesReference: every f16 value as d (and as m, in
// an independent order) over random codes, for Q4_1, Q5_0, Q5_1: equal f32
// bits, NaN and Inf scales included.
func TestLegacyDequantizeMatchesReference(t *testing.T) {
	k := legacyKernels(t)
	for _, c := range []struct {
		name   string
		bsize  int
		mOff   int // byte offset of m, or -1
		bankml func(src []byte, y []float32)
		ref    func(src []byte, y []float32)
	}{
		{"q4_1", BlockQ4_1Size, 2, DequantizeRowQ4_1, k.DequantizeRowQ4_1},
		{"q5_0", BlockQ5_0Size, -1, DequantizeRowQ5_0, k.DequantizeRowQ5_0},
		{"q5_1", BlockQ5_1Size, 2, DequantizeRowQ5_1, k.DequantizeRowQ5_1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(23, 24))
			const nb = 1 << 16
			src := make([]byte, nb*c.bsize)
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			perm := r.Perm(nb)
			for b := range nb {
				binary.LittleEndian.PutUint16(src[b*c.bsize:], uint16(b))
				if c.mOff >= 0 {
					binary.LittleEndian.PutUint16(src[b*c.bsize+c.mOff:], uint16(perm[b]))
				}
			}
			got, want := make([]float32, nb*QK8_0), make([]float32, nb*QK8_0)
			c.bankml(src, got)
			c.ref(src, want)
			for i := range got {
				if !bitsEq(got[i], want[i]) {
					b := i / QK8_0
					t.Fatalf("block %d (%x) value %d: %g (%#x), reference %g (%#x)", b, src[b*c.bsize:(b+1)*c.bsize], i%QK8_0, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
			t.Logf("%s: %d blocks, %d/%d values bit-identical (all 65,536 f16 scales)", c.name, nb, len(got), len(got))
		})
	}
}

// legacyRefDot binds a legacyDotCase to the reference's symbol.
func legacyRefDot(k *reference.Kernels, name string) func(n int, x, y []byte) float32 {
	switch name {
	case "q4_1_q8_1":
		return k.VecDotQ4_1Q8_1
	case "q4_1_q8_1_generic":
		return k.VecDotQ4_1Q8_1Generic
	case "q5_0_q8_0":
		return k.VecDotQ5_0Q8_0
	case "q5_0_q8_0_generic":
		return k.VecDotQ5_0Q8_0Generic
	case "q5_1_q8_1":
		return k.VecDotQ5_1Q8_1
	case "q5_1_q8_1_generic":
		return k.VecDotQ5_1Q8_1Generic
	}
	return nil
}

// TestLegacyVecDotsMatchReference: every dot product (haswell and
// _generic) against the reference symbol, over (a) weights quantized by the
// _ref quantizers from random rows and activations quantized as mul_mat
// does (quantize_row_q8_0 / quantize_row_q8_1), 1..64 blocks, and (b) random
// blocks with finite random scales (-128 activations included), 1..16 blocks;
// (a) also at real row lengths (4096, 11008, 12288 values).
func TestLegacyVecDotsMatchReference(t *testing.T) {
	k := legacyKernels(t)
	quantW := map[int]func([]float32, []byte){BlockQ4_1Size: QuantizeRowQ4_1Ref, BlockQ5_0Size: QuantizeRowQ5_0Ref, BlockQ5_1Size: QuantizeRowQ5_1Ref}
	quantA := map[int]func([]float32, []byte){BlockQ8_0Size: QuantizeRowQ8_0, BlockQ8_1Size: QuantizeRowQ8_1}
	for _, c := range legacyDotCases {
		t.Run(c.name, func(t *testing.T) {
			ref := legacyRefDot(k, c.name)
			r := rand.New(rand.NewPCG(25, 26))
			n, blocks := 0, 0
			check := func(kind string, w, a []byte, nb int) {
				got, want := c.fast(w, a, nb), ref(nb*QK8_0, w, a)
				if !bitsEq(got, want) {
					t.Fatalf("%s nb=%d: %g (%#x), reference %g (%#x)", kind, nb, got, math.Float32bits(got), want, math.Float32bits(want))
				}
				n++
				blocks += nb
			}
			for trial := range 3030 {
				nb := 1 + trial%64
				if trial >= 3000 { // real row lengths: 4096, 11008, 12288
					nb = []int{128, 344, 384}[trial%3]
				}
				w := make([]byte, nb*c.wSize)
				a := make([]byte, nb*c.aSize)
				kw, ka := trial, trial/10
				if kw%10 == 6 || ka%10 == 6 { // rows near the float32 limits: infinite scales
					kw, ka = 0, 0
				}
				quantW[c.wSize](legacyTestRow(r, kw, nb*QK8_0), w)
				quantA[c.aSize](legacyTestRow(r, ka, nb*QK8_0), a)
				check("quantized rows", w, a, nb)
			}
			for trial := range 3000 {
				nb := 1 + trial%16
				check("random blocks", legacyRandBlocks(r, nb, c.wSize, c.wScales...), legacyRandBlocks(r, nb, c.aSize, c.aScales...), nb)
			}
			t.Logf("%s: %d/%d dots (%d blocks) bit-identical to the reference", c.name, n, n, blocks)
		})
	}
}

// TestLegacyGenericDiffersFromHaswell counts the rows on which the AVX2
// kernel and the exported _generic loop disagree (two float orders, both
// modelled): evidence that each model is needed.
func TestLegacyGenericDiffersFromHaswell(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	pairs := []struct {
		name           string
		wSize, aSize   int
		quantW, quantA func([]float32, []byte)
		haswell, gen   func(w, a []byte, nb int) float32
	}{
		{"q4_1", BlockQ4_1Size, BlockQ8_1Size, QuantizeRowQ4_1Ref, QuantizeRowQ8_1, VecDotQ4_1Q8_1, VecDotQ4_1Q8_1Generic},
		{"q5_0", BlockQ5_0Size, BlockQ8_0Size, QuantizeRowQ5_0Ref, QuantizeRowQ8_0, VecDotQ5_0Q8_0, VecDotQ5_0Q8_0Generic},
		{"q5_1", BlockQ5_1Size, BlockQ8_1Size, QuantizeRowQ5_1Ref, QuantizeRowQ8_1, VecDotQ5_1Q8_1, VecDotQ5_1Q8_1Generic},
	}
	for _, p := range pairs {
		const rows, nb = 1000, 128
		diff := 0
		for range rows {
			w, a := make([]byte, nb*p.wSize), make([]byte, nb*p.aSize)
			p.quantW(randRow(r, nb*QK8_0), w)
			p.quantA(randRow(r, nb*QK8_0), a)
			if !bitsEq(p.haswell(w, a, nb), p.gen(w, a, nb)) {
				diff++
			}
		}
		t.Logf("%s: haswell and _generic differ on %d of %d rows of 4096", p.name, diff, rows)
	}
}

// legacyMatMulModel is the arithmetic ggml_compute_forward_mul_mat of the
// haswell variant takes for Q4_1, Q5_0, Q5_1 and BF16 weights (rows × cols)
// and n activation columns, as this package models it: the activations
// converted once per column (quantize_row_q8_1, quantize_row_q8_0,
// ggml_cpu_fp32_to_bf16), then per output Q4_1/Q5_1: vec_dot (no sgemm, no
// repack); Q5_0: vec_dot for n == 1 and tinyBLAS_Q0_AVX for n >= 2 (the same
// chain); BF16: tinyBLAS when n >= 2, cols%8 == 0 and rows%4 == 0, else
// vec_dot.
func legacyMatMulModel(typ gguf.GGMLType, rows, cols int, w []byte, x []float32, n int) []float32 {
	out := make([]float32, rows*n)
	nb := cols / QK8_0
	switch typ {
	case gguf.Q4_1, gguf.Q5_1:
		qb := nb * BlockQ8_1Size
		xq := make([]byte, n*qb)
		for j := range n {
			QuantizeRowQ8_1(x[j*cols:(j+1)*cols], xq[j*qb:])
		}
		dot, wb := VecDotQ4_1Q8_1, nb*BlockQ4_1Size
		if typ == gguf.Q5_1 {
			dot, wb = VecDotQ5_1Q8_1, nb*BlockQ5_1Size
		}
		for j := range n {
			for i := range rows {
				out[j*rows+i] = dot(w[i*wb:(i+1)*wb], xq[j*qb:(j+1)*qb], nb)
			}
		}
	case gguf.Q5_0:
		qb, wb := nb*BlockQ8_0Size, nb*BlockQ5_0Size
		xq := make([]byte, n*qb)
		for j := range n {
			QuantizeRowQ8_0(x[j*cols:(j+1)*cols], xq[j*qb:])
		}
		for j := range n {
			for i := range rows {
				out[j*rows+i] = VecDotQ5_0Q8_0(w[i*wb:(i+1)*wb], xq[j*qb:(j+1)*qb], nb)
			}
		}
	case gguf.BF16:
		xh := make([]uint16, n*cols)
		FP32ToBF16Row(x, xh)
		wh := uint16View(w)
		dot := VecDotBF16
		if n >= 2 && cols%8 == 0 && rows%4 == 0 {
			dot = TinyDotBF16
		}
		for j := range n {
			for i := range rows {
				out[j*rows+i] = dot(wh[i*cols:(i+1)*cols], xh[j*cols:(j+1)*cols])
			}
		}
	}
	return out
}

// TestLegacyMatMulPath runs ggml_mul_mat graphs in the reference (haswell
// CPU library, 1 and 2 threads) for Q4_1, Q5_0, Q5_1 and BF16 weights and
// 1, 2, 3, 4, 5, 8, 16 and 64 columns, over shapes that tinyBLAS accepts
// and refuses, and requires legacyMatMulModel to be bit-equal. For BF16 it
// also counts the outputs the other path (vec_dot vs tinyBLAS) would get
// wrong, showing the path is observable.
func TestLegacyMatMulPath(t *testing.T) {
	k := legacyKernels(t)
	r := rand.New(rand.NewPCG(29, 30))
	shapes := []struct{ rows, cols int }{{8, 256}, {12, 96}, {6, 128}, {5, 160}, {16, 4096}}
	bf16Shapes := []struct{ rows, cols int }{{8, 256}, {12, 96}, {6, 128}, {4, 100}, {7, 36}, {16, 4096}}
	cols := []int{1, 2, 3, 4, 5, 8, 16, 64}
	types := []struct {
		typ   gguf.GGMLType
		bsize int
		quant func([]float32, []byte)
	}{
		{gguf.Q4_1, BlockQ4_1Size, QuantizeRowQ4_1Ref},
		{gguf.Q5_0, BlockQ5_0Size, QuantizeRowQ5_0Ref},
		{gguf.Q5_1, BlockQ5_1Size, QuantizeRowQ5_1Ref},
		{gguf.BF16, 0, nil},
	}
	for _, tt := range types {
		t.Run(tt.typ.String(), func(t *testing.T) {
			outputs, graphs, otherPathDiffers, otherPathOutputs := 0, 0, 0, 0
			ss := shapes
			if tt.typ == gguf.BF16 {
				ss = bf16Shapes
			}
			for _, s := range ss {
				wf := randRow(r, s.rows*s.cols)
				var w []byte
				if tt.typ == gguf.BF16 {
					wh := make([]uint16, len(wf))
					FP32ToBF16Row(wf, wh)
					w = make([]byte, 2*len(wh))
					for i, h := range wh {
						binary.LittleEndian.PutUint16(w[2*i:], h)
					}
				} else {
					w = make([]byte, s.rows*s.cols/QK8_0*tt.bsize)
					tt.quant(wf, w)
				}
				for _, n := range cols {
					if s.cols >= 4096 && n > 8 {
						continue
					}
					x := randRow(r, n*s.cols)
					want := legacyMatMulModel(tt.typ, s.rows, s.cols, w, x, n)
					for _, threads := range []int{1, 2} {
						got, err := k.GraphMulMat(int32(tt.typ), s.rows, s.cols, w, x, n, threads)
						if err != nil {
							t.Fatal(err)
						}
						for i := range got {
							if !bitsEq(got[i], want[i]) {
								t.Fatalf("%dx%d, %d columns, %d threads: output %d (row %d, column %d): model %g (%#x), reference %g (%#x)",
									s.rows, s.cols, n, threads, i, i%s.rows, i/s.rows, want[i], math.Float32bits(want[i]), got[i], math.Float32bits(got[i]))
							}
						}
						graphs++
						outputs += len(got)
					}
					if tt.typ == gguf.BF16 && n >= 2 && s.cols%8 == 0 && s.rows%4 == 0 {
						xh := make([]uint16, len(x))
						FP32ToBF16Row(x, xh)
						wh := uint16View(w)
						for j := range n {
							for i := range s.rows {
								if !bitsEq(VecDotBF16(wh[i*s.cols:(i+1)*s.cols], xh[j*s.cols:(j+1)*s.cols]), want[j*s.rows+i]) {
									otherPathDiffers++
								}
								otherPathOutputs++
							}
						}
					}
				}
			}
			t.Logf("%s: %d graphs, %d/%d outputs bit-identical to ggml_mul_mat", tt.typ, graphs, outputs, outputs)
			if tt.typ == gguf.BF16 {
				t.Logf("bf16: ggml_vec_dot_bf16 instead of tinyBLAS would differ on %d of %d outputs", otherPathDiffers, otherPathOutputs)
			}
		})
	}
}

// legacySourceGeneric is a source-faithful reading of the _generic dot
// products: sumf += (dx*dy)*sumi + mx*sy with every product and sum rounded
// (withM false: sumf += (dx*dy)*sumi, the Q5_0 loop).
func legacySourceGeneric(w, a []byte, nb, wSize, aSize, qsOff, aQsOff int, withM bool, values func(wb []byte, x *[32]int32)) float32 {
	var sumf float32
	var x [32]int32
	for b := range nb {
		wb, ab := w[b*wSize:], a[b*aSize:]
		values(wb, &x)
		var sumi int32
		for i := range 32 {
			sumi += x[i] * int32(int8(ab[aQsOff+i]))
		}
		d := legacySpecF16(wb) * legacySpecF16(ab)
		v := float32(d * float32(sumi))
		if withM {
			v = v + float32(legacySpecF16(wb[2:])*legacySpecF16(ab[2:]))
		}
		sumf += v
	}
	return sumf
}

// TestLegacySourceFaithfulPortsDiffer counts, against the reference, how
// often a port that follows the C source's float order (no contraction)
// gets the last bit wrong — the evidence for the FMA contractions modelled
// in this family — and shows where a contraction is unobservable
// (summs += m*s: an f16×f16 product is exact in float32; bf16×bf16 products
// are exact unless they underflow).
func TestLegacySourceFaithfulPortsDiffer(t *testing.T) {
	k := legacyKernels(t)
	r := rand.New(rand.NewPCG(35, 36))
	const rows, nb = 500, 128
	q4v := func(wb []byte, x *[32]int32) {
		for i := range 16 {
			x[i], x[i+16] = int32(wb[4+i]&0xf), int32(wb[4+i]>>4)
		}
	}
	q5v := func(off, bias int) func(wb []byte, x *[32]int32) {
		return func(wb []byte, x *[32]int32) {
			var u [32]uint8
			q5Values(binary.LittleEndian.Uint32(wb[off:]), wb[off+4:], &u)
			for i := range 32 {
				x[i] = int32(u[i]) - int32(bias)
			}
		}
	}
	for _, c := range []struct {
		name         string
		wSize, aSize int
		quantW       func([]float32, []byte)
		quantA       func([]float32, []byte)
		source       func(w, a []byte, nb int) float32
		ref          func(n int, x, y []byte) float32
	}{
		{"ggml_vec_dot_q4_1_q8_1_generic", BlockQ4_1Size, BlockQ8_1Size, QuantizeRowQ4_1Ref, QuantizeRowQ8_1,
			func(w, a []byte, nb int) float32 {
				return legacySourceGeneric(w, a, nb, BlockQ4_1Size, BlockQ8_1Size, 4, 4, true, q4v)
			}, k.VecDotQ4_1Q8_1Generic},
		{"ggml_vec_dot_q5_0_q8_0_generic", BlockQ5_0Size, BlockQ8_0Size, QuantizeRowQ5_0Ref, QuantizeRowQ8_0,
			func(w, a []byte, nb int) float32 {
				return legacySourceGeneric(w, a, nb, BlockQ5_0Size, BlockQ8_0Size, 6, 2, false, q5v(2, 16))
			}, k.VecDotQ5_0Q8_0Generic},
		{"ggml_vec_dot_q5_1_q8_1_generic", BlockQ5_1Size, BlockQ8_1Size, QuantizeRowQ5_1Ref, QuantizeRowQ8_1,
			func(w, a []byte, nb int) float32 {
				return legacySourceGeneric(w, a, nb, BlockQ5_1Size, BlockQ8_1Size, 8, 4, true, q5v(4, 0))
			}, k.VecDotQ5_1Q8_1Generic},
		{"ggml_vec_dot_q4_1_q8_1 with summs += m*s unfused", BlockQ4_1Size, BlockQ8_1Size, QuantizeRowQ4_1Ref, QuantizeRowQ8_1,
			func(w, a []byte, nb int) float32 {
				// The haswell chain with the summs FMA split: equal, since m*s is exact.
				var summs float32
				for b := range nb {
					summs += float32(legacySpecF16(w[b*BlockQ4_1Size+2:]) * legacySpecF16(a[b*BlockQ8_1Size+2:]))
				}
				var acc [8]float32
				var ls [8]int32
				for b := range nb {
					wb, ab := w[b*BlockQ4_1Size:], a[b*BlockQ8_1Size:]
					q4_1LaneSums(wb[4:], ab[4:], &ls)
					d := legacySpecF16(wb) * legacySpecF16(ab)
					for j := range 8 {
						acc[j] = fmath.FMA32(d, float32(ls[j]), acc[j])
					}
				}
				return hsum8(&acc) + summs
			}, k.VecDotQ4_1Q8_1},
	} {
		diff := 0
		for range rows {
			w, a := make([]byte, nb*c.wSize), make([]byte, nb*c.aSize)
			c.quantW(randRow(r, nb*QK8_0), w)
			c.quantA(randRow(r, nb*QK8_0), a)
			if !bitsEq(c.source(w, a, nb), c.ref(nb*QK8_0, w, a)) {
				diff++
			}
		}
		t.Logf("%s: source order differs from the compiled code on %d of %d rows of %d", c.name, diff, rows, nb*QK8_0)
	}
	sourceBF16 := func(x, y []uint16) float32 {
		n := len(x)
		var c [4][8]float32
		i := 0
		for ; i+32 <= n; i += 32 {
			for kk := range 4 {
				for l := range 8 {
					c[kk][l] = float32(BF16ToFP32(x[i+8*kk+l])*BF16ToFP32(y[i+8*kk+l])) + c[kk][l]
				}
			}
		}
		var v [8]float32
		for l := range 8 {
			v[l] = (c[0][l] + c[2][l]) + (c[1][l] + c[3][l])
		}
		sumf := float64(hsum8(&v))
		for ; i < n; i++ {
			sumf += float64(float32(BF16ToFP32(x[i]) * BF16ToFP32(y[i])))
		}
		return float32(sumf)
	}
	for _, kind := range []struct {
		name  string
		trial int
	}{{"normal values", 0}, {"underflowing products", 3}} {
		diff := 0
		for range rows {
			x, y := bf16TestRow(r, kind.trial, 4096), bf16TestRow(r, kind.trial, 4096)
			if !bitsEq(sourceBF16(x, y), k.VecDotBF16(x, y)) {
				diff++
			}
		}
		t.Logf("ggml_vec_dot_bf16 (%s): source order (mul, then add) differs from the compiled FMA chain on %d of %d rows of 4096", kind.name, diff, rows)
	}
	// A constructed row: lane 0 holds 2^-125 (ulp 2^-148), then adds the
	// subnormal product 2^-149·(1+2^-7). Fused: above the midpoint, rounds
	// up to 2^-125+2^-148; mul then add: the product rounds to 2^-149 first,
	// the sum is a tie, and rounds to even (2^-125).
	x, y := make([]uint16, 64), make([]uint16, 64)
	x[0], y[0] = 0x2080, 0x2000   // 2^-62 · 2^-63
	x[32], y[32] = 0x1a01, 0x1a80 // 2^-75·(1+2^-7) · 2^-74
	ref, fused, source := k.VecDotBF16(x, y), VecDotBF16(x, y), sourceBF16(x, y)
	if !bitsEq(ref, fused) || bitsEq(ref, source) {
		t.Errorf("constructed bf16 row: reference %#x, bankml %#x, source order %#x", math.Float32bits(ref), math.Float32bits(fused), math.Float32bits(source))
	}
	t.Logf("ggml_vec_dot_bf16 (constructed row): reference %#x = bankml %#x, source order %#x", math.Float32bits(ref), math.Float32bits(fused), math.Float32bits(source))
}
