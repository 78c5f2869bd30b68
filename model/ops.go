package model

import (
	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/quant"
)

// rmsNormMul is ggml's rms_norm (sum of squares in double, mean rounded to
// float, scale = 1/sqrtf(mean+eps)) fused with the multiplication by the norm
// weight: y = (x*scale)*w.
func rmsNormMul(y, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / fmath.Sqrtf(mean+eps)
	for i, v := range x {
		y[i] = (v * scale) * w[i]
	}
}

// ropeCache is ggml_rope_cache_init for one position in normal mode without
// scaling (freq_scale 1, ext_factor 0, attn_factor 1): cos and sin of
// theta_i = p * theta_scale^i, theta advanced by repeated float products.
func ropeCache(cache []float32, pos int, nDims int, thetaScale float32) {
	theta := float32(pos)
	for i0 := 0; i0 < nDims; i0 += 2 {
		cache[i0] = fmath.Cosf(theta)
		cache[i0+1] = fmath.Sinf(theta)
		theta *= thetaScale
	}
}

// ropeNormal rotates consecutive pairs (x[i0], x[i0+1]) of one head in place,
// with the reference's contractions: x0*cos − round(x1*sin) and
// x0*sin + round(x1*cos), each fused.
func ropeNormal(x []float32, cache []float32, nDims int) {
	for i0 := 0; i0 < nDims; i0 += 2 {
		c, s := cache[i0], cache[i0+1]
		x0, x1 := x[i0], x[i0+1]
		x[i0] = fmath.FMA32(x0, c, -float32(x1*s))
		x[i0+1] = fmath.FMA32(x0, s, float32(x1*c))
	}
}

// fp16Soft is ggml_compute_fp32_to_fp16 (the software conversion the
// compiler inlined in flash attention's scalar loops): round to nearest even,
// identical to quant.FP32ToFP16 except that every NaN becomes 0x7e00.
func fp16Soft(f float32) uint16 {
	if f != f {
		return quant.FP32ToFP16(f)&0x8000 | 0x7e00
	}
	return quant.FP32ToFP16(f)
}

// flashAttnRow is ggml_compute_forward_flash_attn_ext_f16_one_chunk for one
// query row of one head over KV cells [0, nKV): q is f32 (DK), k and v give
// the f16 rows of the cells (all unmasked; masked cells are skipped by the
// reference and so never enter the sums). out receives DV floats.
func flashAttnRow(out []float32, q []float32, k, v func(ic int) []uint16, nKV int, scale float32, qh, vkq16 []uint16) {
	dv := len(out)
	quant.FP32ToFP16Row(q, qh)
	for i := range vkq16 {
		vkq16[i] = 0
	}
	var S float32
	M := float32(negInf)
	for ic := range nKV {
		s := quant.VecDotF16(k(ic), qh)
		s = s * scale
		s += 0 // the mask value of an unmasked cell
		vs := float32(1)
		vrow := v(ic)
		if s > M {
			mold := M
			M = s
			ms := fmath.Expf(mold - M)
			for d := range dv {
				vkq16[d] = fp16Soft(quant.FP16ToFP32(vkq16[d]) * ms)
			}
			S = float32(S*ms) + vs
		} else {
			vs = fmath.Expf(s - M)
			S = S + vs
		}
		for d := range dv {
			vkq16[d] = fp16Soft(fmath.FMA32(quant.FP16ToFP32(vrow[d]), vs, quant.FP16ToFP32(vkq16[d])))
		}
	}
	var sInv float32
	if S != 0 {
		sInv = 1 / S
	}
	for d := range dv {
		out[d] = quant.FP16ToFP32(vkq16[d]) * sInv
	}
}
