package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// SpiralsOptions configure the two-spirals demo of ternary ES (Fucina's es-ternary-spirals): a 2→256→256→2
// network whose 256→256 and 256→2 matrices are TQ2_0 genomes, the 2→256 layer a fixed random ReLU feature map
// (its input width is not a TQ2_0 block), trained from random trits by ES on every point of two interleaved
// spirals, every member evaluated through package quant's TQ2_0 kernels (activations quantized to Q8_K), the
// path a served model takes.
type SpiralsOptions struct {
	Points     int     // points per spiral
	Turns      float64 // turns of each spiral
	LogitScale float32 // the fixed factor of the output logits
	Seed       uint64  // the features, the initial trits and the flips
	ES         ESOptions
	MaxIters   int
	Target     float64 // stop once the accuracy reaches it (1: every point)
}

// DefaultSpirals are the demo's settings.
func DefaultSpirals() SpiralsOptions {
	return SpiralsOptions{Points: 96, Turns: 1.5, LogitScale: 4, Seed: 1, MaxIters: 20000, Target: 1,
		ES: ESOptions{Seed: 1, Pairs: 15, FlipRate: 0.001, UpdateFraction: 0.005, Accept: true}}
}

// SpiralsResult is what the demo measured.
type SpiralsResult struct {
	Iters    int
	Accuracy float64 // on the deployed int8 path, every point
	CE       float64
	Seconds  float64
	Verified bool // the final genomes, re-read from their bytes, score Accuracy again and hold only codes 0..2
}

// spirals is the demo's network and data.
type spirals struct {
	x      []float32 // n×2
	y      []int32
	h1     []float32 // n×256, the fixed features
	g2, g3 *Genome
	w      *quant.Work
	z2, z3 []float32
	scale  float32

	base     []float32 // the pre-activations of layer 2 for the unperturbed genome (full)
	rows     []byte    // scratch: the changed rows of g2
	zsub     []float32
	rowIndex []int
	seen     []bool
}

func newSpirals(o SpiralsOptions, w *quant.Work) (*spirals, error) {
	n := 2 * o.Points
	s := &spirals{x: make([]float32, 2*n), y: make([]int32, n), h1: make([]float32, n*256), w: w,
		z2: make([]float32, n*256), z3: make([]float32, n*2), scale: o.LogitScale,
		base: make([]float32, n*256), zsub: make([]float32, n*256), seen: make([]bool, 256)}
	for c := range 2 {
		for i := range o.Points {
			t := float64(i) / float64(o.Points) * o.Turns * 2 * math.Pi
			r := (t + 0.5) / (o.Turns*2*math.Pi + 0.5)
			a := t + float64(c)*math.Pi
			k := c*o.Points + i
			s.x[2*k], s.x[2*k+1], s.y[k] = float32(r*math.Cos(a)), float32(r*math.Sin(a)), int32(c)
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5350))
	w1, b1 := make([]float32, 512), make([]float32, 256)
	for i := range w1 {
		w1[i] = float32(rng.NormFloat64() * 6)
	}
	for i := range b1 {
		b1[i] = float32(rng.NormFloat64() * 3)
	}
	for k := range n {
		for j := range 256 {
			v := w1[2*j]*s.x[2*k] + w1[2*j+1]*s.x[2*k+1] + b1[j]
			s.h1[k*256+j] = max(0, v)
		}
	}
	d := float32(1 / math.Sqrt(256*2.0/3))
	var err error
	if s.g2, err = NewGenome("w2", 256, 256, d, o.Seed*2+1); err != nil {
		return nil, err
	}
	if s.g3, err = NewGenome("w3", 2, 256, d, o.Seed*2+2); err != nil {
		return nil, err
	}
	return s, nil
}

// eval runs every point through the network on the deployed kernels and returns the mean cross-entropy and the
// accuracy; the layer-2 pre-activations become the base of evalChanged.
func (s *spirals) eval() (ce, acc float64) {
	n := len(s.y)
	m2 := s.g2.Matrix()
	_, _ = m2.Repack() // the SIMD kernels' layout, as a served model's (a fresh copy: the genome changes every member)
	s.w.MatMul(&m2, s.h1, n, s.base)
	copy(s.z2, s.base)
	return s.head()
}

// evalChanged is eval when only the trits at the global indices changed (ES.Applied) since the last eval: the
// rows of g2 they touch are recomputed (their TQ2_0 rows gathered into one matrix: each output of quant's product
// depends on its row and column alone, so these are the bits a full product gives), the rest taken from the base.
func (s *spirals) evalChanged(changed []int) (ce, acc float64) {
	n := len(s.y)
	s.rowIndex = s.rowIndex[:0]
	for _, i := range changed {
		if r := i / 256; i < 256*256 && !s.seen[r] {
			s.seen[r] = true
			s.rowIndex = append(s.rowIndex, r)
		}
	}
	copy(s.z2, s.base)
	if k := len(s.rowIndex); k > 0 {
		rb := 256 / quant.QK_K * quant.BlockTQ2_0Size
		s.rows = s.rows[:0]
		for _, r := range s.rowIndex {
			s.rows = append(s.rows, s.g2.Data[r*rb:(r+1)*rb]...)
			s.seen[r] = false
		}
		m := quant.Matrix{Name: "w2 rows", Type: s.g2.Matrix().Type, Rows: k, Cols: 256, Data: s.rows}
		_, _ = m.Repack()
		s.w.MatMul(&m, s.h1, n, s.zsub[:n*k])
		for j := range n {
			for q, r := range s.rowIndex {
				s.z2[j*256+r] = s.zsub[j*k+q]
			}
		}
	}
	return s.head()
}

// head applies ReLU to layer 2's pre-activations and runs the output layer, scoring every point.
func (s *spirals) head() (ce, acc float64) {
	n := len(s.y)
	for i, v := range s.z2 {
		s.z2[i] = max(0, v)
	}
	m3 := s.g3.Matrix()
	_, _ = m3.Repack()
	s.w.MatMul(&m3, s.z2, n, s.z3)
	right := 0
	for k := range n {
		a, b := float64(s.z3[2*k]*s.scale), float64(s.z3[2*k+1]*s.scale)
		mx := max(a, b)
		lse := mx + math.Log(math.Exp(a-mx)+math.Exp(b-mx))
		if s.y[k] == 0 {
			ce += lse - a
			if a > b {
				right++
			}
		} else {
			ce += lse - b
			if b > a {
				right++
			}
		}
	}
	return ce / float64(n), float64(right) / float64(n)
}

// RunSpirals trains the demo until the accuracy reaches o.Target or o.MaxIters iterations, calling progress
// (may be nil) every 50 iterations, then verifies the result from the genomes' bytes.
func RunSpirals(ctx context.Context, o SpiralsOptions, pool *parallel.Pool, level quant.Level, progress func(iter int, ce, acc float64)) (SpiralsResult, error) {
	if o.Points < 2 || o.MaxIters < 1 || !(o.Turns > 0) || !(o.LogitScale > 0) {
		return SpiralsResult{}, fmt.Errorf("train: spirals %+v: want ≥ 2 points, ≥ 1 iteration, positive turns and scale", o)
	}
	w, err := quant.NewWork(level, pool)
	if err != nil {
		return SpiralsResult{}, err
	}
	s, err := newSpirals(o, w)
	if err != nil {
		return SpiralsResult{}, err
	}
	es, err := NewES([]*Genome{s.g2, s.g3}, o.ES)
	if err != nil {
		return SpiralsResult{}, err
	}
	t0 := time.Now()
	ce, acc := s.eval()
	for es.Iter < o.MaxIters && acc < o.Target {
		if err := ctx.Err(); err != nil {
			return SpiralsResult{}, err
		}
		es.Step(func() float64 { c, _ := s.evalChanged(es.Applied()); return -c })
		ce, acc = s.eval()
		if progress != nil && (es.Iter%50 == 0 || acc >= o.Target) {
			progress(es.Iter, ce, acc)
		}
	}
	res := SpiralsResult{Iters: es.Iter, Accuracy: acc, CE: ce, Seconds: time.Since(t0).Seconds()}
	// verification: fresh genomes from a copy of the bytes, codes checked, the same score recomputed
	ok := true
	for _, g := range []*Genome{s.g2, s.g3} {
		cp := append([]byte(nil), g.Data...)
		ng, err := GenomeOf(g.Name, g.Rows, g.Cols, cp)
		if err != nil {
			return res, err
		}
		for i := range ng.Rows * ng.Cols {
			if ng.code(i) > 2 {
				ok = false
			}
		}
	}
	ce2, acc2 := s.eval()
	res.Verified = ok && ce2 == ce && acc2 == acc
	return res, nil
}
