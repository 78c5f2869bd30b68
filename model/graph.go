package model

import (
	"fmt"

	"github.com/bankml/bankml/fmath"
)

func (c *Context) emit(name string, il int, data []float32) {
	if c.trace != nil {
		if il >= 0 {
			name = fmt.Sprintf("%s-%d", name, il)
		}
		c.trace(name, append([]float32(nil), data...))
	}
}

// ubatch runs one micro-batch through the graph (src/models/llama.cpp or
// src/models/qwen3.cpp) at positions NPast().. and appends its tokens to the
// cache. The last outputs rows are the batch's outputs: on the last layer
// only they go through the residual and the feed-forward (inp_out_ids), and
// their logits are returned (outputs × NVocab; nil for 0).
func (c *Context) ubatch(tokens []int32, outputs int) []float32 {
	m, hp := c.m, c.m.HP
	n := len(tokens)
	nPast := len(c.tokens)
	d, hd := hp.NEmbd, hp.HeadDim
	nq, nkv := hp.NHead*hd, hp.NHeadKV*hd
	x := make([]float32, n*d)
	for j, t := range tokens {
		m.TokEmbd.Row(int(t), x[j*d:(j+1)*d])
	}
	cur := make([]float32, n*d)
	q := make([]float32, n*nq)
	k := make([]float32, n*nkv)
	v := make([]float32, n*nkv)
	attn := make([]float32, n*nq)
	o := make([]float32, n*d)
	cache := make([]float32, hp.NRot)
	gateBuf := make([]float32, n*hp.NFF)
	upBuf := make([]float32, n*hp.NFF)
	scale := 1 / fmath.Sqrtf(float32(hd))
	for il, l := range m.Layers {
		last := il == hp.NLayer-1
		for j := range n {
			rmsNormMul(cur[j*d:(j+1)*d], x[j*d:(j+1)*d], l.AttnNorm, hp.RMSEps)
		}
		c.emit("attn_norm", il, cur)
		// One quantization of cur for the three (the reference quantizes
		// each mul_mat's src1 itself, to the same bits).
		c.work.MatMulShared(cur, n, l.Wq.product(q), l.Wk.product(k), l.Wv.product(v))
		if m.g.qkNorm {
			for h := range n * hp.NHead {
				r := q[h*hd : (h+1)*hd]
				rmsNormMul(r, r, l.AttnQNorm, hp.RMSEps)
			}
			for h := range n * hp.NHeadKV {
				r := k[h*hd : (h+1)*hd]
				rmsNormMul(r, r, l.AttnKNorm, hp.RMSEps)
			}
			c.emit("Qcur_normed", il, q)
			c.emit("Kcur_normed", il, k)
		}
		for j := range n {
			pos := nPast + j
			m.Rope.cache(cache, pos)
			for h := range hp.NHead {
				m.Rope.rotate(m.Level, q[j*nq+h*hd:j*nq+(h+1)*hd], cache)
			}
			for h := range hp.NHeadKV {
				m.Rope.rotate(m.Level, k[j*nkv+h*hd:j*nkv+(h+1)*hd], cache)
			}
			m.Level.FP32ToFP16Row(k[j*nkv:(j+1)*nkv], c.k[il][pos*nkv:(pos+1)*nkv])
			m.Level.FP32ToFP16Row(v[j*nkv:(j+1)*nkv], c.v[il][pos*nkv:(pos+1)*nkv])
		}
		c.emit("Qcur", il, q)
		c.emit("Kcur", il, k)
		c.emit("Vcur", il, v)
		c.attention(attn, q, c.k[il], c.v[il], nPast, n, scale)
		c.emit("kqv_out", il, attn)
		c.work.MatMulPlanes(l.Wo.Planes, attn, n, o)
		c.emit("attn_out", il, o)
		// On the last layer llama.cpp keeps only the output rows
		// (ggml_get_rows by inp_out_ids) before the residual and the
		// feed-forward; a micro-batch without outputs stops here.
		rows := n
		xr, or := x, o
		if last {
			if outputs == 0 {
				break
			}
			rows = outputs
			xr, or = x[(n-rows)*d:], o[(n-rows)*d:]
		}
		for i := range rows * d {
			xr[i] = or[i] + xr[i]
		}
		c.emit("ffn_inp", il, xr[:rows*d])
		for j := range rows {
			rmsNormMul(cur[j*d:(j+1)*d], xr[j*d:(j+1)*d], l.FFNNorm, hp.RMSEps)
		}
		c.emit("ffn_norm", il, cur[:rows*d])
		gate, up := gateBuf[:rows*hp.NFF], upBuf[:rows*hp.NFF]
		c.work.MatMulShared(cur[:rows*d], rows, l.FFNGate.product(gate), l.FFNUp.product(up))
		c.emit("ffn_gate", il, gate)
		c.emit("ffn_up", il, up)
		// ggml_vec_swiglu_f32 runs row by row; each row is cut into chunks of
		// swigluChunk values (a multiple of 8, so every 8-wide group and the
		// row's scalar tail are the reference's) spread over the pool.
		perRow := (hp.NFF + swigluChunk - 1) / swigluChunk
		c.pool.For(rows*perRow, func(lo, hi int) {
			for u := lo; u < hi; u++ {
				j, i0 := u/perRow, u%perRow*swigluChunk
				i1 := min(i0+swigluChunk, hp.NFF)
				r := gate[j*hp.NFF+i0 : j*hp.NFF+i1]
				swiglu(c.m.Level, r, r, up[j*hp.NFF+i0:j*hp.NFF+i1])
			}
		})
		c.emit("ffn_swiglu", il, gate)
		c.work.MatMulPlanes(l.FFNDown.Planes, gate, rows, or[:rows*d])
		c.emit("ffn_out", il, or[:rows*d])
		for i := range rows * d {
			xr[i] = or[i] + xr[i]
		}
		c.emit("l_out", il, xr[:rows*d])
		if last {
			x = xr[:rows*d]
		}
	}
	c.tokens = append(c.tokens, tokens...)
	if outputs == 0 {
		return nil
	}
	nrm := make([]float32, outputs*d)
	for j := range outputs {
		rmsNormMul(nrm[j*d:(j+1)*d], x[j*d:(j+1)*d], m.OutputNorm, hp.RMSEps)
	}
	c.emit("result_norm", -1, nrm)
	logits := make([]float32, outputs*hp.NVocab)
	c.work.MatMulPlanes(m.Output.Planes, nrm, outputs, logits)
	c.emit("result_output", -1, logits)
	return logits
}

// attention runs flash attention for the n query rows of this micro-batch
// (positions nPast..nPast+n-1, already in the cache) with the kernel the
// reference picks: split-KV for one row when the padded KV length reaches
// 512, the tiled kernel for 64 rows or more (head size a multiple of 8), the
// one-row kernel otherwise. Query head h reads KV head h/(NHead/NHeadKV)
// (grouped-query attention: ggml broadcasts K and V over neq2/nek2 heads).
// The tiled kernel runs in work items of one KV head and a block of faTile
// query rows, all the heads of the group that read it: each KV tile is
// widened once per item (tiledKV).
func (c *Context) attention(out, q []float32, kc, vc []uint16, nPast, n int, scale float32) {
	hp := c.m.HP
	hd := hp.HeadDim
	nq, nkv := hp.NHead*hd, hp.NHeadKV*hd
	used := nPast + n
	nek1 := min(c.nCells, max(kvPad, (used+kvPad-1)/kvPad*kvPad))
	group := hp.NHead / hp.NHeadKV
	if n >= faTile && hd%8 == 0 {
		nb := (n + faTile - 1) / faTile
		// KV head major, so that the pool's contiguous ranges get equal work.
		c.pool.For(hp.NHeadKV*nb, func(r0, r1 int) {
			var ts tileScratch
			qs := make([]tileQuery, 0, faTile*group)
			vkq := make([]float32, faTile*group*hd)
			for r := r0; r < r1; r++ {
				hk, jb := r/nb, r%nb
				qs = qs[:0]
				for j := jb * faTile; j < min(n, (jb+1)*faTile); j++ {
					for h := hk * group; h < (hk+1)*group; h++ {
						o := j*nq + h*hd
						qs = append(qs, tileQuery{q: q[o : o+hd], out: out[o : o+hd], nKV: nPast + j + 1,
							vkq: vkq[len(qs)*hd : (len(qs)+1)*hd]})
					}
				}
				tiledKV(c.m.Level, qs, kc, vc, hk*hd, nkv, scale, &ts)
			}
		})
		return
	}
	c.pool.For(n*hp.NHead, func(r0, r1 int) {
		var sc chunkScratch
		vkq := make([]float32, hd)
		for r := r0; r < r1; r++ {
			j, h := r/hp.NHead, r%hp.NHead
			a := attnRow{
				q:      q[j*nq+h*hd : j*nq+(h+1)*hd],
				kc:     kc,
				vc:     vc,
				off:    h / group * hd,
				stride: nkv,
				nKV:    nPast + j + 1, // the causal mask
				scale:  scale,
				level:  c.m.Level,
			}
			o := out[j*nq+h*hd : j*nq+(h+1)*hd]
			if n == 1 && nek1 >= 512 {
				a.splitKV(o, nek1, c.attnThreads, &sc)
				continue
			}
			_, s := a.oneChunk(0, a.nKV, vkq, &sc)
			normalize(o, vkq, s)
		}
	})
}
