package quant

import (
	"math"

	"github.com/bankml/bankml/fmath"
)

// BF16 (ggml_bf16_t, brain float): the top 16 bits of an IEEE binary32.
//
// Design record
//
//   - Conversions follow ggml-impl.h (ggml_compute_bf16_to_fp32,
//     ggml_compute_fp32_to_bf16), which every x86 variant compiles to integer
//     code: bf16 → f32 is a shift; f32 → bf16 rounds to nearest even by
//     adding 0x7fff plus the kept lowest bit, and turns a NaN into its top
//     half with the quiet bit (0x40) forced. No flush of subnormals (only
//     AVX512-BF16 builds flush, and the haswell variant has none).
//   - mul_mat (AVX2): the activations are converted with
//     ggml_cpu_fp32_to_bf16; one column runs ggml_vec_dot_bf16 (VecDotBF16),
//     two or more run tinyBLAS<8, __m256, __m256, ggml_bf16_t, ggml_bf16_t,
//     float> (TinyDotBF16) when the row length is a multiple of 8 and the
//     row count a multiple of 4, else ggml_vec_dot_bf16.
//   - ggml_vec_dot_bf16's source writes _mm256_add_ps(_mm256_mul_ps(x, y), c);
//     GCC contracted it to vfmadd231ps. The product of two bf16 values is
//     exact in float32 unless it underflows, so a source-faithful port
//     (product rounded, then added) differs only on rows whose products fall
//     below 2^-126 — it does there (TestLegacySourceFaithfulPortsDiffer).

// BF16ToFP32 is ggml_compute_bf16_to_fp32 (GGML_BF16_TO_FP32): the bf16
// bits become the top half of the float32, exactly (NaN payloads kept).
func BF16ToFP32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// FP32ToBF16 is ggml_compute_fp32_to_bf16 (GGML_FP32_TO_BF16): round to
// nearest, ties to even, on the bits (so overflow gives ±Inf and subnormals
// round like normals); a NaN keeps its top 16 bits with the quiet bit 0x40
// set.
func FP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u >> 16 & 1)) >> 16)
}

// BF16ToFP32Row is ggml_bf16_to_fp32_row (BF16's to_float) and
// ggml_cpu_bf16_to_fp32: dst[i] = BF16ToFP32(x[i]) for i < min(len(x),
// len(dst)).
func BF16ToFP32Row(x []uint16, dst []float32) {
	n := min(len(x), len(dst))
	x, dst = x[:n], dst[:n]
	for i, h := range x {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

// FP32ToBF16Row is ggml_cpu_fp32_to_bf16 (BF16's from_float in the CPU
// backend, which mul_mat applies to the activations), ggml_fp32_to_bf16_row
// and ggml_fp32_to_bf16_row_ref: dst[i] = FP32ToBF16(x[i]) for i <
// min(len(x), len(dst)).
func FP32ToBF16Row(x []float32, dst []uint16) {
	n := min(len(x), len(dst))
	x, dst = x[:n], dst[:n]
	for i, f := range x {
		dst[i] = FP32ToBF16(f)
	}
}

// VecDotBF16 is ggml_vec_dot_bf16 as compiled in the haswell variant, over
// n = min(len(x), len(y)) values: four 8-lane accumulators c1..c4 over
// chunks of 32 with fused multiply-adds (c_k = fma(x, y, c_k); the source's
// separate mul and add were contracted), combined as (c1+c3)+(c2+c4) and
// reduced with hsum; that float is widened and added to a double sum
// starting at +0.0 (so a -0 sum becomes +0); the leftover n mod 32 values
// add their float32-rounded products in double; the double is rounded to
// float32 at the end.
func VecDotBF16(x, y []uint16) float32 {
	n := min(len(x), len(y))
	x, y = x[:n], y[:n]
	i := 0
	var sumf float64
	if n >= 32 {
		var c [4][8]float32
		for ; i+32 <= n; i += 32 {
			for k := range 4 {
				bf16FMA8(x[i+8*k:i+8*k+8], y[i+8*k:i+8*k+8], &c[k])
			}
		}
		var v [8]float32
		for l := range 8 {
			v[l] = (c[0][l] + c[2][l]) + (c[1][l] + c[3][l])
		}
		sumf += float64(hsum8(&v))
	}
	for ; i < n; i++ {
		sumf += float64(float32(BF16ToFP32(x[i]) * BF16ToFP32(y[i])))
	}
	return float32(sumf)
}

// TinyDotBF16 is one output of llamafile's tinyBLAS<8, __m256, __m256,
// ggml_bf16_t, ggml_bf16_t, float> (sgemm.cpp; mul_mat of BF16 weights with
// two or more columns, row length a multiple of 8, row count a multiple of
// 4): eight lanes, lane l accumulating x[i]*y[i] for i ≡ l (mod 8) with fused
// multiply-adds from zero, then hsum. Uses the first min(len(x), len(y))
// values rounded down to a multiple of 8 (tinyBLAS refuses other lengths).
func TinyDotBF16(x, y []uint16) float32 {
	n := min(len(x), len(y)) &^ 7
	x, y = x[:n], y[:n]
	var acc [8]float32
	for i := 0; i < n; i += 8 {
		bf16FMA8(x[i:i+8], y[i:i+8], &acc)
	}
	return hsum8(&acc)
}

// bf16FMA8 is acc[l] = fma(x[l], y[l], acc[l]) on eight widened bf16 pairs
// (vfmadd231ps), each rounded once. A bf16×bf16 product has at most 16
// significant bits, so when its float32 value is normal it is exact and the
// float32 sum p + acc is the fused result, as it is when a factor is ±0
// (an exact ±0, or NaN for 0·Inf); subnormal (possibly rounded), underflowed,
// infinite and NaN products go to fmath.FMA32.
func bf16FMA8(x, y []uint16, acc *[8]float32) {
	x, y = x[:8], y[:8]
	for l := range 8 {
		a, b := BF16ToFP32(x[l]), BF16ToFP32(y[l])
		p := a * b
		if e := math.Float32bits(p) >> 23 & 0xff; e-1 < 254 || x[l]&0x7fff == 0 || y[l]&0x7fff == 0 {
			acc[l] = p + acc[l]
			continue
		}
		acc[l] = fmath.FMA32(a, b, acc[l])
	}
}
