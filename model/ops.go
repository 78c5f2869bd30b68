package model

import (
	"math"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/gguf"
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
	rmsScaleMul(y, x, w, sum, eps)
}

// rmsScaleMul is rmsNormMul after the sum of squares: y = (x*scale)*w with
// scale = 1/sqrtf(float(sum/len(x))+eps).
func rmsScaleMul(y, x, w []float32, sum float64, eps float32) {
	mean := float32(sum / float64(len(x)))
	scale := 1 / fmath.Sqrtf(mean+eps)
	y = y[:len(x)]
	w = w[:len(x)]
	for i, v := range x {
		y[i] = (v * scale) * w[i]
	}
}

// rmsNormRows is rmsNormMul on every width-long row of x into the same row
// of y (y may be x; len(x) a multiple of width), four rows at a time: each
// row's sum of squares is still the reference's chain in element order,
// the four chains interleaved so that a row's double add need not wait for
// its previous one (a row of 4096 is 4096 dependent adds; ggml spreads its
// rows over threads instead). Every row's bits are rmsNormMul's.
func rmsNormRows(y, x, w []float32, width int, eps float32) {
	n := len(x) / width
	r := 0
	for ; r+4 <= n; r += 4 {
		x0 := x[r*width : (r+1)*width]
		x1 := x[(r+1)*width : (r+2)*width][:len(x0)]
		x2 := x[(r+2)*width : (r+3)*width][:len(x0)]
		x3 := x[(r+3)*width : (r+4)*width][:len(x0)]
		var s0, s1, s2, s3 float64
		for i, v := range x0 {
			u1, u2, u3 := x1[i], x2[i], x3[i]
			s0 += float64(v * v)
			s1 += float64(u1 * u1)
			s2 += float64(u2 * u2)
			s3 += float64(u3 * u3)
		}
		rmsScaleMul(y[r*width:], x0, w, s0, eps)
		rmsScaleMul(y[(r+1)*width:], x1, w, s1, eps)
		rmsScaleMul(y[(r+2)*width:], x2, w, s2, eps)
		rmsScaleMul(y[(r+3)*width:], x3, w, s3, eps)
	}
	for ; r < n; r++ {
		rmsNormMul(y[r*width:(r+1)*width], x[r*width:(r+1)*width], w, eps)
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

// attnRow is one query row of one head attending to KV cells [lo, nKV) of the
// f16 cache (the causal mask allows exactly those): cell ic's K and V are
// kc and vc at ic*stride+off, len(q) values each.
type attnRow struct {
	q      []float32 // DK values, f32
	kc, vc []uint16
	off    int
	stride int
	nKV    int
	lo     int // the first cell the mask allows: a sliding window's start, else 0
	scale  float32
	level  quant.Level // whose kernels run (every level: the same bits)
	// A cache with a quantized K or V: both types set (0: f16 K and V in
	// kc, vc), the quantized cells in kq / vq, off and stride in values.
	typeK, typeV gguf.GGMLType
	kq, vq       []byte
}

// k returns cell ic's K values.
func (a *attnRow) k(ic int) []uint16 {
	o := ic*a.stride + a.off
	return a.kc[o : o+len(a.q)]
}

// chunkScratch is oneChunk's working memory (grown on demand, reused).
type chunkScratch struct {
	qh, vkq16 []uint16
	vs, ms    []float32
	q8        []byte    // Q as Q8_0 blocks (a quantized K's vec_dot_type)
	kq        []float32 // a quantized K's scores of the chunk's cells
}

func (sc *chunkScratch) size(dk, dv, cells int) {
	if cap(sc.qh) < dk {
		sc.qh = make([]uint16, dk)
	}
	if cap(sc.vkq16) < dv {
		sc.vkq16 = make([]uint16, dv)
	}
	sc.qh, sc.vkq16 = sc.qh[:dk], sc.vkq16[:dv]
	sc.vs, sc.ms = grow32(sc.vs, cells), grow32(sc.ms, cells)
}

// oneChunk is ggml_compute_forward_flash_attn_ext_f16_one_chunk over the
// unmasked cells [ic0, ic1): Q rounded to f16, s = ggml_vec_dot_f16(K, Q)*scale,
// online softmax with glibc expf, the V accumulator kept in f16 and rounded
// after every step (its scale and fused multiply-add as compiled). It returns
// the running maximum M, the sum S and the unnormalised accumulator widened to
// f32 in vkq (DV values). The scores and softmax weights of all cells come
// first (they do not depend on V), then the V accumulation runs over all
// cells in one call (vAccF16: each lane's chain in cell order, as in the
// reference's cell loop).
func (a *attnRow) oneChunk(ic0, ic1 int, vkq []float32, sc *chunkScratch) (M, S float32) {
	if a.typeK != 0 {
		return a.oneChunkQuant(ic0, ic1, vkq, sc)
	}
	dv := len(vkq)
	sc.size(len(a.q), dv, ic1-ic0)
	qh, vkq16, vs, ms := sc.qh, sc.vkq16, sc.vs, sc.ms
	a.level.FP32ToFP16Row(a.q, qh)
	for i := range vkq16 {
		vkq16[i] = 0
	}
	M = float32(negInf)
	for ic := ic0; ic < ic1; ic++ {
		s := a.level.VecDotF16(a.k(ic), qh)
		s = s * a.scale
		s += 0 // the mask value of an unmasked cell
		w, r := float32(1), float32(1)
		if s > M {
			mold := M
			M = s
			r = fmath.Expf(mold - M)
			S = float32(S*r) + w
		} else {
			w = fmath.Expf(s - M)
			S = S + w
		}
		vs[ic-ic0], ms[ic-ic0] = w, r
	}
	vAccF16(a.level, vkq16, a.vc, ic0*a.stride+a.off, a.stride, vs, ms)
	widenF16(a.level, vkq, vkq16)
	return M, S
}

// oneChunkQuant is oneChunk over a cache whose K or V is quantized (the
// reference runs only this kernel then). K: f16 as in oneChunk, or Q
// converted once by quantize_row_q8_0 (K's vec_dot_type's from_float,
// quant.QuantizeRowQ8_0) and s = K's vec_dot against it
// (ggml_vec_dot_q8_0_q8_0 / ggml_vec_dot_q4_0_q8_0); then the same scale,
// online softmax and sum S. V: f16 as in oneChunk, or the f32 accumulator
// of the reference's other branch: on a new maximum VKQ *= expf(Mold-M)
// (ggml_vec_scale_f32: one product per lane), then the cell's V widened by
// to_float (dequantize_row_q8_0 / _q4_0) and VKQ = fma(V, vs, VKQ) per lane
// (ggml_vec_mad_f32: vfmadd at every lane, DV being a multiple of 32): the
// V step is vAccQuant's.
func (a *attnRow) oneChunkQuant(ic0, ic1 int, vkq []float32, sc *chunkScratch) (M, S float32) {
	dk, dv := len(a.q), len(vkq)
	sc.size(dk, dv, ic1-ic0)
	vs, ms := sc.vs, sc.ms
	var score func(ic int) float32
	if a.typeK == gguf.F16 {
		a.level.FP32ToFP16Row(a.q, sc.qh)
		score = func(ic int) float32 { return a.level.VecDotF16(a.k(ic), sc.qh) }
	} else {
		nb := dk / quant.QK8_0
		if cap(sc.q8) < nb*quant.BlockQ8_0Size {
			sc.q8 = make([]byte, nb*quant.BlockQ8_0Size)
		}
		q8 := sc.q8[:nb*quant.BlockQ8_0Size]
		quant.QuantizeRowQ8_0(a.q, q8)
		// Every cell's vec_dot at once (one call of the multi-row kernel).
		rb, ob := rowBytes(a.typeK, a.stride), rowBytes(a.typeK, a.off)
		sc.kq = grow32(sc.kq, ic1-ic0)
		a.level.VecDotRows(a.typeK)(a.kq[ic0*rb+ob:], rb, q8, nb, sc.kq)
		score = func(ic int) float32 { return sc.kq[ic-ic0] }
	}
	M = float32(negInf)
	for ic := ic0; ic < ic1; ic++ {
		s := score(ic)
		s = s * a.scale
		s += 0 // the mask value of an unmasked cell
		w, r := float32(1), float32(1)
		if s > M {
			mold := M
			M = s
			r = fmath.Expf(mold - M)
			S = float32(S*r) + w
		} else {
			w = fmath.Expf(s - M)
			S = S + w
		}
		vs[ic-ic0], ms[ic-ic0] = w, r
	}
	if a.typeV == gguf.F16 {
		vkq16 := sc.vkq16
		clear(vkq16)
		vAccF16(a.level, vkq16, a.vc, ic0*a.stride+a.off, a.stride, vs, ms)
		widenF16(a.level, vkq, vkq16)
		return M, S
	}
	clear(vkq)
	rb, ob := rowBytes(a.typeV, a.stride), rowBytes(a.typeV, a.off)
	vAccQuant(a.level, a.typeV, vkq, a.vq, ic0*rb+ob, rb, vs[:ic1-ic0], ms[:ic1-ic0])
	return M, S
}

// vAccQuantGo is oneChunkQuant's V step on a quantized V cache of type t
// (32-value blocks: Q8_0, Q4_0), the statement of vAccQuant's kernels: per
// cell i (its len(acc)/32 blocks at off+i*rb bytes of vq), acc *= ms[i] when
// that is not 1 (ggml_vec_scale_f32), then the cell's V widened by to_float
// (dequantizeRow: one product per value) and per lane acc = fma(v, vs[i],
// acc) (ggml_vec_mad_f32's fused multiply-add). len(acc) is a multiple of 32.
func vAccQuantGo(t gguf.GGMLType, acc []float32, vq []byte, off, rb int, vs, ms []float32) {
	bs := rowBytes(t, quant.QK8_0)
	var y [quant.QK8_0]float32
	for i, w := range vs {
		if r := ms[i]; r != 1 { // a rescale by exactly 1 changes no bit
			for d := range acc {
				acc[d] *= r
			}
		}
		row := vq[off+i*rb:]
		for b := range len(acc) / quant.QK8_0 {
			dequantizeRow(t, row[b*bs:(b+1)*bs], y[:])
			for j, x := range y {
				acc[b*quant.QK8_0+j] = fmath.FMA32(x, w, acc[b*quant.QK8_0+j])
			}
		}
	}
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
func (a *attnRow) splitKV(out []float32, nek1, nth int, sc *chunkScratch) {
	splitKVFrom(out, nek1, nth, a.lo, a.nKV, func(ic0, ic1 int, part []float32) (M, S float32) {
		return a.oneChunk(ic0, ic1, part, sc)
	})
}

// splitKV is attnRow.splitKV over the causal length nKV with chunk the
// one-row kernel on cells [ic0, ic1) (its M, S and unnormalised part).
func splitKV(out []float32, nek1, nth, nKV int, chunk func(ic0, ic1 int, part []float32) (M, S float32)) {
	splitKVFrom(out, nek1, nth, 0, nKV, chunk)
}

// splitKVFrom is splitKV with the cells before lo masked too (a sliding
// window): each chunk runs over its cells in [lo, nKV), and a chunk with
// none is skipped as the reference's partial with S = 0 is.
func splitKVFrom(out []float32, nek1, nth, lo, nKV int, chunk func(ic0, ic1 int, part []float32) (M, S float32)) {
	dv := len(out)
	size := (nek1 + nth - 1) / nth
	part := make([]float32, dv)
	acc := make([]float32, dv)
	mFinal, sFinal := float32(negInf), float32(0)
	for c := range nth {
		ic0 := c * size
		if ic0 >= nek1 {
			continue
		}
		ic1 := min(ic0+size, nek1, nKV)
		ic0 = max(ic0, lo)
		if ic0 >= ic1 {
			continue // every cell masked: S = 0
		}
		mc, sum := chunk(ic0, ic1, part)
		if sum == 0 {
			continue
		}
		mNew := max(mFinal, mc)
		scaleOld := fmath.Expf(mFinal - mNew)
		scaleNew := fmath.Expf(mc - mNew)
		for d := range dv {
			acc[d] = fmath.FMA32(acc[d], scaleOld, float32(part[d]*scaleNew))
		}
		sFinal = fmath.FMA32(sFinal, scaleOld, float32(sum*scaleNew))
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

// hsum8 is hsum_float_8's order of a horizontal sum of 8 lanes.
func hsum8(v *[8]float32) float32 {
	t0, t1, t2, t3 := v[4]+v[0], v[5]+v[1], v[6]+v[2], v[7]+v[3]
	return (t0 + t2) + (t1 + t3)
}
