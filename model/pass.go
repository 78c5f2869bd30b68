package model

import (
	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

// pass is one forward pass over the rows of a batch (Runner.forward): the
// shared ops every architecture's block is written with. Each op works on
// the active rows: every row of the pass, until the last layer keeps only
// the output rows (llama.cpp's ggml_get_rows by inp_out_ids; see attend and
// prune). Matmuls compute each column with its fresh micro-batch's class
// (acls), so the bits are those of each span evaluated alone. A traced pass
// (tests) emits every named intermediate under llama.cpp's cb names.
type pass struct {
	r  *Runner
	m  *Model
	hp *Hparams
	b  *runBuf
	tr *Context // the traced context, or nil

	rows    []rowRef         // every row of the pass
	cls     []quant.ColClass // every row's fresh micro-batch class
	outRows []int            // the output rows (indices into rows)
	ocls    []quant.ColClass // the output rows' output classes

	n     int              // active rows
	acls  []quant.ColClass // the active rows' matmul classes
	arows []rowRef         // the active rows (attention)
	x     []float32        // the residual stream of the active rows, n × NEmbd
	last  bool             // the layer being computed is the last
	early bool             // last layer: attention ran for the output rows only, prune has still to follow
}

// Buffers of a pass (runBuf.bufs), each grown to the largest batch and reused.
const (
	bCur = iota
	bQ
	bK
	bV
	bQKV
	bAttn
	bO
	bGate
	bUp
	bQO
	bXO
	bOO
	bNrm
	bSub
	nBufs
)

// buf returns buffer i with room for n values.
func (p *pass) buf(i, n int) []float32 {
	p.b.bufs[i] = grow32(p.b.bufs[i], n)
	return p.b.bufs[i][:n]
}

// emit traces data under name (with "-il" when il >= 0).
func (p *pass) emit(name string, il int, data []float32) {
	if name != "" {
		p.tr.emit(name, il, data)
	}
}

// norm is build_norm over rows of len(w) values (len(b) when w is nil):
// ggml_rms_norm with the RMS epsilon times w for the RMS-norm graphs,
// ggml_norm with the layer-norm epsilon times w plus b for bert (layerNorm);
// dst may be src. name, when not "", traces the result.
func (p *pass) norm(name string, il int, dst, src, w, b []float32) []float32 {
	width := len(w)
	if w == nil {
		width = len(b)
	}
	if p.m.a.normEps {
		for r := 0; r+width <= len(src); r += width {
			layerNorm(dst[r:r+width], src[r:r+width], w, b, p.hp.NormEps)
		}
	} else if width > 0 {
		rmsNormRows(dst, src[:len(src)/width*width], w, width, p.hp.RMSEps)
	}
	if name != "" {
		p.emit(name, il, dst[:len(src)])
	}
	return dst[:len(src)]
}

// linear is build_lora_mm: out = l·in for the active rows (in: n × l.Cols(),
// buffer bo for the n × l.Rows() result), each column with its class.
func (p *pass) linear(l *Linear, in []float32, bo int) []float32 {
	out := p.buf(bo, p.n*l.Rows())
	if p.n > 0 {
		p.r.work.MatMulPlanesAs(l.Planes, in[:p.n*l.Cols()], p.n, p.acls, out)
	}
	return out
}

// shared runs the products of several matrices with one input (Q/K/V,
// gate/up): the reference quantizes each mul_mat's src1 itself, to the same
// bits as quant's one quantization here.
func (p *pass) shared(in []float32, ps ...quant.Product) {
	if p.n > 0 {
		p.r.work.MatMulSharedAs(in, p.n, p.acls, ps...)
	}
}

// scaleBy is ggml_mul by a one-value tensor (bitnet's weight scales); s nil
// leaves x as it is.
func scaleBy(x, s []float32) {
	if s != nil {
		scaleRows(x, s[0])
	}
}

// bias is ggml_add of a bias vector (nil: none).
func bias(x, b []float32) {
	if b != nil {
		addBias(x, b)
	}
}

// qkv is build_qkv: Q, K and V of the active rows from cur, as separate
// projections (one shared quantization of cur) or the fused attn_qkv split
// into its three views, each times its scale and plus its bias (beside a
// fused matrix llama.cpp adds the concatenated biases: the same sums).
func (p *pass) qkv(il int, cur []float32, l *Layer) (q, k, v []float32) {
	hp := p.hp
	nq, nkv := hp.NHead*hp.HeadDim, hp.NHeadKV*hp.HeadDim
	q, k, v = p.buf(bQ, p.n*nq), p.buf(bK, p.n*nkv), p.buf(bV, p.n*nkv)
	if len(l.Wqkv.Planes) > 0 {
		qkv := p.linear(&l.Wqkv, cur, bQKV)
		w := nq + 2*nkv
		for j := range p.n {
			row := qkv[j*w : (j+1)*w]
			copy(q[j*nq:(j+1)*nq], row[:nq])
			copy(k[j*nkv:(j+1)*nkv], row[nq:nq+nkv])
			copy(v[j*nkv:(j+1)*nkv], row[nq+nkv:])
		}
	} else {
		p.shared(cur[:p.n*hp.NEmbd], l.Wq.product(q), l.Wk.product(k), l.Wv.product(v))
	}
	scaleBy(q, l.Sq)
	scaleBy(k, l.Sk)
	scaleBy(v, l.Sv)
	bias(q, l.Bq)
	bias(k, l.Bk)
	bias(v, l.Bv)
	return q, k, v
}

// qkNorm is the per-head norms of Q and K (attn_q_norm, attn_k_norm) in
// place, traced as Qcur_normed and Kcur_normed.
func (p *pass) qkNorm(il int, q, k []float32, l *Layer) {
	p.norm("Qcur_normed", il, q, q, l.AttnQNorm, nil)
	p.norm("Kcur_normed", il, k, k, l.AttnKNorm, nil)
}

// ropeStore rotates Q and K of every row at its position with layer il's
// RoPE (RopeSWA on gemma3's sliding layers; phi3's rope factors, the long
// ones when the context passes n_ctx_orig_yarn) and stores K and V in the
// rows' KV caches (ggml_set_rows: ggml_cpu_fp32_to_fp16 into an f16 cache,
// the type's from_float into a quantized one, after the Hadamard rotation
// of K and V where the cache has it). Architectures without RoPE only store.
func (p *pass) ropeStore(il int, q, k, v []float32) {
	hp, m := p.hp, p.m
	hd := hp.HeadDim
	nq, nkv := hp.NHead*hd, hp.NHeadKV*hd
	rope := &m.Rope
	if hp.NSWA > 0 && hp.SWA[il] {
		rope = &m.RopeSWA
	}
	cache := p.buf(bSub, hp.NRot)
	for j, row := range p.rows {
		if m.a.rope != ropeNone {
			rope.cache(cache, row.pos, m.ropeFactors(row.c))
			for h := range hp.NHead {
				rope.rotate(m.Level, q[j*nq+h*hd:j*nq+(h+1)*hd], cache)
			}
			for h := range hp.NHeadKV {
				rope.rotate(m.Level, k[j*nkv+h*hd:j*nkv+(h+1)*hd], cache)
			}
		}
	}
	p.emit("Qcur", il, q[:len(p.rows)*nq])
	p.emit("Kcur", il, k[:len(p.rows)*nkv])
	p.emit("Vcur", il, v[:len(p.rows)*nkv])
	for j, row := range p.rows {
		c := row.c
		kr, vr := k[j*nkv:(j+1)*nkv], v[j*nkv:(j+1)*nkv]
		if c.rot.k > 0 { // build_attn: K times attn_inp_k_rot (Q: attendAs)
			fwht(kr, c.rot.k)
		}
		if c.rot.v > 0 { // V times attn_inp_v_rot
			fwht(vr, c.rot.v)
		}
		if t := c.types.K; t == gguf.F16 {
			m.Level.FP32ToFP16Row(kr, c.k[il][row.pos*nkv:(row.pos+1)*nkv])
		} else {
			b := rowBytes(t, nkv)
			quantizeRow(t, kr, c.kq[il][row.pos*b:(row.pos+1)*b])
		}
		if t := c.types.V; t == gguf.F16 {
			m.Level.FP32ToFP16Row(vr, c.v[il][row.pos*nkv:(row.pos+1)*nkv])
		} else {
			b := rowBytes(t, nkv)
			quantizeRow(t, vr, c.vq[il][row.pos*b:(row.pos+1)*b])
		}
	}
}

// ropeFactors are the frequency factors of phi3's RoPE for context c:
// rope_factors_long when c's size passes n_ctx_orig_yarn
// (llama_model::get_rope_factors: n_ctx_seq > n_ctx_orig_yarn), else
// rope_factors_short; nil for a model without them.
func (m *Model) ropeFactors(c *Context) []float32 {
	if m.RopeLong != nil && c.nCells > m.HP.NCtxOrigYarn {
		return m.RopeLong
	}
	return m.RopeShort
}

// attend is the attention of layer il for the active rows' queries q
// (n × NHead*HeadDim; scale is kq_scale), over each row's own sequence's
// cache: causal, within the sliding window on gemma3's sliding layers,
// non-causal over the whole input for an encoder. On the last layer of an
// untraced pass only the output rows attend (their attention and output
// projection do not depend on the other rows): the active rows become the
// output rows, with their micro-batch classes until prune. Traced as
// kqv_out.
func (p *pass) attend(il int, q []float32, scale float32) []float32 {
	return p.attendAs("kqv_out", il, q, scale)
}

// attendAs is attend traced as name ("" for none: bert names the result
// after its output projection).
func (p *pass) attendAs(name string, il int, q []float32, scale float32) []float32 {
	hp := p.hp
	nq := hp.NHead * hp.HeadDim
	if p.last && p.tr == nil {
		nOut := len(p.outRows)
		qo := p.buf(bQO, nOut*nq)
		p.arows, p.acls = p.arows[:0], p.acls[:0]
		for i, j := range p.outRows {
			p.arows = append(p.arows, p.rows[j])
			p.acls = append(p.acls, p.cls[j])
			copy(qo[i*nq:(i+1)*nq], q[j*nq:(j+1)*nq])
		}
		q, p.n, p.early = qo, nOut, true
	}
	for j, row := range p.arows[:p.n] {
		if row.c.rot.k > 0 { // build_attn: Q times attn_inp_k_rot, after any scaling of Q
			fwht(q[j*nq:(j+1)*nq], row.c.rot.k)
		}
	}
	out := p.buf(bAttn, p.n*nq)
	if p.n > 0 {
		p.r.attend(p.arows, q[:p.n*nq], out, il, scale)
	}
	if name != "" {
		p.emit(name, il, out)
	}
	for j, row := range p.arows[:p.n] {
		if row.c.rot.v > 0 { // build_attn: kqv_out times attn_inp_v_rot
			fwht(out[j*nq:(j+1)*nq], row.c.rot.v)
		}
	}
	return out
}

// prune ends the last layer's rows that are not outputs (llama.cpp's
// ggml_get_rows of cur and of the residual by inp_out_ids): the residual
// and o (the attention's result, n × NEmbd) keep the output rows, and the
// matmuls from here on use the output classes. Other layers: o as it is.
// ok is false when no row is left (a micro-batch without outputs stops
// here, as in llama.cpp).
func (p *pass) prune(o []float32) (out []float32, ok bool) {
	if !p.last {
		return o, true
	}
	d := p.hp.NEmbd
	nOut := len(p.outRows)
	xo := p.buf(bXO, nOut*d)
	if p.early {
		for i, j := range p.outRows {
			copy(xo[i*d:(i+1)*d], p.x[j*d:(j+1)*d])
		}
	} else { // traced: every row went through the attention
		oo := p.buf(bOO, nOut*d)
		for i, j := range p.outRows {
			copy(xo[i*d:(i+1)*d], p.x[j*d:(j+1)*d])
			copy(oo[i*d:(i+1)*d], o[j*d:(j+1)*d])
		}
		o = oo
	}
	p.x, p.n, p.early = xo, nOut, false
	p.acls = append(p.acls[:0], p.ocls...)
	p.arows = p.arows[:0]
	for _, j := range p.outRows {
		p.arows = append(p.arows, p.rows[j])
	}
	return o[:nOut*d], nOut > 0
}

// add is the residual ggml_add: dst = a + dst (float addition commutes, so
// the operands' order in the graph does not matter), traced as name.
func (p *pass) add(name string, il int, dst, a []float32) {
	n := p.n * p.hp.NEmbd
	for i := range n {
		dst[i] = a[i] + dst[i]
	}
	p.emit(name, il, dst[:n])
}

// glu is a gated unit over the active rows' gate and up halves (each n ×
// nff): swiglu (ggml_vec_swiglu_f32) or geglu (ggml_vec_geglu_f32) into
// gate, row by row, each row cut into chunks of swigluChunk values (a
// multiple of 8, so every 8-wide group and the row's scalar tail are the
// reference's) spread over the pool. gate and up are a row's two halves
// when stride is 2*nff (phi3's fused up), the separate buffers otherwise.
func (p *pass) glu(gelu bool, out, gate, up []float32, nff, stride int) {
	perRow := (nff + swigluChunk - 1) / swigluChunk
	l := p.m.Level
	p.r.pool.For(p.n*perRow, func(lo, hi int) {
		for u := lo; u < hi; u++ {
			j, i0 := u/perRow, u%perRow*swigluChunk
			i1 := min(i0+swigluChunk, nff)
			g := gate[j*stride+i0 : j*stride+i1]
			o := out[j*nff+i0 : j*nff+i1]
			if gelu {
				geglu(o, g, up[j*stride+i0:j*stride+i1])
			} else {
				swiglu(l, o, g, up[j*stride+i0:j*stride+i1])
			}
		}
	})
}

// ffnGLU is build_ffn with a parallel gate (LLM_FFN_PAR): gate and up of
// cur (one shared quantization; each times its bitnet scale), silu or gelu
// of gate times up, then ffn_down unless subNorm is set (bitnet: the
// caller norms and projects). Traced as ffn_gate, ffn_up, ffn_swiglu or
// ffn_geglu, ffn_out.
func (p *pass) ffnGLU(il int, cur []float32, l *Layer, gelu bool) []float32 {
	nff := p.hp.NFF
	gate, up := p.buf(bGate, p.n*nff), p.buf(bUp, p.n*nff)
	p.shared(cur[:p.n*p.hp.NEmbd], l.FFNGate.product(gate), l.FFNUp.product(up))
	p.emit("ffn_gate", il, gate)
	p.emit("ffn_up", il, up)
	if l.SUp != nil {
		scaleBy(up, l.SUp)
		p.emit("ffn_up_s", il, up)
	}
	if l.SGate != nil {
		scaleBy(gate, l.SGate)
		p.emit("ffn_gate_s", il, gate)
	}
	p.glu(gelu, gate, gate, up, nff, nff)
	if gelu {
		p.emit("ffn_geglu", il, gate)
	} else {
		p.emit("ffn_swiglu", il, gate)
	}
	return gate
}

// down is ffn_down of the activation act (n × n_ff), times its scale and
// plus its bias, traced as name.
func (p *pass) down(name string, il int, act []float32, l *Layer) []float32 {
	o := p.linear(&l.FFNDown, act, bO)
	scaleBy(o, l.SDown)
	bias(o, l.BDown)
	p.emit(name, il, o)
	return o
}

// defaultScale is the attention's kq_scale of the graphs that do not scale Q
// themselves: 1/sqrtf(head_dim).
func (p *pass) defaultScale() float32 { return 1 / fmath.Sqrtf(float32(p.hp.HeadDim)) }
