package model

import (
	"sync"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/quant"
)

// The ops the qwen2, gemma3, phi3, bitnet and bert graphs add to llama's, each
// as ggml-cpu computes it in the haswell build (ops.cpp, vec.h, vec.cpp);
// every one is portable Go whose float operations are the reference's own
// (no reassociation; explicit float32 conversions where it rounds twice).

// layerNorm is ggml_norm (ops.cpp ggml_compute_forward_norm_f32) followed by
// build_norm's ggml_mul by w and ggml_add of b (each nil to leave out): the
// mean is the float64 sum of x rounded to float32 and divided by n in
// float32; the variance is ggml_vec_cvar_f32's, AVX2 path: each group of 8
// centred squares summed as ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)) in float32
// and added in float64, the tail's squares added one by one in float64, the
// total divided by n in float64 and rounded to float32; y = (x-mean)*scale
// with scale = 1/sqrtf(variance+eps), then y*w, then y+b. y may be x.
func layerNorm(y, x, w, b []float32, eps float32) {
	n := len(x)
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	mean := float32(s) / float32(n)
	var sum float64
	i := 0
	for ; i+7 < n; i += 8 {
		var q [8]float32
		for j := range q {
			d := x[i+j] - mean
			y[i+j] = d
			q[j] = float32(d * d)
		}
		sum += float64(((q[0] + q[4]) + (q[2] + q[6])) + ((q[1] + q[5]) + (q[3] + q[7])))
	}
	for ; i < n; i++ {
		d := x[i] - mean
		y[i] = d
		sum += float64(d * d)
	}
	variance := float32(sum / float64(n))
	scale := 1 / fmath.Sqrtf(variance+eps)
	for i := range n {
		y[i] *= scale
	}
	if w != nil {
		for i := range n {
			y[i] *= w[i]
		}
	}
	if b != nil {
		for i := range n {
			y[i] += b[i]
		}
	}
}

// geluTable is ggml_table_gelu_f16 (ggml-cpu.c ggml_cpu_init): for every
// half h, the half of ggml_gelu_f32(h) = 0.5x·(1 + tanhf(√(2/π)x·(1 +
// 0.044715x·x))) as the haswell build computes it, the inner 1 + (0.044715x)·x
// fused (vfmadd213ss), everything else rounded step by step, and the result
// rounded to half by the software conversion (fp16Soft).
var geluTable = sync.OnceValue(func() *[1 << 16]uint16 {
	const (
		coefA               = float32(0.044715)
		sqrt2OverPi         = float32(0.79788456080286535587989211986876)
		half                = float32(0.5)
		one         float32 = 1
	)
	t := new([1 << 16]uint16)
	for i := range t {
		x := quant.FP16ToFP32(uint16(i))
		inner := fmath.FMA32(float32(coefA*x), x, one)
		th := fmath.Tanhf(float32(sqrt2OverPi*x) * inner)
		t[i] = fp16Soft(float32(half*x) * float32(one+th))
	}
	return t
})

// geluOf is one element of ggml_vec_gelu_f32 with GGML_GELU_FP16: 0 at or
// below -10, x at or above 10, else the table's value at x rounded to half
// (vcvtps2ph, round to nearest even).
func geluOf(t *[1 << 16]uint16, x float32) float32 {
	switch {
	case x <= -10:
		return 0
	case x >= 10:
		return x
	}
	return quant.FP16ToFP32(t[quant.FP32ToFP16(x)])
}

// gelu is ggml_vec_gelu_f32 over x into y (y may be x).
func gelu(y, x []float32) {
	t := geluTable()
	for i, v := range x {
		y[i] = geluOf(t, v)
	}
}

// geglu is ggml_vec_geglu_f32: y = gelu(x)·g with the table's GELU (x at or
// above 10 gives x·g, at or below -10 gives 0); y may be x.
func geglu(y, x, g []float32) {
	t := geluTable()
	for i, v := range x {
		switch {
		case v <= -10:
			y[i] = 0
		case v >= 10:
			y[i] = v * g[i]
		default:
			y[i] = quant.FP16ToFP32(t[quant.FP32ToFP16(v)]) * g[i]
		}
	}
}

// softcap is the graph's logit soft-capping (gemma3: ggml_scale by 1/cap,
// ggml_tanh, ggml_scale by cap): x = tanhf(x·(1/cap))·cap, 1/cap rounded to
// float32 once.
func softcap(x []float32, c float32) {
	inv := 1 / c
	for i, v := range x {
		x[i] = fmath.Tanhf(v*inv) * c
	}
}

// scaleRows is ggml_scale with no bias (ggml_vec_scale_f32): x *= s.
func scaleRows(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// addBias is ggml_add of a bias broadcast over rows of len(b) values.
func addBias(x, b []float32) {
	n := len(b)
	for r := 0; r+n <= len(x); r += n {
		row := x[r : r+n]
		for i := range row {
			row[i] += b[i]
		}
	}
}
