package train

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// FineTuneOptions configure ternary ES on a trained student's last layers.
type FineTuneOptions struct {
	ES      ESOptions
	Iters   int
	Windows int     // training windows (of the student's Seq tokens) the fitness is measured on
	Seed    uint64  // which windows
	Lambda  float64 // the loss's weight of the teacher's soft targets, as in training
}

// FineTuneResult is what a fine-tune measured: the loss on its windows before and after (through the deployed
// kernels), per iteration.
type FineTuneResult struct {
	Iters         int
	Before, After float64
	Curve         []float64
	Seconds       float64
}

// lastLayers is the part of the student ES trains: the last block's ffn_down and the output matrix as genomes,
// fed with the frozen activations of the layers before them.
type lastLayers struct {
	down, out *Genome
	a, xMid   []float32 // the last block's SwiGLU output (n×n_ff) and residual before ffn_down (n×n_embd)
	norm      []float32 // output_norm
	eps       float64
	targets   []int32
	soft      *Soft
	lambda    float64
	n, embd   int
	vocab     int

	w          *quant.Work
	z, x, h, l []float32
	rstd       []float32
	rows       []lossRow
	dz         []float32
}

// loss runs the genomes on the frozen activations through package quant's TQ2_0 kernels and returns the
// training loss ((1−λ)·CE + λ·KL, means over the positions).
func (s *lastLayers) loss() float64 {
	md, mo := s.down.Matrix(), s.out.Matrix()
	_, _ = md.Repack()
	_, _ = mo.Repack()
	s.w.MatMul(&md, s.a, s.n, s.z)
	for i := range s.x {
		s.x[i] = s.xMid[i] + s.z[i]
	}
	rmsNormForward(&exec{}, s.h, s.rstd, s.x, s.norm, s.n, s.embd, s.eps)
	s.w.MatMul(&mo, s.h, s.n, s.l)
	crossEntropy(&exec{}, s.dz, s.l, s.targets, s.soft, s.lambda, s.rows, s.n, s.vocab)
	var ce, kl float64
	for _, r := range s.rows {
		ce += r.ce
		kl += r.kl
	}
	return ((1-s.lambda)*ce + s.lambda*kl) / float64(s.n)
}

// FineTuneLastLayers trains the last block's ffn_down and the output matrix of a ternary student by ternary ES:
// the genomes are the TQ2_0 bytes of the exported student src (trained state = served state), the fitness the
// distillation loss on o.Windows windows of data, computed from the activations the frozen layers before them
// give (the checkpoint's model, its straight-through forward) through the deployed TQ2_0 kernels. It writes the
// fine-tuned student to dst: src with those two tensors' bytes replaced.
func FineTuneLastLayers(ctx context.Context, m *Model, src *gguf.File, data *Data, o FineTuneOptions, dst io.Writer,
	pool *parallel.Pool, level quant.Level, progress func(iter int, loss float64)) (FineTuneResult, error) {
	c := m.Cfg
	if c.Mode != ModeTernary || o.Windows < 1 || o.Iters < 1 {
		return FineTuneResult{}, fmt.Errorf("train: ES fine-tune needs a ternary student, ≥ 1 window and ≥ 1 iteration")
	}
	last := fmt.Sprintf("blk.%d.ffn_down.weight", c.Layers-1)
	genome := func(name string, rows, cols int) (*Genome, error) {
		ti, ok := src.Tensor(name)
		if !ok || ti.Type != gguf.TQ2_0 {
			return nil, fmt.Errorf("train: %s is not a TQ2_0 tensor of the student file", name)
		}
		return GenomeOf(name, rows, cols, append([]byte(nil), src.TensorData(ti)...))
	}
	s := &lastLayers{eps: c.RMSEps, lambda: o.Lambda, embd: c.Embd, vocab: c.Vocab}
	var err error
	if s.down, err = genome(last, c.Embd, c.FF); err != nil {
		return FineTuneResult{}, err
	}
	if s.out, err = genome("output.weight", c.Vocab, c.Embd); err != nil {
		return FineTuneResult{}, err
	}
	// the frozen activations
	tr, err := NewTrainer(m, Options{Steps: 1, Batch: o.Windows, LR: 1, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Seed: o.Seed}, data, pool, level)
	if err != nil {
		return FineTuneResult{}, err
	}
	tokens, targets, soft := tr.Batch(0)
	p := newPass(c, o.Windows)
	m.prepare(&tr.e)
	m.forward(&tr.e, p, tokens)
	la := p.layers[c.Layers-1]
	s.n = p.n
	s.a, s.xMid, s.norm, s.targets, s.soft = la.a, la.xMid, m.outNorm.W, targets, soft
	s.z, s.x, s.h, s.l = make([]float32, s.n*c.Embd), make([]float32, s.n*c.Embd), make([]float32, s.n*c.Embd), make([]float32, s.n*c.Vocab)
	s.rstd, s.rows, s.dz = make([]float32, s.n), make([]lossRow, s.n), make([]float32, s.n*c.Vocab)
	if s.w, err = quant.NewWork(level, pool); err != nil {
		return FineTuneResult{}, err
	}
	es, err := NewES([]*Genome{s.down, s.out}, o.ES)
	if err != nil {
		return FineTuneResult{}, err
	}
	t0 := time.Now()
	res := FineTuneResult{Before: s.loss()}
	for es.Iter < o.Iters {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		es.Step(func() float64 { return -s.loss() })
		l := s.loss()
		res.Curve = append(res.Curve, l)
		if progress != nil {
			progress(es.Iter, l)
		}
	}
	res.Iters, res.After, res.Seconds = es.Iter, s.loss(), time.Since(t0).Seconds()
	if math.IsNaN(res.After) {
		return res, fmt.Errorf("train: ES fine-tune: the loss is NaN")
	}
	return res, rewrite(dst, src, map[string][]byte{last: s.down.Data, "output.weight": s.out.Data})
}

// rewrite copies a GGUF file with some tensors' bytes replaced (same names, types and shapes).
func rewrite(dst io.Writer, src *gguf.File, replace map[string][]byte) error {
	infos := make([]gguf.TensorInfo, len(src.Tensors))
	for i, t := range src.Tensors {
		infos[i] = gguf.TensorInfo{Name: t.Name, Ne: t.Ne, Type: t.Type}
	}
	w, err := gguf.NewWriter(dst, src.KVs, infos)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	for i := range src.Tensors {
		t := &src.Tensors[i]
		b := src.TensorData(t)
		if r, ok := replace[t.Name]; ok {
			if len(r) != len(b) {
				return fmt.Errorf("train: %s: %d bytes replace %d", t.Name, len(r), len(b))
			}
			b = r
		}
		if err := w.WriteTensor(b); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	return w.Close()
}
