package quant

import (
	"encoding/binary"
	"math"

	"github.com/bankml/bankml/fmath"
)

// QK8_0 is the number of weights in a Q8_0 (and Q4_0) block.
const QK8_0 = 32

// BlockQ8_0Size is sizeof(block_q8_0): f16 d followed by 32 int8 qs.
const BlockQ8_0Size = 2 + QK8_0

// BlockQ4_0Size is sizeof(block_q4_0): f16 d followed by 16 bytes of nibbles
// (element i < 16 in the low nibble of qs[i], element i+16 in its high nibble).
const BlockQ4_0Size = 2 + QK8_0/2

// QuantizeRowQ8_0 is quantize_row_q8_0 of the haswell variant: per block of 32,
// amax = max |x| as the compiled vmaxps tree forms it (q8_0Amax), d =
// amax/127 stored as f16 by ggml's software conversion (softFP32ToFP16: the
// haswell build does not use vcvtps2ph here), id = 127/amax (0 when amax is
// 0), q = round-half-even(x*id). len(x) must be a multiple of 32; dst needs
// len(x)/32*34 bytes.
func QuantizeRowQ8_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/QK8_0; b++ {
		xb := x[b*QK8_0 : (b+1)*QK8_0]
		out := dst[b*BlockQ8_0Size : (b+1)*BlockQ8_0Size]
		amax := q8_0Amax((*[QK8_0]float32)(xb))
		d := amax / 127
		binary.LittleEndian.PutUint16(out, softFP32ToFP16(d))
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for i, v := range xb {
			out[2+i] = byte(cvtpsPacks(v * id))
		}
	}
}

// QuantizeRowQ4_0 is quantize_row_q4_0, the from_float of ggml-cpu's Q4_0
// traits (ggml-cpu/quants.c), which calls quantize_row_q4_0_ref
// (ggml-quants.c) as libggml-base.so compiles it (SSE2, no FMA): per block of
// 32 the value of largest magnitude max (the first one strictly larger
// than those before it; a NaN is never chosen), d = max/-8 stored as f16 by
// ggml's software conversion (NaN: 0x7e00 with d's sign), id = 1/d (0 when d
// is 0), and element j's nibble min(15, int8(trunc(x*id + 8.5))) — both
// products rounded, the truncation cvttps2dq's (NaN and values outside
// int32 give 0x80000000) keeping its low byte, the minimum a signed one —
// with element j < 16 in the low nibble of qs[j] and element j+16 shifted
// into its high nibble (OR-ed: a negative low value keeps its high bits).
// len(x) must be a multiple of 32; dst needs len(x)/32*18 bytes.
func QuantizeRowQ4_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/QK8_0; b++ {
		xb := x[b*QK8_0 : (b+1)*QK8_0]
		out := dst[b*BlockQ4_0Size : (b+1)*BlockQ4_0Size]
		var amax, mx float32
		for _, v := range xb {
			if a := absBits(v); a > amax {
				amax, mx = a, v
			}
		}
		d := mx / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(out, softFP32ToFP16(d))
		for j := range QK8_0 / 2 {
			x0 := float32(xb[j]*id) + 8.5
			x1 := float32(xb[QK8_0/2+j]*id) + 8.5
			out[2+j] = q4Nibble(x0) | q4Nibble(x1)<<4
		}
	}
}

// q4Nibble is quantize_row_q4_0_ref's MIN(15, (int8_t)f) as compiled:
// cvttps2dq, the low byte as int8, a signed minimum with 15.
func q4Nibble(f float32) uint8 {
	t := int32(math.MinInt32)
	if f == f && f < 0x1p31 && f >= -0x1p31 {
		t = int32(f)
	}
	return uint8(min(15, int8(t)))
}

// maxps is one lane of x86's maxps(a, b): a when a > b, else b (so b when
// either is NaN).
func maxps(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// q8_0Amax is the max |x| of quantize_row_q8_0 as compiled: lane l of
// max(max(max(|x0|, |x1|), |x2|), |x3|) over the four 8-wide vectors, then
// max(hi, lo), max(lanes 0,1, lanes 2,3), max_ss(lane 0, lane 1), with
// maxps's operand order (a NaN in a second operand survives).
func q8_0Amax(x *[QK8_0]float32) float32 {
	var m [8]float32
	for l := range 8 {
		m[l] = maxps(maxps(maxps(absBits(x[l]), absBits(x[8+l])), absBits(x[16+l])), absBits(x[24+l]))
	}
	h0, h1, h2, h3 := maxps(m[4], m[0]), maxps(m[5], m[1]), maxps(m[6], m[2]), maxps(m[7], m[3])
	return maxps(maxps(h0, h2), maxps(h1, h3))
}

// cvtpsPacks is what the AVX2 quantizer does with one scaled value: vroundps
// to nearest even, vcvtps2dq (NaN, ±Inf and values outside int32 become
// 0x80000000), then vpackssdw and vpacksswb saturating to int8. A block whose
// 127/amax overflows to +Inf (amax below ~3.7e-37) therefore stores -128 for
// every value, as the reference does.
func cvtpsPacks(f float32) int8 {
	if f != f || f >= 0x1p31 || f < -0x1p31 {
		return -128
	}
	q := int32(math.RoundToEven(float64(f)))
	return int8(max(-128, min(127, q)))
}

// DequantizeRowQ8_0 is dequantize_row_q8_0: y = q*d per block.
func DequantizeRowQ8_0(src []byte, y []float32) {
	for b := 0; b < len(y)/QK8_0; b++ {
		blk := src[b*BlockQ8_0Size:]
		d := FP16ToFP32(binary.LittleEndian.Uint16(blk))
		for i := range QK8_0 {
			y[b*QK8_0+i] = float32(int8(blk[2+i])) * d
		}
	}
}

// DequantizeRowQ4_0 is dequantize_row_q4_0: y = (nibble-8)*d per block.
func DequantizeRowQ4_0(src []byte, y []float32) {
	for b := 0; b < len(y)/QK8_0; b++ {
		blk := src[b*BlockQ4_0Size:]
		d := FP16ToFP32(binary.LittleEndian.Uint16(blk))
		for i := range QK8_0 / 2 {
			q := blk[2+i]
			y[b*QK8_0+i] = float32(int32(q&0xf)-8) * d
			y[b*QK8_0+i+16] = float32(int32(q>>4)-8) * d
		}
	}
}

// maddubsPair is one int16 lane of vpmaddubsw: u0*s0 + u1*s1 with signed
// saturation.
func maddubsPair(u0, u1 uint8, s0, s1 int8) int32 {
	v := int32(u0)*int32(s0) + int32(u1)*int32(s1)
	return max(-32768, min(32767, v))
}

// signEpi8 is vpsignb: a negated where b < 0, zeroed where b == 0.
func signEpi8(a, b int8) int8 {
	switch {
	case b < 0:
		return -a
	case b == 0:
		return 0
	}
	return a
}

// laneSums8 computes the eight int32 lanes of mul_sum_i8_pairs_float(x, y)
// (vpsignb, vpmaddubsw, vpmaddwd with ones): lane j sums products 4j..4j+3.
func laneSums8(x, y *[32]int8, out *[8]int32) {
	for j := range 8 {
		var s int32
		for p := 0; p < 4; p += 2 {
			i := 4*j + p
			ax0, ax1 := signEpi8(x[i], x[i]), signEpi8(x[i+1], x[i+1])
			s += maddubsPair(uint8(ax0), uint8(ax1), signEpi8(y[i], x[i]), signEpi8(y[i+1], x[i+1]))
		}
		out[j] = s
	}
}

// VecDotQ8_0Q8_0 is ggml_vec_dot_q8_0_q8_0 of the haswell variant, and equally
// one output of tinyBLAS_Q0_AVX<block_q8_0>: per block d = dx*dy (rounded),
// eight lanes acc[j] = fma(d, lane sum j, acc[j]), then hsum. w and a hold nb
// blocks each.
func VecDotQ8_0Q8_0(w, a []byte, nb int) float32 {
	var acc [8]float32
	var x, y [32]int8
	var ls [8]int32
	for b := range nb {
		wb, ab := w[b*BlockQ8_0Size:], a[b*BlockQ8_0Size:]
		d := FP16ToFP32(binary.LittleEndian.Uint16(wb)) * FP16ToFP32(binary.LittleEndian.Uint16(ab))
		for i := range 32 {
			x[i], y[i] = int8(wb[2+i]), int8(ab[2+i])
		}
		laneSums8(&x, &y, &ls)
		for j := range 8 {
			acc[j] = fmath.FMA32(d, float32(ls[j]), acc[j])
		}
	}
	return hsum8(&acc)
}

func q4_0Values(wb []byte, x *[32]int8) {
	for i := range 16 {
		q := wb[2+i]
		x[i] = int8(q&0xf) - 8
		x[i+16] = int8(q>>4) - 8
	}
}

// VecDotQ4_0Q8_0 is ggml_vec_dot_q4_0_q8_0 of the haswell variant, and
// equally one output of tinyBLAS_Q0_AVX<block_q4_0>: as VecDotQ8_0Q8_0 with the
// weights unpacked to nibble-8, and the scale taken dy*dx (the compiled
// operand order, which decides the NaN when both scales are NaN).
func VecDotQ4_0Q8_0(w, a []byte, nb int) float32 {
	var acc [8]float32
	var x, y [32]int8
	var ls [8]int32
	for b := range nb {
		wb, ab := w[b*BlockQ4_0Size:], a[b*BlockQ8_0Size:]
		// dy*dx: the compiled operand order (which NaN survives when both are NaN).
		d := FP16ToFP32(binary.LittleEndian.Uint16(ab)) * FP16ToFP32(binary.LittleEndian.Uint16(wb))
		q4_0Values(wb, &x)
		for i := range 32 {
			y[i] = int8(ab[2+i])
		}
		laneSums8(&x, &y, &ls)
		for j := range 8 {
			acc[j] = fmath.FMA32(d, float32(ls[j]), acc[j])
		}
	}
	return hsum8(&acc)
}

// RepackDotQ4_0Q8_0 is one output of the repacked AVX2 kernels
// ggml_gemv_q4_0_8x8_q8_0 / ggml_gemm_q4_0_8x8_q8_0 (arch/x86/repack.cpp),
// which the reference uses for Q4_0 weights whose row count is a multiple of
// 8: per block the exact integer dot product isum, then
// acc = fma(float(isum), dw*da, acc), one accumulator per output.
func RepackDotQ4_0Q8_0(w, a []byte, nb int) float32 {
	var acc float32
	var x [32]int8
	for b := range nb {
		wb, ab := w[b*BlockQ4_0Size:], a[b*BlockQ8_0Size:]
		q4_0Values(wb, &x)
		var isum int32
		for i := range 32 {
			isum += int32(x[i]) * int32(int8(ab[2+i]))
		}
		d := FP16ToFP32(binary.LittleEndian.Uint16(wb)) * FP16ToFP32(binary.LittleEndian.Uint16(ab))
		acc = fmath.FMA32(float32(isum), d, acc)
	}
	return acc
}
