package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// Options are the optimizer, the schedule and the batches of a run.
type Options struct {
	Steps       int     `json:"steps"`        // optimizer steps of the whole run
	Batch       int     `json:"batch"`        // sequences per step
	Warmup      int     `json:"warmup"`       // steps of linear warm-up from 0 to LR
	LR          float64 `json:"lr"`           // peak learning rate
	MinLR       float64 `json:"min_lr"`       // the cosine schedule's floor, reached at Steps
	WeightDecay float64 `json:"weight_decay"` // AdamW's decoupled decay of the matrices
	Beta1       float64 `json:"beta1"`
	Beta2       float64 `json:"beta2"`
	Eps         float64 `json:"eps"`
	Clip        float64 `json:"clip"`   // the global gradient norm is clipped to this (0: off)
	Lambda      float64 `json:"lambda"` // weight of the teacher's soft targets in the loss (0: hard tokens only)
	Seed        uint64  `json:"seed"`   // the batches' stream (the initial weights take their own seed)
}

// DefaultOptions are the student run's settings (see docs/TRAINING.md).
func DefaultOptions() Options {
	return Options{Steps: 1000, Batch: 8, Warmup: 50, LR: 2e-3, MinLR: 2e-4, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95,
		Eps: 1e-8, Clip: 1, Lambda: 0.5, Seed: 1}
}

// Validate checks the options. An error names the option by the flag of bankml train that sets it, in the CLI's
// range wording ("train: --lr: value 0 out of range (0, inf)"); Beta1, Beta2 and Eps, which no flag sets, by their
// field names.
func (o Options) Validate() error {
	bad := func(name string, v any, r, note string) error {
		if note != "" {
			note = " (" + note + ")"
		}
		return fmt.Errorf("train: %s: value %v out of range %s%s", name, v, r, note)
	}
	switch {
	case o.Steps < 1:
		return bad("--steps", o.Steps, "[1, inf)", "")
	case o.Batch < 1:
		return bad("--batch", o.Batch, "[1, inf)", "")
	case o.Warmup < 0:
		return bad("--warmup", o.Warmup, "[0, inf)", "")
	case !(o.LR > 0) || math.IsInf(o.LR, 1):
		return bad("--lr", o.LR, "(0, inf)", "")
	case !(o.MinLR >= 0 && o.MinLR <= o.LR):
		return bad("--min-lr", o.MinLR, fmt.Sprintf("[0, %g]", o.LR), "at most --lr")
	case !(o.WeightDecay >= 0) || math.IsInf(o.WeightDecay, 1):
		return bad("--weight-decay", o.WeightDecay, "[0, inf)", "")
	case !(o.Clip >= 0) || math.IsInf(o.Clip, 1):
		return bad("--clip", o.Clip, "[0, inf)", "0: off")
	case !(o.Lambda >= 0 && o.Lambda <= 1):
		return bad("--lambda", o.Lambda, "[0, 1]", "the weight of the teacher's soft targets")
	case !(o.Beta1 >= 0 && o.Beta1 < 1):
		return bad("Beta1", o.Beta1, "[0, 1)", "")
	case !(o.Beta2 >= 0 && o.Beta2 < 1):
		return bad("Beta2", o.Beta2, "[0, 1)", "")
	case !(o.Eps > 0) || math.IsInf(o.Eps, 1):
		return bad("Eps", o.Eps, "(0, inf)", "")
	}
	return nil
}

// LRAt is the learning rate of step s (0-based): linear warm-up to LR over Warmup steps, then a cosine from LR to
// MinLR at Steps.
func (o Options) LRAt(s int) float64 {
	if s < o.Warmup {
		return o.LR * float64(s+1) / float64(o.Warmup)
	}
	span := max(1, o.Steps-o.Warmup)
	f := min(1, float64(s-o.Warmup)/float64(span))
	return o.MinLR + 0.5*(o.LR-o.MinLR)*(1+math.Cos(math.Pi*f))
}

// Record is one step of the loss curve.
type Record struct {
	Step    int     `json:"step"` // 1-based: the number of optimizer steps taken
	LR      float64 `json:"lr"`
	CE      float64 `json:"ce"`    // mean cross-entropy of the batch's next tokens (nats)
	KL      float64 `json:"kl"`    // mean KL(teacher's top-K ‖ student) (nats)
	GNorm   float64 `json:"gnorm"` // global gradient norm before clipping
	Tokens  int64   `json:"tokens"`
	Seconds float64 `json:"seconds"` // wall time of the run so far (not part of the bit-identical state)
}

// Trainer runs the optimizer over a model and a dataset. It is not safe for concurrent use.
type Trainer struct {
	Model   *Model
	Opt     Options
	Data    *Data // the training stream and its soft targets
	History []Record
	Step    int // optimizer steps taken

	e       exec
	p       *pass
	seconds float64
}

// NewTrainer checks the options against the model and the data and makes a trainer whose ops run on pool at the
// CPU level.
func NewTrainer(m *Model, opt Options, data *Data, pool *parallel.Pool, level quant.Level) (*Trainer, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	n := len(data.Tokens)
	if n < m.Cfg.Seq+2 {
		return nil, fmt.Errorf("train: %d training tokens are fewer than one sequence of %d plus its target", n, m.Cfg.Seq)
	}
	if len(data.Soft.ID) != n*data.Soft.K || len(data.Soft.P) != n*data.Soft.K {
		return nil, fmt.Errorf("train: %d soft targets of %d for %d tokens", len(data.Soft.ID), data.Soft.K, n)
	}
	for i, t := range data.Tokens {
		if t < 0 || int(t) >= m.Cfg.Vocab {
			return nil, fmt.Errorf("train: training token %d is %d, outside the vocabulary of %d", i, t, m.Cfg.Vocab)
		}
	}
	for i, t := range data.Soft.ID {
		if t < -1 || int(t) >= m.Cfg.Vocab || !(data.Soft.P[i] >= 0 && data.Soft.P[i] <= 1) {
			return nil, fmt.Errorf("train: soft target %d is token %d with probability %g", i, t, data.Soft.P[i])
		}
	}
	if opt.Lambda > 0 && data.Soft.K == 0 {
		return nil, errors.New("train: lambda > 0 needs soft targets in the data")
	}
	return &Trainer{Model: m, Opt: opt, Data: data, e: exec{pool: pool, level: level}}, nil
}

// Batch returns the tokens, targets and soft targets of step s: Batch windows of Seq tokens at offsets drawn
// from a PCG stream seeded with (Seed, s), so any step's batch is known without replaying the ones before it.
func (tr *Trainer) Batch(s int) (tokens, targets []int32, soft *Soft) {
	T, k := tr.Model.Cfg.Seq, tr.Data.Soft.K
	rng := rand.New(rand.NewPCG(tr.Opt.Seed, uint64(s)))
	span := len(tr.Data.Tokens) - T - 1
	soft = &Soft{K: k}
	for range tr.Opt.Batch {
		o := rng.IntN(span + 1)
		tokens = append(tokens, tr.Data.Tokens[o:o+T]...)
		targets = append(targets, tr.Data.Tokens[o+1:o+T+1]...)
		soft.ID = append(soft.ID, tr.Data.Soft.ID[o*k:(o+T)*k]...)
		soft.P = append(soft.P, tr.Data.Soft.P[o*k:(o+T)*k]...)
	}
	return tokens, targets, soft
}

// TrainStep takes one optimizer step and appends its Record to History.
func (tr *Trainer) TrainStep() (Record, error) {
	t0 := time.Now()
	m := tr.Model
	if tr.p == nil || tr.p.batch != tr.Opt.Batch {
		tr.p = newPass(m.Cfg, tr.Opt.Batch)
	}
	tokens, targets, soft := tr.Batch(tr.Step)
	ce, kl := m.loss(&tr.e, tr.p, tokens, targets, soft, tr.Opt.Lambda)
	if math.IsNaN(ce) || math.IsInf(ce, 0) {
		return Record{}, fmt.Errorf("train: step %d: the loss is %g (diverged; lower --lr)", tr.Step+1, ce)
	}
	lr := tr.Opt.LRAt(tr.Step)
	gn := tr.adamW(lr)
	tr.Step++
	tr.seconds += time.Since(t0).Seconds()
	r := Record{Step: tr.Step, LR: lr, CE: ce, KL: kl, GNorm: gn, Tokens: int64(tr.Step) * int64(len(tokens)), Seconds: tr.seconds}
	tr.History = append(tr.History, r)
	return r, nil
}

// Run takes steps until Opt.Steps, calling each (may be nil) after every one; it stops early when ctx is done.
func (tr *Trainer) Run(ctx context.Context, each func(Record) error) error {
	for tr.Step < tr.Opt.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := tr.TrainStep()
		if err != nil {
			return err
		}
		if each != nil {
			if err := each(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// adamW clips the gradients to the global norm Opt.Clip and takes one AdamW step at lr (bias-corrected moments,
// decoupled weight decay on the matrices). It returns the norm before clipping. The norm is summed in float64 in
// tensor order; the update is elementwise, so no bit depends on the pool.
func (tr *Trainer) adamW(lr float64) float64 {
	o := tr.Opt
	var ss float64
	for _, t := range tr.Model.Tensors {
		if t.trains() {
			for _, g := range t.G {
				ss += float64(g) * float64(g)
			}
		}
	}
	norm := math.Sqrt(ss)
	scale := 1.0
	if o.Clip > 0 && norm > o.Clip {
		scale = o.Clip / norm
	}
	step := float64(tr.Step + 1)
	c1, c2 := 1-math.Pow(o.Beta1, step), 1-math.Pow(o.Beta2, step)
	for _, t := range tr.Model.Tensors {
		if !t.trains() {
			continue
		}
		wd := 0.0
		if t.Decay {
			wd = o.WeightDecay
		}
		tr.e.rows(len(t.W), 4096, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				g := float64(t.G[i]) * scale
				m := o.Beta1*float64(t.M[i]) + (1-o.Beta1)*g
				v := o.Beta2*float64(t.V[i]) + (1-o.Beta2)*g*g
				t.M[i], t.V[i] = float32(m), float32(v)
				w := float64(t.W[i])
				w -= lr * ((m/c1)/(math.Sqrt(v/c2)+o.Eps) + wd*w)
				t.W[i] = float32(w)
			}
		})
	}
	return norm
}
