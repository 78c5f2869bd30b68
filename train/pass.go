package train

// layerActs are one block's activations kept for the backward pass.
type layerActs struct {
	xIn, h1, rstd1, q, k, v, p, o, xMid, h2, rstd2, g, u, a []float32
}

// pass holds the activations and scratch of one batch shape (batch sequences of cfg.Seq tokens).
type pass struct {
	batch, n                   int
	layers                     []layerActs
	xOut                       []float32 // the last block's output
	hF, rstdF, logits, dlogits []float32
	rows                       []lossRow

	// scratch of the backward pass
	dx, dh, dtmp, dq, dk, dv, do, dg, du, da, dyT, part, ds []float32
}

func newPass(c Config, batch int) *pass {
	n := batch * c.Seq
	hd := c.HeadDim()
	nq, nkv := c.Heads*hd, c.KVHeads*hd
	f := func(k int) []float32 { return make([]float32, k) }
	p := &pass{batch: batch, n: n}
	for range c.Layers {
		p.layers = append(p.layers, layerActs{
			xIn: f(n * c.Embd), h1: f(n * c.Embd), rstd1: f(n), q: f(n * nq), k: f(n * nkv), v: f(n * nkv),
			p: f(batch * c.Heads * c.Seq * c.Seq), o: f(n * nq), xMid: f(n * c.Embd), h2: f(n * c.Embd), rstd2: f(n),
			g: f(n * c.FF), u: f(n * c.FF), a: f(n * c.FF),
		})
	}
	p.xOut, p.hF, p.rstdF = f(n*c.Embd), f(n*c.Embd), f(n)
	p.logits, p.dlogits, p.rows = f(n*c.Vocab), f(n*c.Vocab), make([]lossRow, n)
	w := max(c.Embd, nq, c.FF)
	p.dx, p.dh = f(n*c.Embd), f(n*w)
	p.dq, p.dk, p.dv, p.do = f(n*nq), f(n*nkv), f(n*nkv), f(n*nq)
	p.dg, p.du, p.da = f(n*w), f(n*w), f(n*w)
	p.dyT = f(n * max(c.Vocab, w))
	p.part = f((n + gradChunk - 1) / gradChunk * c.Embd)
	p.ds = f(batch * c.KVHeads * c.Seq)
	return p
}

func (m *Model) shape(batch int) attnShape {
	c := m.Cfg
	return attnShape{batch: batch, seq: c.Seq, heads: c.Heads, kvHeads: c.KVHeads, headDim: c.HeadDim()}
}

// forward runs the batch's tokens (batch·seq, sequence after sequence) to the logits, the activations kept in p.
func (m *Model) forward(e *exec, p *pass, tokens []int32) {
	c := m.Cfg
	n := p.n
	hd := c.HeadDim()
	nq, nkv := c.Heads*hd, c.KVHeads*hd
	x := p.layers[0].xIn
	embedForward(x, m.embd.fw, tokens, c.Embd)
	for i := range m.layers {
		l, a := &m.layers[i], &p.layers[i]
		if i > 0 {
			copy(a.xIn, x)
		}
		x = a.xIn
		rmsNormForward(e, a.h1, a.rstd1, x, l.attnNorm.W, n, c.Embd, c.RMSEps)
		linearForward(e, a.q, a.h1, l.wq.fwT, n, c.Embd, nq)
		linearForward(e, a.k, a.h1, l.wk.fwT, n, c.Embd, nkv)
		linearForward(e, a.v, a.h1, l.wv.fwT, n, c.Embd, nkv)
		m.rope.apply(e, a.q, n, c.Seq, c.Heads, false)
		m.rope.apply(e, a.k, n, c.Seq, c.KVHeads, false)
		attentionForward(e, a.o, a.p, a.q, a.k, a.v, m.shape(p.batch))
		linearForward(e, a.xMid, a.o, l.wo.fwT, n, nq, c.Embd)
		addInto(e, a.xMid, x)
		rmsNormForward(e, a.h2, a.rstd2, a.xMid, l.ffnNorm.W, n, c.Embd, c.RMSEps)
		linearForward(e, a.g, a.h2, l.gate.fwT, n, c.Embd, c.FF)
		linearForward(e, a.u, a.h2, l.up.fwT, n, c.Embd, c.FF)
		swigluForward(e, a.a, a.g, a.u, n*c.FF)
		next := p.xOut
		if i+1 < len(m.layers) {
			next = p.layers[i+1].xIn
		}
		linearForward(e, next, a.a, l.down.fwT, n, c.FF, c.Embd)
		addInto(e, next, a.xMid)
		x = next
	}
	rmsNormForward(e, p.hF, p.rstdF, p.xOut, m.outNorm.W, n, c.Embd, c.RMSEps)
	linearForward(e, p.logits, p.hF, m.output.fwT, n, c.Embd, c.Vocab)
}

// addInto sets dst += src elementwise.
func addInto(e *exec, dst, src []float32) {
	e.rows(len(dst), 8192, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[i] += src[i]
		}
	})
}

// backward runs the gradient of the loss whose dlogits are in p back through the model, adding every trained
// weight's gradient to its G (which the caller zeroed).
func (m *Model) backward(e *exec, p *pass, tokens []int32) {
	c := m.Cfg
	n := p.n
	hd := c.HeadDim()
	nq, nkv := c.Heads*hd, c.KVHeads*hd
	// output and final norm
	dh := p.dh[:n*c.Embd]
	m.dwBig(e, p, m.output, p.dlogits, p.hF, dh, c.Embd, c.Vocab)
	dx := p.dx
	rmsNormBackward(e, dx, m.outNorm.G, dh, p.xOut, m.outNorm.W, p.rstdF, p.part, n, c.Embd)
	for i := len(m.layers) - 1; i >= 0; i-- {
		l, a := &m.layers[i], &p.layers[i]
		// x_out = x_mid + a·Wdᵀ
		da := p.da
		m.dwBig(e, p, l.down, dx, a.a, da, c.FF, c.Embd)
		swigluBackward(e, p.dg, p.du, da, a.g, a.u, n*c.FF)
		dh2 := p.dh[:n*c.Embd]
		m.dwBig(e, p, l.gate, p.dg, a.h2, dh2, c.Embd, c.FF)
		dh2b := p.da[:n*c.Embd] // da is consumed
		m.dwBig(e, p, l.up, p.du, a.h2, dh2b, c.Embd, c.FF)
		addInto(e, dh2, dh2b)
		dmid := p.dg[:n*c.Embd] // dg is consumed
		rmsNormBackward(e, dmid, l.ffnNorm.G, dh2, a.xMid, l.ffnNorm.W, a.rstd2, p.part, n, c.Embd)
		addInto(e, dx, dmid) // dx is now d x_mid
		// x_mid = x_in + o·Woᵀ
		m.dwBig(e, p, l.wo, dx, a.o, p.do, nq, c.Embd)
		attentionBackward(e, p.dq, p.dk, p.dv, p.do, a.p, a.q, a.k, a.v, m.shape(p.batch))
		m.rope.apply(e, p.dq, n, c.Seq, c.Heads, true)
		m.rope.apply(e, p.dk, n, c.Seq, c.KVHeads, true)
		// the rope'd q and k were kept; dW needs the normed input only
		dh1 := p.dh[:n*c.Embd]
		m.dwBig(e, p, l.wq, p.dq, a.h1, dh1, c.Embd, nq)
		tmp := p.du[:n*c.Embd] // du is consumed
		m.dwBig(e, p, l.wk, p.dk, a.h1, tmp, c.Embd, nkv)
		addInto(e, dh1, tmp)
		m.dwBig(e, p, l.wv, p.dv, a.h1, tmp, c.Embd, nkv)
		addInto(e, dh1, tmp)
		rmsNormBackward(e, tmp, l.attnNorm.G, dh1, a.xIn, l.attnNorm.W, a.rstd1, p.part, n, c.Embd)
		addInto(e, dx, tmp) // dx is now d x_in
	}
	if m.embd.trains() {
		embedBackward(m.embd.G, dx, tokens, c.Embd)
	}
}

// dwBig is one linear layer's backward: dx (n×in) = dy·fw and, when t trains, G += dyᵀ·x.
func (m *Model) dwBig(e *exec, p *pass, t *Tensor, dy, x, dx []float32, in, out int) {
	var g []float32
	if t.trains() {
		g = p.gradScratch(len(t.G))
	}
	linearBackward(e, dx, g, dy, x, t.fw, p.dyT, p.n, in, out)
	if g != nil {
		addInto(e, t.G, g)
	}
}

// gradScratch returns scratch for one weight gradient (grown on first use).
func (p *pass) gradScratch(n int) []float32 {
	if len(p.dtmp) < n {
		p.dtmp = make([]float32, n)
	}
	return p.dtmp[:n]
}

// loss runs one batch forward and backward: it zeroes the gradients, quantizes the ternary weights, scores the
// logits against targets (and the teacher's soft targets, with weight lambda; nil: none) and leaves every trained
// weight's gradient in G. It returns the mean hard cross-entropy and the mean KL to the teacher.
func (m *Model) loss(e *exec, p *pass, tokens, targets []int32, soft *Soft, lambda float64) (ce, kl float64) {
	for _, t := range m.Tensors {
		clear(t.G)
	}
	m.prepare(e)
	m.forward(e, p, tokens)
	crossEntropy(e, p.dlogits, p.logits, targets, soft, lambda, p.rows, p.n, m.Cfg.Vocab)
	for _, r := range p.rows {
		ce += r.ce
		kl += r.kl
	}
	m.backward(e, p, tokens)
	return ce / float64(p.n), kl / float64(p.n)
}
