package quant

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync"

	"github.com/bankml/bankml/fmath"
)

// Q8_1 is the activation format of Q4_1 and Q5_1 weights (their
// vec_dot_type): Q8_0 plus s = d*Σq, which carries the weights' offset m
// through the dot product.
//
// Design record (this file, q4_1.go, q5.go: ggml's "legacy" formats Q4_1,
// Q5_0, Q5_1 and their activation Q8_1)
//
//   - Follows: ggml-quants.c (quantize_row_*_ref, dequantize_row_*, in
//     libggml-base.so), ggml-cpu/arch/x86/quants.c (quantize_row_q8_1 and
//     ggml_vec_dot_* of libggml-cpu-haswell.so), ggml-cpu/quants.c (the
//     exported *_generic scalar loops), llamafile/sgemm.cpp
//     (tinyBLAS_Q0_AVX<block_q5_0>), as GCC compiled them: read with
//     objdump, not only from the source.
//   - libggml-base.so is built for baseline x86-64: no FMA, so every multiply
//     and add of the _ref quantizers and the dequantizers rounds on its own;
//     its f16 conversion is the software ggml_compute_fp32_to_fp16 (NaN →
//     0x7e00 with the sign). Float-to-int casts are cvttss2si (truncation;
//     NaN and out-of-range values give INT32_MIN), then the low byte.
//   - The haswell library contracts what the source writes as separate
//     multiply and add: summs += m*s is one vfmadd231ss in
//     ggml_vec_dot_q4_1_q8_1 and ggml_vec_dot_q5_1_q8_1 (unobservable: an
//     f16×f16 product is exact in float32), and the _generic loops compute
//     sumf += fma(dx*dy, (float)sumi, m*s) (q4_1, q5_1) and sumf =
//     fma(dx*dy, (float)sumi, sumf) (q5_0) — observable: a source-order port
//     misses the last bit on 70-80% of 4096-long rows.
//   - Integer lane sums are formed in any order (they are exact: no
//     vpmaddubsw pair can saturate for these formats); the one integer quirk
//     kept is ggml_vec_dot_q5_0_q8_0's vpsignb trick, which turns an
//     activation of -128 against a negative weight into -128·|w| instead of
//     +128·|w|.

// QK8_1 is the number of values in a Q8_1 block.
const QK8_1 = 32

// BlockQ8_1Size is sizeof(block_q8_1): f16 d, f16 s (d times the sum of the
// 32 quants), then 32 int8 quants: 36 bytes.
const BlockQ8_1Size = 4 + QK8_1

// legacyCvtRNE is vroundps (nearest, ties to even) followed by vcvtps2dq:
// round half to even, NaN and out-of-range values giving math.MinInt32.
func legacyCvtRNE(f float32) int32 {
	return cvttss2si(float32(math.RoundToEven(float64(f))))
}

// legacyMaxPS is one lane of vmaxps/vmaxss with a as the first source: a
// when a > b, else b (so b whenever either is NaN).
func legacyMaxPS(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// legacySat8 is vpackssdw then vpacksswb on one int32: saturation to int8.
func legacySat8(v int32) int8 {
	return int8(max(-128, min(127, v)))
}

// QuantizeRowQ8_1 is quantize_row_q8_1 of the haswell variant (the
// activation quantizer of mul_mat for Q4_1 and Q5_1 weights): per block of
// 32, amax = max |x| reduced as the compiled vmaxps tree does (lane-wise
// over the four 8-value vectors, then halves, pairs, and the last two; a NaN
// loses against any later operand), d = amax/127 stored as f16, id = 127/amax
// (0 when amax is 0), q = round-half-even(x*id) as int32 (NaN or overflow:
// INT32_MIN), stored saturated to int8, and s = f16(d * float(Σq)), the sum
// taken over the unsaturated int32 quants with wrap-around. len(x) should be
// a multiple of 32 and dst needs len(x)/32*36 bytes; whole blocks that do not
// fit are not written.
func QuantizeRowQ8_1(x []float32, dst []byte) {
	nb := min(len(x)/QK8_1, len(dst)/BlockQ8_1Size)
	for b := range nb {
		quantizeBlockQ8_1((*[QK8_1]float32)(x[b*QK8_1:]), (*[BlockQ8_1Size]byte)(dst[b*BlockQ8_1Size:]))
	}
}

// quantizeBlockQ8_1 is one block of QuantizeRowQ8_1.
func quantizeBlockQ8_1(xb *[QK8_1]float32, out *[BlockQ8_1Size]byte) {
	// Without NaN the max of |x| is the max of the sign-cleared bit
	// patterns (a NaN pattern exceeds every other, and then the exact
	// vmaxps tree decides).
	var m0, m1, m2, m3 uint32
	for i := 0; i < QK8_1; i += 4 {
		m0 = max(m0, math.Float32bits(xb[i])&0x7fffffff)
		m1 = max(m1, math.Float32bits(xb[i+1])&0x7fffffff)
		m2 = max(m2, math.Float32bits(xb[i+2])&0x7fffffff)
		m3 = max(m3, math.Float32bits(xb[i+3])&0x7fffffff)
	}
	mb := max(max(m0, m1), max(m2, m3))
	amax := math.Float32frombits(mb)
	if mb > 0x7f800000 {
		amax = q8_1MaxTree(xb[:])
	}
	d := amax / 127
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	var sum int32
	for i, v := range xb {
		f := v * id
		var q int32
		if f > -1<<22 && f < 1<<22 {
			// Adding 1.5·2^23 leaves the integer part in the low mantissa
			// bits, rounded half to even by the addition itself.
			q = int32(math.Float32bits(f+0xc00000)&0x7fffff) - 0x400000
		} else {
			q = legacyCvtRNE(f)
		}
		sum += q
		if uint32(q+128) > 255 {
			q = int32(legacySat8(q))
		}
		out[4+i] = byte(q)
	}
	binary.LittleEndian.PutUint16(out[0:], softFP32ToFP16(d))
	binary.LittleEndian.PutUint16(out[2:], softFP32ToFP16(float32(sum)*d))
}

// q8_1MaxTree is the vmaxps reduction of quantize_row_q8_1 on one block of
// 32, exact for NaN operands: lane-wise over the four 8-value vectors
// (running max first), then high half against low, pairs, and the last two.
func q8_1MaxTree(xb []float32) float32 {
	xb = xb[:QK8_1]
	var m [8]float32
	for l := range 8 {
		r := absBits(xb[l])
		for v := 1; v < 4; v++ {
			r = legacyMaxPS(r, absBits(xb[8*v+l]))
		}
		m[l] = r
	}
	var h [4]float32
	for l := range 4 {
		h[l] = legacyMaxPS(m[4+l], m[l])
	}
	return legacyMaxPS(legacyMaxPS(h[0], h[2]), legacyMaxPS(h[1], h[3]))
}

// QuantizeRowQ8_1Ref is quantize_row_q8_1_ref of libggml-base.so (also the
// CPU library's quantize_row_q8_1_generic): per block of 32, amax = max |x|
// (amax > |x| ? amax : |x|, so a NaN is kept until the next value replaces
// it), d = amax/127 stored as f16, id = 1/d (0 when d is 0), q =
// (int8)roundf(x*id) with roundf rounding halves away from zero and the cast
// truncating through cvttss2si, and s = f16((float)Σq * d) over the stored
// int8 quants. Differs from QuantizeRowQ8_1 in id (1/d, not 127/amax), the
// rounding of halves and the int8 conversion. len(x) should be a multiple of
// 32 and dst needs len(x)/32*36 bytes.
func QuantizeRowQ8_1Ref(x []float32, dst []byte) {
	nb := min(len(x)/QK8_1, len(dst)/BlockQ8_1Size)
	for b := range nb {
		xb := x[b*QK8_1 : (b+1)*QK8_1]
		out := dst[b*BlockQ8_1Size : (b+1)*BlockQ8_1Size]
		var amax float32
		for _, v := range xb {
			amax = legacyMaxPS(amax, absBits(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var sum int32
		for i, v := range xb {
			q := int8(cvttss2si(float32(math.Round(float64(v * id)))))
			out[4+i] = byte(q)
			sum += int32(q)
		}
		binary.LittleEndian.PutUint16(out[0:], softFP32ToFP16(d))
		binary.LittleEndian.PutUint16(out[2:], softFP32ToFP16(float32(sum)*d))
	}
}

// The dot products of this family form each 4-element lane sum Σ x_i·y_i
// with one 64-bit multiply: the four x (reversed) and the four y sit as
// signed 16-bit fields of two uint64 (two's complement, modulo 2^64), so
// field 3 of the product is the lane sum, and fields 0..2 (|value| <
// 2^15 for |x| <= 31, |y| <= 128) are biased to non-negative so that no
// borrow reaches it.

// legacySpread4 places byte k of v in the 16-bit field k of the result.
func legacySpread4(v uint32) uint64 {
	t := uint64(v)
	t = (t | t<<16) & 0x0000ffff0000ffff
	return (t | t<<8) & 0x00ff00ff00ff00ff
}

// legacyActFields spreads the 32 int8 quants y of an activation block into
// eight uint64 of four signed 16-bit fields (lane j: y[4j..4j+3]).
func legacyActFields(y []byte, f *[8]uint64) {
	y = y[:32]
	for j := range 8 {
		f[j] = legacySpread4(binary.LittleEndian.Uint32(y[4*j:])^0x80808080) - 0x0080008000800080
	}
}

// legacyWeightField spreads four weight bytes (byte k = element k, values
// 0..31) in reverse order, then subtracts bias from every field.
func legacyWeightField(x4 uint32, bias uint64) uint64 {
	return legacySpread4(bits.ReverseBytes32(x4)) - bias*0x0001000100010001
}

// legacyLane4 is Σ x_i·y_i for the reversed weight field x and the
// activation field y (|x_i| <= 31, |y_i| <= 128).
func legacyLane4(x, y uint64) int32 {
	return int32(int64(x*y+0x0000800080008000) >> 48)
}

// legacyF16Table is ggml_table_f32_f16 (what GGML_CPU_FP16_TO_FP32 reads
// in the haswell library): FP16ToFP32 of every f16 bit pattern, built on
// first use (256 KiB).
var legacyF16Table = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for h := range t {
		t[h] = FP16ToFP32(uint16(h))
	}
	return t
})

// legacyFMA8 is acc[j] = fma(d, float(ls[j]), acc[j]) (vfmadd231ps) for
// the eight lanes, rounded once each: the float64 product is exact (24 + 15
// bits), and rounding the float64 sum to float32 is the single rounding of
// the exact sum unless that sum sits on a float32 midpoint or, non-zero,
// below float32's normal range (fmath.FMA32 takes those; a float64 sum of
// zero is exact, with IEEE's sign).
func legacyFMA8(d float32, ls *[8]int32, acc *[8]float32) {
	fd := float64(d)
	for j := range 8 {
		s := float64(fd*float64(ls[j])) + float64(acc[j])
		if u := math.Float64bits(s); u&(1<<29-1) == 1<<28 || u>>52&0x7ff < 1023-126 && u<<1 != 0 {
			acc[j] = fmath.FMA32(d, float32(ls[j]), acc[j])
			continue
		}
		acc[j] = float32(s)
	}
}
