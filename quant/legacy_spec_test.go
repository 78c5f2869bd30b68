package quant

// Executable specifications of the Q4_1/Q5_0/Q5_1/Q8_1/BF16 kernels: each
// spec* function is a literal, instruction-by-instruction model of the
// reference's compiled code (the AVX2 intrinsics of arch/x86/quants.c and
// vec.cpp emulated lane by lane, with GCC's contractions where objdump shows
// them, and the C loops of the _generic and _ref functions). They are slow
// and obvious; the fast paths in q4_1.go, q5.go, q8_1.go and bf16.go are
// fuzzed against them here, and both are checked against the reference in
// legacy_test.go and bf16_test.go.

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/fmath"
)

type legacyYmmI8 [32]uint8
type legacyYmmF [8]float32

func legacySpecF16(b []byte) float32 { return FP16ToFP32(binary.LittleEndian.Uint16(b)) }

// legacySpecBytesFromNibbles32 is bytes_from_nibbles_32: the 16 bytes, and the
// same bytes shifted right by 4 as 16-bit words (_mm_srli_epi16), each
// masked with 0x0F.
func legacySpecBytesFromNibbles32(qs []byte) legacyYmmI8 {
	var r legacyYmmI8
	for k := range 8 {
		w := uint16(qs[2*k]) | uint16(qs[2*k+1])<<8
		r[2*k], r[2*k+1] = uint8(w)&0xf, uint8(w>>8)&0xf
		s := w >> 4
		r[16+2*k], r[16+2*k+1] = uint8(s)&0xf, uint8(s>>8)&0xf
	}
	return r
}

// legacySpecBytesFromBits32 is bytes_from_bits_32: x32 broadcast, vpshufb picking
// byte i/8 for byte i, OR with 0x7fbfdfeff7fbfdfe, compared with all-ones.
func legacySpecBytesFromBits32(qh []byte) legacyYmmI8 {
	const bitMask = 0x7fbfdfeff7fbfdfe
	var r legacyYmmI8
	for i := range 32 {
		b := qh[i/8] | uint8(uint64(bitMask)>>(8*(i%8)))
		if b == 0xff {
			r[i] = 0xff
		}
	}
	return r
}

// legacySpecMulSumUS8PairsFloat is mul_sum_us8_pairs_float without VNNI:
// vpmaddubsw (unsigned ax × signed sy, pairs summed with int16 saturation),
// vpmaddwd with ones, vcvtdq2ps.
func legacySpecMulSumUS8PairsFloat(ax, sy legacyYmmI8) legacyYmmF {
	var p [16]int32
	for i := range 16 {
		p[i] = maddubsPair(ax[2*i], ax[2*i+1], int8(sy[2*i]), int8(sy[2*i+1]))
	}
	var r legacyYmmF
	for j := range 8 {
		r[j] = float32(p[2*j] + p[2*j+1])
	}
	return r
}

// legacySpecMulSumI8PairsFloat is mul_sum_i8_pairs_float without AVX-VNNI-INT8:
// vpsignb(x, x), vpsignb(y, x), then legacySpecMulSumUS8PairsFloat.
func legacySpecMulSumI8PairsFloat(x, y legacyYmmI8) legacyYmmF {
	var ax, sy legacyYmmI8
	for i := range 32 {
		ax[i] = uint8(signEpi8(int8(x[i]), int8(x[i])))
		sy[i] = uint8(signEpi8(int8(y[i]), int8(x[i])))
	}
	return legacySpecMulSumUS8PairsFloat(ax, sy)
}

// legacySpecHsumFloat8 is hsum_float_8 and llamafile's hsum(__m256), operation by
// operation: high+low, + movehl, + movehdup (scalar).
func legacySpecHsumFloat8(x legacyYmmF) float32 {
	var res [4]float32
	for l := range 4 {
		res[l] = x[4+l] + x[l]
	}
	r0, r1 := res[0]+res[2], res[1]+res[3]
	return r0 + r1
}

// legacySpecVecDotQ4_1Q8_1 is ggml_vec_dot_q4_1_q8_1's __AVX2__ branch, with
// summs += m*s compiled to vfmadd231ss.
func legacySpecVecDotQ4_1Q8_1(w, a []byte, nb int) float32 {
	var acc legacyYmmF
	var summs float32
	for ib := range nb {
		x, y := w[ib*BlockQ4_1Size:], a[ib*BlockQ8_1Size:]
		d0, d1 := legacySpecF16(x[0:]), legacySpecF16(y[0:])
		summs = fmath.FMA32(legacySpecF16(x[2:]), legacySpecF16(y[2:]), summs)
		d0d1 := d0 * d1
		qx := legacySpecBytesFromNibbles32(x[4:])
		var qy legacyYmmI8
		copy(qy[:], y[4:36])
		xy := legacySpecMulSumUS8PairsFloat(qx, qy)
		for l := range 8 {
			acc[l] = fmath.FMA32(d0d1, xy[l], acc[l])
		}
	}
	return legacySpecHsumFloat8(acc) + summs
}

// legacySpecVecDotQ5_0Q8_0 is ggml_vec_dot_q5_0_q8_0's __AVX2__ branch (and, per
// output, tinyBLAS_Q0_AVX<block_q5_0>'s gemm: fmadd(set1(da*db), updot(...))).
func legacySpecVecDotQ5_0Q8_0(w, a []byte, nb int) float32 {
	var acc legacyYmmF
	for ib := range nb {
		x, y := w[ib*BlockQ5_0Size:], a[ib*BlockQ8_0Size:]
		d := legacySpecF16(x[0:]) * legacySpecF16(y[0:])
		qx := legacySpecBytesFromNibbles32(x[6:])
		bxhi := legacySpecBytesFromBits32(x[2:6])
		for i := range 32 {
			qx[i] |= ^bxhi[i] & 0xf0
		}
		var qy legacyYmmI8
		copy(qy[:], y[2:34])
		q := legacySpecMulSumI8PairsFloat(qx, qy)
		for l := range 8 {
			acc[l] = fmath.FMA32(d, q[l], acc[l])
		}
	}
	return legacySpecHsumFloat8(acc)
}

// legacySpecVecDotQ5_1Q8_1 is ggml_vec_dot_q5_1_q8_1's __AVX2__ branch, with
// summs += m*s compiled to vfmadd231ss.
func legacySpecVecDotQ5_1Q8_1(w, a []byte, nb int) float32 {
	var acc legacyYmmF
	var summs float32
	for ib := range nb {
		x, y := w[ib*BlockQ5_1Size:], a[ib*BlockQ8_1Size:]
		dx := legacySpecF16(x[0:])
		summs = fmath.FMA32(legacySpecF16(x[2:]), legacySpecF16(y[2:]), summs)
		qx := legacySpecBytesFromNibbles32(x[8:])
		bxhi := legacySpecBytesFromBits32(x[4:8])
		for i := range 32 {
			qx[i] |= bxhi[i] & 0x10
		}
		dy := legacySpecF16(y[0:])
		var qy legacyYmmI8
		copy(qy[:], y[4:36])
		q := legacySpecMulSumUS8PairsFloat(qx, qy)
		dxdy := dx * dy
		for l := range 8 {
			acc[l] = fmath.FMA32(q[l], dxdy, acc[l])
		}
	}
	return legacySpecHsumFloat8(acc) + summs
}

// legacySpecVecDotQ4_1Q8_1Generic is ggml_vec_dot_q4_1_q8_1_generic's C loop,
// with the contraction GCC emitted: sumf += fma(dx*dy, sumi, mx*sy).
func legacySpecVecDotQ4_1Q8_1Generic(w, a []byte, nb int) float32 {
	var sumf float32
	for ib := range nb {
		x, y := w[ib*BlockQ4_1Size:], a[ib*BlockQ8_1Size:]
		var sumi0, sumi1 int32
		for j := range 16 {
			v0 := int32(x[4+j] & 0x0f)
			v1 := int32(x[4+j] >> 4)
			sumi0 += v0 * int32(int8(y[4+j]))
			sumi1 += v1 * int32(int8(y[4+j+16]))
		}
		sumi := sumi0 + sumi1
		sumf += fmath.FMA32(legacySpecF16(x[0:])*legacySpecF16(y[0:]), float32(sumi), legacySpecF16(x[2:])*legacySpecF16(y[2:]))
	}
	return sumf
}

// legacySpecVecDotQ5_0Q8_0Generic is ggml_vec_dot_q5_0_q8_0_generic's C loop:
// sumf = fma(dx*dy, sumi, sumf).
func legacySpecVecDotQ5_0Q8_0Generic(w, a []byte, nb int) float32 {
	var sumf float32
	for ib := range nb {
		x, y := w[ib*BlockQ5_0Size:], a[ib*BlockQ8_0Size:]
		qh := binary.LittleEndian.Uint32(x[2:])
		var sumi0, sumi1 int32
		for j := range 16 {
			xh0 := uint8(((qh & (1 << (j + 0))) >> (j + 0)) << 4)
			xh1 := uint8((qh & (1 << (j + 16))) >> (j + 12))
			x0 := int32(int8(((x[6+j] & 0x0f) | xh0) - 16))
			x1 := int32(int8(((x[6+j] >> 4) | xh1) - 16))
			sumi0 += x0 * int32(int8(y[2+j]))
			sumi1 += x1 * int32(int8(y[2+j+16]))
		}
		sumi := sumi0 + sumi1
		sumf = fmath.FMA32(legacySpecF16(x[0:])*legacySpecF16(y[0:]), float32(sumi), sumf)
	}
	return sumf
}

// legacySpecVecDotQ5_1Q8_1Generic is ggml_vec_dot_q5_1_q8_1_generic's C loop:
// sumf += fma(dx*dy, sumi, mx*sy).
func legacySpecVecDotQ5_1Q8_1Generic(w, a []byte, nb int) float32 {
	var sumf float32
	for ib := range nb {
		x, y := w[ib*BlockQ5_1Size:], a[ib*BlockQ8_1Size:]
		qh := binary.LittleEndian.Uint32(x[4:])
		var sumi0, sumi1 int32
		for j := range 16 {
			xh0 := uint8((qh>>(j+0))<<4) & 0x10
			xh1 := uint8(qh>>(j+12)) & 0x10
			x0 := int32(x[8+j]&0xf | xh0)
			x1 := int32(x[8+j]>>4 | xh1)
			sumi0 += x0 * int32(int8(y[4+j]))
			sumi1 += x1 * int32(int8(y[4+j+16]))
		}
		sumi := sumi0 + sumi1
		sumf += fmath.FMA32(legacySpecF16(x[0:])*legacySpecF16(y[0:]), float32(sumi), legacySpecF16(x[2:])*legacySpecF16(y[2:]))
	}
	return sumf
}

// legacySpecQuantizeRowQ8_1 is quantize_row_q8_1's __AVX2__ branch: vmaxps tree,
// vdivss, vroundps/vcvtps2dq, hsum_i32_8, vpackssdw/vpacksswb per 128-bit
// lane and the vpermd that restores the order.
func legacySpecQuantizeRowQ8_1(x []float32, dst []byte) {
	for ib := range len(x) / QK8_1 {
		var v [4]legacyYmmF
		for k := range 4 {
			copy(v[k][:], x[ib*32+8*k:])
		}
		var maxAbs legacyYmmF
		for l := range 8 {
			maxAbs[l] = absBits(v[0][l])
		}
		for k := 1; k < 4; k++ {
			for l := range 8 {
				a := absBits(v[k][l])
				if !(maxAbs[l] > a) { // vmaxps: first operand only when it is greater
					maxAbs[l] = a
				}
			}
		}
		var max4 [4]float32
		for l := range 4 {
			max4[l] = legacyMaxPS(maxAbs[4+l], maxAbs[l])
		}
		m0, m1 := legacyMaxPS(max4[0], max4[2]), legacyMaxPS(max4[1], max4[3])
		maxScalar := legacyMaxPS(m0, m1)
		d := maxScalar / 127
		out := dst[ib*BlockQ8_1Size:]
		binary.LittleEndian.PutUint16(out, softFP32ToFP16(d))
		var id float32
		if maxScalar != 0 {
			id = 127 / maxScalar
		}
		var iv [4][8]int32
		for k := range 4 {
			for l := range 8 {
				iv[k][l] = legacyCvtRNE(v[k][l] * id)
			}
		}
		var s int32
		for l := range 8 {
			s += (iv[0][l] + iv[1][l]) + (iv[2][l] + iv[3][l])
		}
		binary.LittleEndian.PutUint16(out[2:], softFP32ToFP16(d*float32(s)))
		sat16 := func(v int32) int16 { return int16(max(-32768, min(32767, v))) }
		sat8 := func(v int16) int8 { return int8(max(-128, min(127, v))) }
		// _mm256_packs_epi32 per 128-bit lane.
		packs32 := func(a, b [8]int32) (r [16]int16) {
			for h := range 2 {
				for i := range 4 {
					r[8*h+i] = sat16(a[4*h+i])
					r[8*h+4+i] = sat16(b[4*h+i])
				}
			}
			return r
		}
		i0, i2 := packs32(iv[0], iv[1]), packs32(iv[2], iv[3])
		var b8 [32]int8
		for h := range 2 {
			for i := range 8 {
				b8[16*h+i] = sat8(i0[8*h+i])
				b8[16*h+8+i] = sat8(i2[8*h+i])
			}
		}
		perm := [8]int{0, 4, 1, 5, 2, 6, 3, 7}
		for dw := range 8 {
			for bi := range 4 {
				out[4+4*dw+bi] = byte(b8[4*perm[dw]+bi])
			}
		}
	}
}

// legacySpecVecDotBF16 is ggml_vec_dot_bf16's AVX2 branch, the add(mul) pairs
// compiled to vfmadd231ps, then the scalar tail in double.
func legacySpecVecDotBF16(x, y []uint16) float32 {
	n := len(x)
	i := 0
	var sumf float64
	var c1, c2, c3, c4 legacyYmmF
	load := func(p []uint16) (r legacyYmmF) {
		for l := range 8 {
			r[l] = math.Float32frombits(uint32(p[l]) << 16)
		}
		return r
	}
	for ; i+32 <= n; i += 32 {
		for k, c := range []*legacyYmmF{&c1, &c2, &c3, &c4} {
			xv, yv := load(x[i+8*k:]), load(y[i+8*k:])
			for l := range 8 {
				c[l] = fmath.FMA32(xv[l], yv[l], c[l])
			}
		}
	}
	var t legacyYmmF
	for l := range 8 {
		t[l] = (c1[l] + c3[l]) + (c2[l] + c4[l])
	}
	sumf += float64(legacySpecHsumFloat8(t))
	for ; i < n; i++ {
		sumf += float64(float32(BF16ToFP32(x[i]) * BF16ToFP32(y[i])))
	}
	return float32(sumf)
}

// legacySpecTinyDotBF16 is tinyBLAS<8, __m256, __m256, ggml_bf16_t, ...>::gemm_bloc
// for one output: Cv = madd(load(A), load(B), Cv) from zero, then hsum.
func legacySpecTinyDotBF16(x, y []uint16) float32 {
	var cv legacyYmmF
	for l := 0; l < len(x); l += 8 {
		for j := range 8 {
			cv[j] = fmath.FMA32(BF16ToFP32(x[l+j]), BF16ToFP32(y[l+j]), cv[j])
		}
	}
	return legacySpecHsumFloat8(cv)
}

// legacyRandF16 draws a finite f16 scale of mixed magnitude and sign:
// zeros, subnormals and normals up to 2^8.
func legacyRandF16(r *rand.Rand) uint16 {
	switch r.IntN(16) {
	case 0:
		return uint16(r.IntN(2)) << 15 // ±0
	case 1:
		return uint16(r.IntN(2))<<15 | uint16(1+r.IntN(0x3ff)) // subnormal
	}
	return FP32ToFP16(float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(24)-16))))
}

// legacyRandBlocks fills nb blocks of size bs with random bytes, then
// writes finite f16 values at the given byte offsets of each block (its
// scales). A fraction of the int8 bytes are set to the extremes -128/127.
func legacyRandBlocks(r *rand.Rand, nb, bs int, scaleOffs ...int) []byte {
	b := make([]byte, nb*bs)
	for i := range b {
		switch r.IntN(16) {
		case 0:
			b[i] = 0x80
		case 1:
			b[i] = 0x7f
		default:
			b[i] = byte(r.Uint32())
		}
	}
	for ib := range nb {
		for _, off := range scaleOffs {
			binary.LittleEndian.PutUint16(b[ib*bs+off:], legacyRandF16(r))
		}
	}
	return b
}

// legacyDotCase is one kernel under test: its block sizes, where the f16
// scales sit in the weight and activation blocks, the fast path, its spec,
// and (in legacy_test.go) the reference symbol.
type legacyDotCase struct {
	name         string
	wSize, aSize int
	wScales      []int
	aScales      []int
	fast, spec   func(w, a []byte, nb int) float32
}

var legacyDotCases = []legacyDotCase{
	{"q4_1_q8_1", BlockQ4_1Size, BlockQ8_1Size, []int{0, 2}, []int{0, 2}, VecDotQ4_1Q8_1, legacySpecVecDotQ4_1Q8_1},
	{"q4_1_q8_1_generic", BlockQ4_1Size, BlockQ8_1Size, []int{0, 2}, []int{0, 2}, VecDotQ4_1Q8_1Generic, legacySpecVecDotQ4_1Q8_1Generic},
	{"q5_0_q8_0", BlockQ5_0Size, BlockQ8_0Size, []int{0}, []int{0}, VecDotQ5_0Q8_0, legacySpecVecDotQ5_0Q8_0},
	{"q5_0_q8_0_generic", BlockQ5_0Size, BlockQ8_0Size, []int{0}, []int{0}, VecDotQ5_0Q8_0Generic, legacySpecVecDotQ5_0Q8_0Generic},
	{"q5_1_q8_1", BlockQ5_1Size, BlockQ8_1Size, []int{0, 2}, []int{0, 2}, VecDotQ5_1Q8_1, legacySpecVecDotQ5_1Q8_1},
	{"q5_1_q8_1_generic", BlockQ5_1Size, BlockQ8_1Size, []int{0, 2}, []int{0, 2}, VecDotQ5_1Q8_1Generic, legacySpecVecDotQ5_1Q8_1Generic},
}

// TestLegacyFastPathsMatchSpec: random blocks (every byte pattern, -128
// activations included, finite scales), 1..16 blocks, fast path == spec bit
// for bit.
func TestLegacyFastPathsMatchSpec(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range legacyDotCases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			for trial := range 20000 {
				nb := 1 + trial%16
				w := legacyRandBlocks(r, nb, c.wSize, c.wScales...)
				a := legacyRandBlocks(r, nb, c.aSize, c.aScales...)
				got, want := c.fast(w, a, nb), c.spec(w, a, nb)
				if !bitsEq(got, want) {
					t.Fatalf("trial %d nb=%d: fast %g (%#x), spec %g (%#x)", trial, nb, got, math.Float32bits(got), want, math.Float32bits(want))
				}
				n++
			}
			t.Logf("%s: %d/%d dots equal to the spec", c.name, n, n)
		})
	}
}

// TestLegacyQ5_0SignQuirk: an activation of -128 against a negative Q5_0
// weight is where the AVX2 kernel (vpsignb) and the generic loop part: the
// spec, the fast path and the generic model must each keep their side.
func TestLegacyQ5_0SignQuirk(t *testing.T) {
	w := make([]byte, BlockQ5_0Size)
	a := make([]byte, BlockQ8_0Size)
	binary.LittleEndian.PutUint16(w, FP32ToFP16(1))
	binary.LittleEndian.PutUint16(a, FP32ToFP16(1))
	// Element 0: code 0 (weight -16); every other weight code 16 (weight 0).
	binary.LittleEndian.PutUint32(w[2:], 0xfffffffe)
	a[2] = 0x80 // activation -128
	for _, tc := range []struct {
		name string
		f    func(w, a []byte, nb int) float32
		want float32
	}{
		{"VecDotQ5_0Q8_0", VecDotQ5_0Q8_0, -2048},
		{"legacySpecVecDotQ5_0Q8_0", legacySpecVecDotQ5_0Q8_0, -2048},
		{"VecDotQ5_0Q8_0Generic", VecDotQ5_0Q8_0Generic, 2048},
		{"legacySpecVecDotQ5_0Q8_0Generic", legacySpecVecDotQ5_0Q8_0Generic, 2048},
	} {
		if got := tc.f(w, a, 1); got != tc.want {
			t.Errorf("%s = %g, want %g", tc.name, got, tc.want)
		}
	}
}

func TestLegacyBF16FastPathsMatchSpec(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	n := 0
	for trial := range 5000 {
		k := trial % 300
		x, y := make([]uint16, k), make([]uint16, k)
		FP32ToBF16Row(randRow(r, k), x)
		FP32ToBF16Row(randRow(r, k), y)
		if got, want := VecDotBF16(x, y), legacySpecVecDotBF16(x, y); !bitsEq(got, want) {
			t.Fatalf("VecDotBF16 n=%d: %g, spec %g", k, got, want)
		}
		k8 := k &^ 7
		if got, want := TinyDotBF16(x[:k8], y[:k8]), legacySpecTinyDotBF16(x[:k8], y[:k8]); !bitsEq(got, want) {
			t.Fatalf("TinyDotBF16 n=%d: %g, spec %g", k8, got, want)
		}
		n += 2
	}
	t.Logf("bf16: %d/%d dots equal to the spec", n, n)
}

func TestLegacyQuantizeRowQ8_1MatchesSpec(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for trial := range 3000 {
		x := legacyTestRow(r, trial, QK8_1*(1+r.IntN(8)))
		got := make([]byte, len(x)/QK8_1*BlockQ8_1Size)
		want := make([]byte, len(got))
		QuantizeRowQ8_1(x, got)
		legacySpecQuantizeRowQ8_1(x, want)
		if string(got) != string(want) {
			t.Fatalf("trial %d: QuantizeRowQ8_1 differs from its spec\n got %x\nwant %x", trial, got, want)
		}
	}
}

// FuzzVecDotLegacy: arbitrary bytes as one weight block and one activation
// block of every format (scales included, so NaN and Inf scales too: NaN
// results compare as NaN).
func FuzzVecDotLegacy(f *testing.F) {
	r := rand.New(rand.NewPCG(17, 18))
	for range 8 {
		f.Add(legacyRandBlocks(r, 1, 64), legacyRandBlocks(r, 1, 64))
	}
	f.Fuzz(func(t *testing.T, w, a []byte) {
		if len(w) < BlockQ5_1Size || len(a) < BlockQ8_1Size {
			return
		}
		for _, c := range legacyDotCases {
			got, want := c.fast(w, a, 1), c.spec(w, a, 1)
			if !bitsEq(got, want) && !(got != got && want != want) {
				t.Fatalf("%s: fast %g (%#x), spec %g (%#x)", c.name, got, math.Float32bits(got), want, math.Float32bits(want))
			}
		}
	})
}
