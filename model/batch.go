package model

import (
	"errors"
	"fmt"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// Runner evaluates batches for the contexts made from it (NewContext): one
// pool of matmul workers and one quant.Work, shared by every sequence, so
// that a process runs one pool whatever its number of slots and each extra
// context costs its KV cache only. A Runner is not safe for concurrent use:
// one goroutine runs its Decode calls (and the Decode calls of its
// contexts).
type Runner struct {
	m     *Model
	pool  *parallel.Pool
	work  *quant.Work
	deps  classDeps
	buf   runBuf
	att   attnJob
	wscr  []workerScratch
	spans []Span // a lone context's Decode
}

// classDeps is which class bits change the arithmetic of a KV cell, found
// from the layer matrices (quant.ClassDependent): tinyBLAS (F32/F16/BF16,
// from two columns on) and the repacked Q4_K gemm (the columns in whole
// groups of four).
type classDeps struct{ tiny, gemm bool }

func layerDeps(m *Model) classDeps {
	var d classDeps
	for i := range m.Layers {
		l := &m.Layers[i]
		for _, lin := range []*Linear{&l.Wq, &l.Wk, &l.Wv, &l.Wo, &l.FFNGate, &l.FFNUp, &l.FFNDown} {
			p := &lin.Planes[0]
			if !quant.ClassDependent(p) {
				continue
			}
			if p.Type == gguf.Q4_K {
				d.gemm = true
			} else {
				d.tiny = true
			}
		}
	}
	return d
}

// NewRunner starts a pool of threads workers (at least 1; results do not
// depend on it) at the model's Level. Close stops it.
func (m *Model) NewRunner(threads int) (*Runner, error) {
	threads = max(1, threads)
	pool := parallel.New(threads)
	work, err := quant.NewWork(m.Level, pool)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("model: %w", err)
	}
	return &Runner{m: m, pool: pool, work: work, deps: layerDeps(m), wscr: make([]workerScratch, threads)}, nil
}

// Close stops the runner's workers. Its contexts must not decode
// afterwards; closing twice is harmless.
func (r *Runner) Close() { r.pool.Close() }

// Workers is the size of the runner's pool.
func (r *Runner) Workers() int { return r.pool.Size() }

// Model is the runner's model.
func (r *Runner) Model() *Model { return r.m }

// Span is a run of consecutive tokens of one sequence in a batch, with the
// micro-batch that a fresh evaluation puts them in: token i stands for row
// First+i of a micro-batch of UBatch rows whose last Outputs rows are
// outputs, and is computed with exactly that row's arithmetic (matmul path,
// attention kernel, inp_out_ids), whatever else the batch holds. A prompt
// evaluated from position 0 in llama.cpp's micro-batches of NUbatch gives
// its rows the micro-batch they sit in; a decoded token is a micro-batch of
// one row, an output.
type Span struct {
	Ctx    *Context
	Tokens []int32 // evaluated at the next positions of Ctx, in order
	UBatch int     // rows of the fresh micro-batch (>= First+len(Tokens))
	First  int     // the fresh row of Tokens[0]
	// Outputs is the number of output rows at the end of the fresh
	// micro-batch (0 <= Outputs <= UBatch).
	Outputs int
	// Logits is set by Decode: NVocab values for each output row among
	// Tokens, in order (nil for none); a new slice the caller keeps.
	Logits []float32
}

// rowOut is the output class of row r of s, or ok false when the row is not
// an output.
func (s *Span) rowOut(i int) (quant.ColClass, bool) {
	j := s.First + i
	first := s.UBatch - s.Outputs
	if j < first {
		return quant.ColClass{}, false
	}
	return quant.ColClass{N: int32(s.Outputs), Index: int32(j - first)}, true
}

// Decode evaluates the spans in one forward pass: every row's matmuls,
// attention over its own sequence's KV cache and (for outputs) logits, each
// with the arithmetic of its fresh micro-batch (see Span), so that the
// logits and cells are bit for bit those of each span evaluated alone.
// Spans of one context follow each other in position order. It fails,
// naming the reason, on a span of another runner, no tokens, a geometry
// outside its micro-batch, a token outside the vocabulary, or more positions
// than a context holds (ErrContextFull); on error no context changes.
func (r *Runner) Decode(spans []Span) error {
	next := map[*Context]int{}
	rows := 0
	for i := range spans {
		s := &spans[i]
		c := s.Ctx
		if c == nil || c.r != r {
			return fmt.Errorf("model: span %d: a context of another runner", i)
		}
		if len(s.Tokens) == 0 {
			return errors.New("model: decode of an empty batch")
		}
		if s.First < 0 || s.UBatch < s.First+len(s.Tokens) || s.Outputs < 0 || s.Outputs > s.UBatch {
			return fmt.Errorf("model: span %d: rows %d..%d of a micro-batch of %d with %d outputs", i, s.First, s.First+len(s.Tokens), s.UBatch, s.Outputs)
		}
		pos, ok := next[c]
		if !ok {
			pos = len(c.tokens)
		}
		if pos+len(s.Tokens) > c.nCtx {
			return fmt.Errorf("model: %d tokens after %d cached exceed the context of %d: %w", len(s.Tokens), pos, c.nCtx, ErrContextFull)
		}
		for _, t := range s.Tokens {
			if t < 0 || int(t) >= r.m.HP.NVocab {
				return fmt.Errorf("model: token id %d outside the vocabulary of %d", t, r.m.HP.NVocab)
			}
		}
		next[c] = pos + len(s.Tokens)
		rows += len(s.Tokens)
	}
	for c, n := range next {
		c.grow(n)
	}
	r.forward(spans, rows)
	return nil
}

// rowRef is one row of a forward pass: its sequence, position and fresh
// micro-batch class.
type rowRef struct {
	c   *Context
	pos int
	cls quant.ColClass
}

// runBuf is a forward pass's activations, grown to the largest batch and
// reused.
type runBuf struct {
	rows                  []rowRef
	cls, ocls             []quant.ColClass
	outRows               []int
	x, cur, q, k, v, attn []float32
	o, gate, up           []float32
	xo, qo, oo            []float32
	orow                  []rowRef
	ocls2                 []quant.ColClass // the output rows' layer classes (Wo of the last layer)
	nrm                   []float32
}

// forward is the graph (src/models/llama.cpp, src/models/qwen3.cpp) over the
// rows of spans (rows in all).
func (r *Runner) forward(spans []Span, rows int) {
	m, hp, b := r.m, r.m.HP, &r.buf
	d, hd := hp.NEmbd, hp.HeadDim
	nq, nkv := hp.NHead*hd, hp.NHeadKV*hd
	var tr *Context
	if len(spans) == 1 && spans[0].Ctx.trace != nil {
		tr = spans[0].Ctx
	}
	b.rows, b.cls, b.ocls, b.outRows = b.rows[:0], b.cls[:0], b.ocls[:0], b.outRows[:0]
	next := map[*Context]int{}
	for si := range spans {
		s := &spans[si]
		pos, ok := next[s.Ctx]
		if !ok {
			pos = len(s.Ctx.tokens)
		}
		for i := range s.Tokens {
			cls := quant.ColClass{N: int32(s.UBatch), Index: int32(s.First + i)}
			if oc, ok := s.rowOut(i); ok {
				b.ocls = append(b.ocls, oc)
				b.outRows = append(b.outRows, len(b.rows))
			}
			b.rows = append(b.rows, rowRef{c: s.Ctx, pos: pos + i, cls: cls})
			b.cls = append(b.cls, cls)
		}
		next[s.Ctx] = pos + len(s.Tokens)
	}
	nOut := len(b.outRows)
	x := grow32(b.x, rows*d)
	b.x = x
	ri := 0
	for si := range spans {
		for _, t := range spans[si].Tokens {
			m.TokEmbd.Row(int(t), x[ri*d:(ri+1)*d])
			ri++
		}
	}
	b.cur, b.q, b.k, b.v = grow32(b.cur, rows*d), grow32(b.q, rows*nq), grow32(b.k, rows*nkv), grow32(b.v, rows*nkv)
	b.attn, b.o = grow32(b.attn, rows*nq), grow32(b.o, rows*d)
	b.gate, b.up = grow32(b.gate, rows*hp.NFF), grow32(b.up, rows*hp.NFF)
	cur, q, k, v, attn, o := b.cur, b.q, b.k, b.v, b.attn, b.o
	cache := make([]float32, hp.NRot)
	scale := 1 / fmath.Sqrtf(float32(hd))
	for il, l := range m.Layers {
		last := il == hp.NLayer-1
		for j := range rows {
			rmsNormMul(cur[j*d:(j+1)*d], x[j*d:(j+1)*d], l.AttnNorm, hp.RMSEps)
		}
		tr.emit("attn_norm", il, cur[:rows*d])
		// One quantization of cur for the three (the reference quantizes
		// each mul_mat's src1 itself, to the same bits).
		r.work.MatMulSharedAs(cur[:rows*d], rows, b.cls, l.Wq.product(q), l.Wk.product(k), l.Wv.product(v))
		if m.g.qkNorm {
			for h := range rows * hp.NHead {
				x := q[h*hd : (h+1)*hd]
				rmsNormMul(x, x, l.AttnQNorm, hp.RMSEps)
			}
			for h := range rows * hp.NHeadKV {
				x := k[h*hd : (h+1)*hd]
				rmsNormMul(x, x, l.AttnKNorm, hp.RMSEps)
			}
			tr.emit("Qcur_normed", il, q[:rows*nq])
			tr.emit("Kcur_normed", il, k[:rows*nkv])
		}
		for j, row := range b.rows {
			m.Rope.cache(cache, row.pos)
			for h := range hp.NHead {
				m.Rope.rotate(m.Level, q[j*nq+h*hd:j*nq+(h+1)*hd], cache)
			}
			for h := range hp.NHeadKV {
				m.Rope.rotate(m.Level, k[j*nkv+h*hd:j*nkv+(h+1)*hd], cache)
			}
			m.Level.FP32ToFP16Row(k[j*nkv:(j+1)*nkv], row.c.k[il][row.pos*nkv:(row.pos+1)*nkv])
			m.Level.FP32ToFP16Row(v[j*nkv:(j+1)*nkv], row.c.v[il][row.pos*nkv:(row.pos+1)*nkv])
		}
		tr.emit("Qcur", il, q[:rows*nq])
		tr.emit("Kcur", il, k[:rows*nkv])
		tr.emit("Vcur", il, v[:rows*nkv])
		// On the last layer llama.cpp keeps only the output rows
		// (ggml_get_rows by inp_out_ids) after the attention block; only
		// they need its attention and output projection, whose rows do not
		// depend on each other (a trace computes them all, as the graph).
		arows, aq, acls, xr := b.rows, q, b.cls, x
		n := rows
		if last && tr == nil {
			if nOut == 0 {
				break
			}
			b.orow, b.ocls2 = b.orow[:0], b.ocls2[:0]
			b.qo, b.xo = grow32(b.qo, nOut*nq), grow32(b.xo, nOut*d)
			for i, j := range b.outRows {
				b.orow = append(b.orow, b.rows[j])
				b.ocls2 = append(b.ocls2, b.cls[j])
				copy(b.qo[i*nq:(i+1)*nq], q[j*nq:(j+1)*nq])
				copy(b.xo[i*d:(i+1)*d], x[j*d:(j+1)*d])
			}
			arows, aq, acls, xr, n = b.orow, b.qo, b.ocls2, b.xo, nOut
		}
		r.attend(arows, aq[:n*nq], attn[:n*nq], il, scale)
		tr.emit("kqv_out", il, attn[:n*nq])
		r.work.MatMulPlanesAs(l.Wo.Planes, attn[:n*nq], n, acls, o[:n*d])
		tr.emit("attn_out", il, o[:n*d])
		fcls := acls
		if last {
			if nOut == 0 {
				break
			}
			if tr != nil { // the output rows of the traced full layer
				b.xo, b.oo = grow32(b.xo, nOut*d), grow32(b.oo, nOut*d)
				for i, j := range b.outRows {
					copy(b.xo[i*d:(i+1)*d], x[j*d:(j+1)*d])
					copy(b.oo[i*d:(i+1)*d], o[j*d:(j+1)*d])
				}
				xr = b.xo
				copy(o, b.oo[:nOut*d])
			}
			n, fcls = nOut, b.ocls
		}
		for i := range n * d {
			xr[i] = o[i] + xr[i]
		}
		tr.emit("ffn_inp", il, xr[:n*d])
		for j := range n {
			rmsNormMul(cur[j*d:(j+1)*d], xr[j*d:(j+1)*d], l.FFNNorm, hp.RMSEps)
		}
		tr.emit("ffn_norm", il, cur[:n*d])
		gate, up := b.gate[:n*hp.NFF], b.up[:n*hp.NFF]
		r.work.MatMulSharedAs(cur[:n*d], n, fcls, l.FFNGate.product(gate), l.FFNUp.product(up))
		tr.emit("ffn_gate", il, gate)
		tr.emit("ffn_up", il, up)
		// ggml_vec_swiglu_f32 runs row by row; each row is cut into chunks of
		// swigluChunk values (a multiple of 8, so every 8-wide group and the
		// row's scalar tail are the reference's) spread over the pool.
		perRow := (hp.NFF + swigluChunk - 1) / swigluChunk
		r.pool.For(n*perRow, func(lo, hi int) {
			for u := lo; u < hi; u++ {
				j, i0 := u/perRow, u%perRow*swigluChunk
				i1 := min(i0+swigluChunk, hp.NFF)
				g := gate[j*hp.NFF+i0 : j*hp.NFF+i1]
				swiglu(m.Level, g, g, up[j*hp.NFF+i0:j*hp.NFF+i1])
			}
		})
		tr.emit("ffn_swiglu", il, gate)
		r.work.MatMulPlanesAs(l.FFNDown.Planes, gate, n, fcls, o[:n*d])
		tr.emit("ffn_out", il, o[:n*d])
		for i := range n * d {
			xr[i] = o[i] + xr[i]
		}
		tr.emit("l_out", il, xr[:n*d])
		x = xr
	}
	// The rows' cells are written: record them.
	for _, row := range b.rows {
		c := row.c
		c.sigs = append(c.sigs, r.cellSig(c, row.cls, row.pos))
	}
	for si := range spans {
		s := &spans[si]
		s.Ctx.tokens = append(s.Ctx.tokens, s.Tokens...)
		s.Logits = nil
	}
	if nOut == 0 {
		return
	}
	nrm := grow32(b.nrm, nOut*d)
	b.nrm = nrm
	for j := range nOut {
		rmsNormMul(nrm[j*d:(j+1)*d], x[j*d:(j+1)*d], m.OutputNorm, hp.RMSEps)
	}
	tr.emit("result_norm", -1, nrm)
	logits := make([]float32, nOut*hp.NVocab)
	r.work.MatMulPlanesAs(m.Output.Planes, nrm, nOut, b.ocls, logits)
	tr.emit("result_output", -1, logits)
	at := 0
	for si := range spans {
		s := &spans[si]
		no := 0
		for i := range s.Tokens {
			if _, ok := s.rowOut(i); ok {
				no++
			}
		}
		if no > 0 {
			s.Logits = logits[at*hp.NVocab : (at+no)*hp.NVocab : (at+no)*hp.NVocab]
			at += no
		}
	}
}

// Cell classes: how a KV cell's values were computed, as far as it changes
// their bits (see Context.ExactPrefix): the attention kernel of its row, and
// where the layer matrices depend on it (classDeps) tinyBLAS and the Q4_K
// gemm.
const (
	sigOneChunk uint8 = 1 + iota // the one-row kernel over the causal cells
	sigTiled                     // the tiled kernel (64 rows or more)
	sigSplit                     // split-KV (one row, 512 padded cells or more)
	sigTiny     uint8 = 1 << 2   // tinyBLAS for F32/F16/BF16 layer matrices
	sigGemm     uint8 = 1 << 3   // the Q4_K repacked gemm
	sigUnknown  uint8 = 0        // matches no fresh evaluation
)

// attnKind is the attention kernel the reference runs for a row of class
// cls at position pos of c (model.Context.attention's choice).
func (c *Context) attnKind(cls quant.ColClass, pos int) uint8 {
	hd := c.m.HP.HeadDim
	switch {
	case cls.N == 1 && c.nek1(pos+1) >= 512:
		return sigSplit
	case int(cls.N) >= faTile && hd%8 == 0:
		return sigTiled
	}
	return sigOneChunk
}

// nek1 is the KV length attention sees with used cells in use: the cells
// padded to 256, at least 256, at most the context's.
func (c *Context) nek1(used int) int {
	return min(c.nCells, max(kvPad, (used+kvPad-1)/kvPad*kvPad))
}

// cellSig is the class of the cell a row of class cls at pos writes.
func (r *Runner) cellSig(c *Context, cls quant.ColClass, pos int) uint8 {
	s := c.attnKind(cls, pos)
	if r.deps.tiny && cls.N >= 2 {
		s |= sigTiny
	}
	if r.deps.gemm && cls.Index < cls.N-cls.N%4 {
		s |= sigGemm
	}
	return s
}

// attnItem is one unit of a forward pass's attention: rows [r0, r1) of
// one sequence (consecutive in the pass) under KV head h for the tiled
// kernel, or row r0 under query head h for the one-row kernels.
type attnItem struct {
	tiled     bool
	r0, r1, h int
}

// attnJob is the attention of one layer over a forward pass's rows, as
// pool work items (attnItem).
type attnJob struct {
	r      *Runner
	rows   []rowRef
	q, out []float32
	il     int
	scale  float32
	items  []attnItem
}

// workerScratch is one worker's attention memory, grown on demand.
type workerScratch struct {
	sc  chunkScratch
	ts  tileScratch
	qs  []tileQuery
	vkq []float32
}

// attend runs flash attention for rows (q and out: NHead*HeadDim values
// per row, in rows' order) of layer il, each over its own sequence's cache
// with the kernel of its fresh micro-batch: split-KV for a lone row when
// the padded KV length reaches 512 (chunked by the context's mirrored
// reference thread count), the tiled kernel for micro-batches of 64 rows or
// more (head size a multiple of 8), the one-row kernel otherwise. Query head
// h reads KV head h/(NHead/NHeadKV) (grouped-query attention: ggml
// broadcasts K and V over neq2/nek2 heads). The tiled kernel runs in work
// items of one KV head and up to faTile consecutive rows of one sequence, all
// the heads of the group that read it: each KV tile is widened once per item
// (tiledKV); a row's result does not depend on its item mates.
func (r *Runner) attend(rows []rowRef, q, out []float32, il int, scale float32) {
	hp := r.m.HP
	j := &r.att
	j.r, j.rows, j.q, j.out, j.il, j.scale = r, rows, q, out, il, scale
	j.items = j.items[:0]
	// Tiled items first: they are the long ones.
	for i0 := 0; i0 < len(rows); {
		c := rows[i0].c
		if c.attnKind(rows[i0].cls, rows[i0].pos) != sigTiled {
			i0++
			continue
		}
		i1 := i0 + 1
		for i1 < len(rows) && i1-i0 < faTile && rows[i1].c == c && c.attnKind(rows[i1].cls, rows[i1].pos) == sigTiled {
			i1++
		}
		for h := range hp.NHeadKV {
			j.items = append(j.items, attnItem{tiled: true, r0: i0, r1: i1, h: h})
		}
		i0 = i1
	}
	for i, row := range rows {
		if row.c.attnKind(row.cls, row.pos) == sigTiled {
			continue
		}
		for h := range hp.NHead {
			j.items = append(j.items, attnItem{r0: i, r1: i + 1, h: h})
		}
	}
	r.pool.Run(len(j.items), 1, j)
	j.rows, j.q, j.out = nil, nil, nil
}

// Do runs items [lo, hi).
func (j *attnJob) Do(worker, lo, hi int) {
	r := j.r
	hp, l := r.m.HP, r.m.Level
	hd := hp.HeadDim
	nq, nkv := hp.NHead*hd, hp.NHeadKV*hd
	group := hp.NHead / hp.NHeadKV
	ws := &r.wscr[worker]
	for _, it := range j.items[lo:hi] {
		c := j.rows[it.r0].c
		kc, vc := c.k[j.il], c.v[j.il]
		if it.tiled {
			nr := (it.r1 - it.r0) * group
			ws.vkq = grow32(ws.vkq, nr*hd)
			ws.qs = ws.qs[:0]
			for ri := it.r0; ri < it.r1; ri++ {
				for h := it.h * group; h < (it.h+1)*group; h++ {
					o := ri*nq + h*hd
					ws.qs = append(ws.qs, tileQuery{q: j.q[o : o+hd], out: j.out[o : o+hd], nKV: j.rows[ri].pos + 1,
						vkq: ws.vkq[len(ws.qs)*hd : (len(ws.qs)+1)*hd]})
				}
			}
			tiledKV(l, ws.qs, kc, vc, it.h*hd, nkv, j.scale, &ws.ts)
			continue
		}
		row := j.rows[it.r0]
		h := it.h
		a := attnRow{
			q:      j.q[it.r0*nq+h*hd : it.r0*nq+(h+1)*hd],
			kc:     kc,
			vc:     vc,
			off:    h / group * hd,
			stride: nkv,
			nKV:    row.pos + 1, // the causal mask
			scale:  j.scale,
			level:  l,
		}
		o := j.out[it.r0*nq+h*hd : it.r0*nq+(h+1)*hd]
		if c.attnKind(row.cls, row.pos) == sigSplit {
			a.splitKV(o, c.nek1(row.pos+1), c.attnThreads, &ws.sc)
			continue
		}
		ws.vkq = grow32(ws.vkq, hd)
		_, s := a.oneChunk(0, a.nKV, ws.vkq[:hd], &ws.sc)
		normalize(o, ws.vkq[:hd], s)
	}
}
