package model

import (
	"math"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/quant"
)

var negInf = math.Inf(-1)

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

// fp16Soft is ggml_compute_fp32_to_fp16 (the software conversion the
// compiler inlined in flash attention's scalar loops): round to nearest even,
// identical to quant.FP32ToFP16 except that every NaN becomes 0x7e00.
func fp16Soft(f float32) uint16 {
	if f != f {
		return quant.FP32ToFP16(f)&0x8000 | 0x7e00
	}
	return quant.FP32ToFP16(f)
}

// attnRow is one query row of one head attending to KV cells [0, nKV) of the
// f16 cache (the causal mask allows exactly those); k and v return a cell's
// DK and DV values.
type attnRow struct {
	q     []float32 // DK values, f32
	k, v  func(ic int) []uint16
	nKV   int
	scale float32
	level quant.Level // whose ggml_vec_dot_f16 runs Q·K (every level: the same bits)
}

// oneChunk is ggml_compute_forward_flash_attn_ext_f16_one_chunk over the
// unmasked cells [ic0, ic1): Q rounded to f16, s = ggml_vec_dot_f16(K, Q)*scale,
// online softmax with glibc expf, the V accumulator kept in f16 and rounded
// after every step (its scale and fused multiply-add as compiled). It returns
// the running maximum M, the sum S and the unnormalised accumulator widened to
// f32 in vkq (DV values). qh and vkq16 are scratch of DK and DV.
func (a *attnRow) oneChunk(ic0, ic1 int, vkq []float32, qh, vkq16 []uint16) (M, S float32) {
	dv := len(vkq)
	quant.FP32ToFP16Row(a.q, qh)
	for i := range vkq16 {
		vkq16[i] = 0
	}
	M = float32(negInf)
	for ic := ic0; ic < ic1; ic++ {
		s := a.level.VecDotF16(a.k(ic), qh)
		s = s * a.scale
		s += 0 // the mask value of an unmasked cell
		vs := float32(1)
		vrow := a.v(ic)
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
	for d := range dv {
		vkq[d] = quant.FP16ToFP32(vkq16[d])
	}
	return M, S
}

// normalize is the end of every flash-attention kernel: out = vkq * (1/S),
// or zeros when S is 0.
func normalize(out, vkq []float32, S float32) {
	var sInv float32
	if S != 0 {
		sInv = 1 / S
	}
	for d := range out {
		out[d] = vkq[d] * sInv
	}
}

// splitKV is the reference's split-KV decode (one query row, padded KV length
// nek1 >= 512): the cells are cut into nth chunks of ceil(nek1/nth) — nth is
// the reference's thread count — each chunk runs oneChunk, and
// ggml_flash_attn_ext_reduce_partials merges them in chunk order with fmaxf,
// glibc expf and the contractions fma(acc, scale_old, round(part*scale_new)).
func (a *attnRow) splitKV(out []float32, nek1, nth int, qh, vkq16 []uint16) {
	dv := len(out)
	chunk := (nek1 + nth - 1) / nth
	part := make([]float32, dv)
	acc := make([]float32, dv)
	mFinal, sFinal := float32(negInf), float32(0)
	for c := range nth {
		ic0 := c * chunk
		if ic0 >= nek1 {
			continue
		}
		ic1 := min(ic0+chunk, nek1, a.nKV)
		if ic0 >= ic1 {
			continue // every cell masked: S = 0
		}
		mc, sc := a.oneChunk(ic0, ic1, part, qh, vkq16)
		if sc == 0 {
			continue
		}
		mNew := max(mFinal, mc)
		scaleOld := fmath.Expf(mFinal - mNew)
		scaleNew := fmath.Expf(mc - mNew)
		for d := range dv {
			acc[d] = fmath.FMA32(acc[d], scaleOld, float32(part[d]*scaleNew))
		}
		sFinal = fmath.FMA32(sFinal, scaleOld, float32(sc*scaleNew))
		mFinal = mNew
	}
	if sFinal != 0 {
		sInv := 1 / sFinal
		for d := range dv {
			acc[d] *= sInv
		}
	}
	copy(out, acc)
}

// faTile is ggml_fa_tile_config's KV tile (and Q tile) size.
const faTile = 64

// tiled is ggml_compute_forward_flash_attn_ext_tiled for one query row (the
// reference uses it when a micro-batch has 64 or more rows). Each row's result
// does not depend on which rows share its tile, so it is computed row by row:
// per KV tile of 64 cells, scores KQ = Q·K (f32 Q, K widened from f16, one
// fused multiply-add chain over DK as simd_gemm), scaled, masked cells -inf;
// the tile maximum, fmaxf and a glibc expf rescale; ggml_vec_soft_max_f32 with
// ggml_v_expf on groups of 8 and a double sum added to the float S; then
// VKQ += KQ·V as one fused chain over the 64 cells (simd_gemm). Tiles past the
// row's last cell are fully masked and change nothing.
func (a *attnRow) tiled(out []float32, kq, vkq []float32) {
	dk, dv := len(a.q), len(out)
	for i := range vkq {
		vkq[i] = 0
	}
	M, S := float32(negInf), float32(0)
	for ic := 0; ic < a.nKV; ic += faTile {
		tileMax := float32(negInf)
		for tk := range faTile {
			c := ic + tk
			if c >= a.nKV {
				kq[tk] = float32(negInf)
				continue
			}
			kr := a.k(c)
			var acc float32
			for d := range dk {
				acc = fmath.FMA32(quant.FP16ToFP32(kr[d]), a.q[d], acc)
			}
			kq[tk] = float32(acc*a.scale) + 0
			if kq[tk] > tileMax {
				tileMax = kq[tk]
			}
		}
		if tileMax == float32(negInf) {
			continue
		}
		mNew := max(M, tileMax)
		if mNew > M {
			ms := fmath.Expf(M - mNew)
			for d := range dv {
				vkq[d] *= ms
			}
			S *= ms
		}
		M = mNew
		var sum float64
		var vals [8]float32
		for g := 0; g < faTile; g += 8 {
			large := false
			for l := range 8 {
				large = large || vExpfLarge(kq[g+l]-M)
			}
			for l := range 8 {
				vals[l] = vExpf(kq[g+l]-M, large)
				kq[g+l] = vals[l]
			}
			sum += float64(hsum8(&vals))
		}
		S = float32(float64(S) + sum)
		for d := range dv {
			acc := vkq[d]
			for tk := range faTile {
				// Masked cells weigh exactly 0 but still enter the chain, with
				// the cache's values (zeros where never written), as in simd_gemm.
				acc = fmath.FMA32(quant.FP16ToFP32(a.v(ic + tk)[d]), kq[tk], acc)
			}
			vkq[d] = acc
		}
	}
	normalize(out, vkq, S)
}

// hsum8 is hsum_float_8's order of a horizontal sum of 8 lanes.
func hsum8(v *[8]float32) float32 {
	t0, t1, t2, t3 := v[4]+v[0], v[5]+v[1], v[6]+v[2], v[7]+v[3]
	return (t0 + t2) + (t1 + t3)
}
