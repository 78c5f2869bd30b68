package model

import (
	"errors"
	"fmt"

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
// from the layer matrices (quant.Work.ClassDependent): tinyBLAS (F32/F16/BF16,
// from two columns on) and the repacked Q4_K gemm (the columns in whole
// groups of four).
type classDeps struct{ tiny, gemm bool }

func layerDeps(m *Model, w *quant.Work) classDeps {
	var d classDeps
	for i := range m.Layers {
		for _, lin := range m.Layers[i].linears() {
			p := &lin.Planes[0]
			if !w.ClassDependent(p) {
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
	return &Runner{m: m, pool: pool, work: work, deps: layerDeps(m, work), wscr: make([]workerScratch, threads)}, nil
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
	// Embed asks for embeddings instead of logits (llama_context with
	// embeddings on: cparams.embeddings): Decode sets Embd to the NEmbd
	// values of each output row's final hidden state (result_norm, bert's
	// result_embd), in order, and computes no logits. An encoder's spans
	// must ask for it.
	Embed bool
	Embd  []float32
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
		if r.m.a.encoder {
			// bert: llama_encode evaluates the whole input in one micro-batch
			// of non-causal attention, every row an output.
			if !s.Embed || pos != 0 || s.First != 0 || s.UBatch != len(s.Tokens) || s.Outputs != len(s.Tokens) {
				return fmt.Errorf("model: span %d: the %s encoder evaluates a whole input at once into embeddings (an empty context, one micro-batch, every row an output)", i, r.m.Arch)
			}
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

// rowRef is one row of a forward pass: its sequence, position, fresh
// micro-batch class and the end of the cells its attention sees (pos+1 for
// causal attention, the whole input for an encoder's).
type rowRef struct {
	c     *Context
	pos   int
	cls   quant.ColClass
	kvEnd int
}

// runBuf is a forward pass's activations, grown to the largest batch and
// reused.
type runBuf struct {
	rows      []rowRef
	cls, ocls []quant.ColClass
	outRows   []int
	x         []float32
	bufs      [nBufs][]float32
	arows     []rowRef
	acls      []quant.ColClass
}

// forward evaluates the rows of spans (rows in all) through the model's
// architecture: the token embeddings (and the architecture's input ops), each
// layer's block, then the output norm and logits (or the embeddings the
// spans ask for).
func (r *Runner) forward(spans []Span, rows int) {
	m, hp, b := r.m, &r.m.HP, &r.buf
	d := hp.NEmbd
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
		next[s.Ctx] = pos + len(s.Tokens)
	}
	seen := map[*Context]int{}
	for si := range spans {
		s := &spans[si]
		pos, ok := seen[s.Ctx]
		if !ok {
			pos = len(s.Ctx.tokens)
		}
		for i := range s.Tokens {
			cls := quant.ColClass{N: int32(s.UBatch), Index: int32(s.First + i)}
			if oc, ok := s.rowOut(i); ok {
				b.ocls = append(b.ocls, oc)
				b.outRows = append(b.outRows, len(b.rows))
			}
			end := pos + i + 1
			if m.a.encoder {
				end = next[s.Ctx]
			}
			b.rows = append(b.rows, rowRef{c: s.Ctx, pos: pos + i, cls: cls, kvEnd: end})
			b.cls = append(b.cls, cls)
		}
		seen[s.Ctx] = pos + len(s.Tokens)
	}
	nOut := len(b.outRows)
	p := &pass{r: r, m: m, hp: hp, b: b, tr: tr, rows: b.rows, cls: b.cls, outRows: b.outRows, ocls: b.ocls,
		n: rows, acls: append(b.acls[:0], b.cls...), arows: append(b.arows[:0], b.rows...)}
	b.x = grow32(b.x, rows*d)
	p.x = b.x
	ri := 0
	for si := range spans {
		for _, t := range spans[si].Tokens {
			m.TokEmbd.Row(int(t), p.x[ri*d:(ri+1)*d])
			ri++
		}
	}
	if in := m.a.inputs; in != nil {
		in(p)
	}
	for il := range m.Layers {
		p.last = il == hp.NLayer-1
		m.a.block(p, il, &m.Layers[il])
		if p.n == 0 {
			break
		}
	}
	b.acls, b.arows = p.acls, p.arows
	// The rows' cells are written: record them.
	for _, row := range b.rows {
		c := row.c
		c.sigs = append(c.sigs, r.cellSig(c, row.cls, row.pos))
	}
	for si := range spans {
		s := &spans[si]
		s.Ctx.tokens = append(s.Ctx.tokens, s.Tokens...)
		s.Logits, s.Embd = nil, nil
	}
	if nOut == 0 {
		return
	}
	x := p.x[:nOut*d]
	if !m.a.noOutputNorm {
		x = p.norm("result_norm", -1, p.buf(bNrm, nOut*d), x, m.OutputNorm, nil)
	} else {
		p.emit("result_embd", -1, x)
	}
	// The output rows of each span, and which of them want logits.
	var lrows []int
	at := 0
	for si := range spans {
		s := &spans[si]
		no := 0
		for i := range s.Tokens {
			if _, ok := s.rowOut(i); ok {
				no++
			}
		}
		if s.Embed {
			s.Embd = append([]float32(nil), x[at*d:(at+no)*d]...)
		} else {
			for i := range no {
				lrows = append(lrows, at+i)
			}
		}
		at += no
	}
	if len(lrows) == 0 {
		return
	}
	nl := len(lrows)
	in, lcls := x, b.ocls
	if nl != nOut {
		in = p.buf(bXO, nl*d)
		lcls = make([]quant.ColClass, nl)
		for i, j := range lrows {
			copy(in[i*d:(i+1)*d], x[j*d:(j+1)*d])
			lcls[i] = b.ocls[j]
		}
	}
	logits := make([]float32, nl*hp.NVocab)
	r.work.MatMulPlanesAs(m.Output.Planes, in[:nl*d], nl, lcls, logits)
	if hp.LogitSoftcap != 0 {
		softcap(logits, hp.LogitSoftcap)
	}
	p.emit("result_output", -1, logits)
	at = 0
	for si := range spans {
		s := &spans[si]
		if s.Embed {
			continue
		}
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
	case c.types.quantized(): // ggml's split-KV and tiled kernels take f16 K and V only
		return sigOneChunk
	case cls.N == 1 && !c.m.Encoder() && c.nek1(pos+1) >= 512: // an encoder's KV is its input: one cell here
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

// lo is the first cell row sees in the job's layer: past the sliding
// window on gemma3's sliding layers (llama_hparams::is_masked_swa,
// LLAMA_SWA_TYPE_STANDARD: cell p0 is masked for position p1 when p1 - p0
// >= n_swa), 0 otherwise.
func (j *attnJob) lo(row rowRef) int {
	hp := &j.r.m.HP
	if hp.NSWA > 0 && hp.SWA[j.il] {
		return max(0, row.pos-hp.NSWA+1)
	}
	return 0
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
					ws.qs = append(ws.qs, tileQuery{q: j.q[o : o+hd], out: j.out[o : o+hd], nKV: j.rows[ri].kvEnd,
						lo: j.lo(j.rows[ri]), vkq: ws.vkq[len(ws.qs)*hd : (len(ws.qs)+1)*hd]})
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
			nKV:    row.kvEnd, // the causal mask, or an encoder's whole input
			lo:     j.lo(row),
			scale:  j.scale,
			level:  l,
		}
		if c.types.quantized() {
			a.typeK, a.typeV = c.types.K, c.types.V
			a.kq, a.vq = c.kq[j.il], c.vq[j.il]
		}
		o := j.out[it.r0*nq+h*hd : it.r0*nq+(h+1)*hd]
		if c.attnKind(row.cls, row.pos) == sigSplit {
			a.splitKV(o, c.nek1(row.pos+1), c.attnThreads, &ws.sc)
			continue
		}
		ws.vkq = grow32(ws.vkq, hd)
		_, s := a.oneChunk(a.lo, a.nKV, ws.vkq[:hd], &ws.sc)
		normalize(o, ws.vkq[:hd], s)
	}
}
