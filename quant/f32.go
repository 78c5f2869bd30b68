package quant

import "github.com/bankml/bankml/fmath"

// hsum8 is llamafile's hsum(__m256) and ggml's hsum_float_8: the high and low
// halves added lane-wise, then movehl (lanes 0+2, 1+3), then movehdup (0+1).
func hsum8(v *[8]float32) float32 {
	t0, t1, t2, t3 := v[4]+v[0], v[5]+v[1], v[6]+v[2], v[7]+v[3]
	return (t0 + t2) + (t1 + t3)
}

// reduce4x8 is GGML_F32x8_REDUCE on four 8-lane accumulators: pairwise adds
// (0+2, 1+3, then the two), halves added, then two vhaddps.
func reduce4x8(s *[4][8]float32) float32 {
	var x [8]float32
	for l := range 8 {
		x[l] = (s[0][l] + s[2][l]) + (s[1][l] + s[3][l])
	}
	t0, t1, t2, t3 := x[0]+x[4], x[1]+x[5], x[2]+x[6], x[3]+x[7]
	return (t0 + t1) + (t2 + t3)
}

// VecDotF32 is ggml_vec_dot_f32 as compiled in the haswell variant: four
// 8-lane FMA accumulators over chunks of 32, GGML_F32x8_REDUCE, then the
// leftovers (n mod 32) added in the order GCC vectorised them: groups of 8
// and then one group of 4 as rounded products added one by one, the last
// n mod 4 as fused multiply-adds. len(x) == len(y) == n.
func VecDotF32(x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	np := n &^ 31
	var sum [4][8]float32
	for i := 0; i < np; i += 32 {
		for j := range 4 {
			for l := range 8 {
				sum[j][l] = fmath.FMA32(x[i+8*j+l], y[i+8*j+l], sum[j][l])
			}
		}
	}
	s := reduce4x8(&sum)
	i := np
	for ; n-i >= 8; i += 8 {
		for l := range 8 {
			s += float32(x[i+l] * y[i+l])
		}
	}
	if n-i >= 4 {
		for l := range 4 {
			s += float32(x[i+l] * y[i+l])
		}
		i += 4
	}
	for ; i < n; i++ {
		s = fmath.FMA32(x[i], y[i], s)
	}
	return s
}

// TinyDotF32 is one output of llamafile's tinyBLAS<8, __m256, __m256, float>
// (sgemm.cpp): eight lanes, lane l accumulating x[i]*y[i] for i ≡ l (mod 8)
// with fused multiply-adds from zero, then hsum. len(x) == len(y), a multiple
// of 8.
func TinyDotF32(x, y []float32) float32 {
	y = y[:len(x)]
	var acc [8]float32
	for i := 0; i < len(x); i += 8 {
		for l := range 8 {
			acc[l] = fmath.FMA32(x[i+l], y[i+l], acc[l])
		}
	}
	return hsum8(&acc)
}

// VecDotF16 is ggml_vec_dot_f16 as compiled in the haswell variant: values
// widened with F16C, four 8-lane FMA accumulators over chunks of 32,
// GGML_F32x8_REDUCE, then the leftovers added in double as rounded float
// products; the double sum is rounded to float32 at the end.
func VecDotF16(x, y []uint16) float32 {
	n := len(x)
	y = y[:n]
	np := n &^ 31
	var sum [4][8]float32
	for i := 0; i < np; i += 32 {
		for j := range 4 {
			for l := range 8 {
				k := i + 8*j + l
				sum[j][l] = fmath.FMA32(FP16ToFP32(x[k]), FP16ToFP32(y[k]), sum[j][l])
			}
		}
	}
	s := float64(reduce4x8(&sum))
	for i := np; i < n; i++ {
		s += float64(float32(FP16ToFP32(x[i]) * FP16ToFP32(y[i])))
	}
	return float32(s)
}

// TinyDotF16 is one output of tinyBLAS<8, __m256, __m256, ggml_fp16_t,
// ggml_fp16_t, float>: as TinyDotF32 on the widened values.
func TinyDotF16(x, y []uint16) float32 {
	y = y[:len(x)]
	var acc [8]float32
	for i := 0; i < len(x); i += 8 {
		for l := range 8 {
			acc[l] = fmath.FMA32(FP16ToFP32(x[i+l]), FP16ToFP32(y[i+l]), acc[l])
		}
	}
	return hsum8(&acc)
}
