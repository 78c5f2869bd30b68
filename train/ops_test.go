package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

// gradcheck compares analytic gradients with float64 central differences of the scalar L = Σ r·y: forward
// computes y from the inputs, backward(dy) returns the gradient of every input. It checks every element.
func gradcheck(t *testing.T, name string, inputs [][]float64, forward func() []float64, backward func(dy []float64) [][]float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	y := forward()
	r := make([]float64, len(y))
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	loss := func() float64 {
		var s float64
		for i, v := range forward() {
			s += r[i] * v
		}
		return s
	}
	forward()
	grads := backward(append([]float64(nil), r...))
	const eps = 1e-6
	checked, worst := 0, 0.0
	for k, in := range inputs {
		if grads[k] == nil {
			continue
		}
		for i := range in {
			old := in[i]
			in[i] = old + eps
			lp := loss()
			in[i] = old - eps
			lm := loss()
			in[i] = old
			num := (lp - lm) / (2 * eps)
			got := grads[k][i]
			err := math.Abs(num-got) / max(1, math.Abs(num))
			worst = max(worst, err)
			if err > 1e-6 {
				t.Errorf("%s: input %d element %d: analytic %.10g, finite differences %.10g", name, k, i, got, num)
				return
			}
			checked++
		}
	}
	t.Logf("%s: %d of %d gradient elements agree with float64 finite differences (worst relative error %.2g)", name, checked, checked, worst)
}

func randn(rng *rand.Rand, n int, std float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64() * std
	}
	return x
}

var e64 = &exec{}

func TestLinearBackwardMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n, in, out = 5, 7, 6
	x, w := randn(rng, n*in, 1), randn(rng, out*in, 1)
	y, wT := make([]float64, n*out), make([]float64, in*out)
	gradcheck(t, "linear", [][]float64{x, w}, func() []float64 {
		transpose(e64, wT, w, out, in)
		linearForward(e64, y, x, wT, n, in, out)
		return y
	}, func(dy []float64) [][]float64 {
		dx, dw, dyT := make([]float64, n*in), make([]float64, out*in), make([]float64, out*n)
		linearBackward(e64, dx, dw, dy, x, w, dyT, n, in, out)
		return [][]float64{dx, dw}
	})
}

func TestRMSNormBackwardMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, d = 70, 6 // more rows than one gradient chunk
	x, g := randn(rng, n*d, 1), randn(rng, d, 1)
	y, rstd := make([]float64, n*d), make([]float64, n)
	gradcheck(t, "rmsnorm", [][]float64{x, g}, func() []float64 {
		rmsNormForward(e64, y, rstd, x, g, n, d, 1e-5)
		return y
	}, func(dy []float64) [][]float64 {
		dx, dg, part := make([]float64, n*d), make([]float64, d), make([]float64, 2*d)
		rmsNormBackward(e64, dx, dg, dy, x, g, rstd, part, n, d)
		return [][]float64{dx, dg}
	})
}

func TestRoPEBackwardMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 3))
	const seq, batch, heads, hd = 5, 2, 3, 8
	n := seq * batch
	r := newRope[float64](seq, hd, 10000)
	x := randn(rng, n*heads*hd, 1)
	y := make([]float64, len(x))
	gradcheck(t, "rope", [][]float64{x}, func() []float64 {
		copy(y, x)
		r.apply(e64, y, n, seq, heads, false)
		return y
	}, func(dy []float64) [][]float64 {
		r.apply(e64, dy, n, seq, heads, true)
		return [][]float64{dy}
	})
}

func TestAttentionBackwardMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 4))
	s := attnShape{batch: 2, seq: 5, heads: 4, kvHeads: 2, headDim: 4}
	n := s.batch * s.seq
	q, k, v := randn(rng, n*s.heads*s.headDim, 1), randn(rng, n*s.kvHeads*s.headDim, 1), randn(rng, n*s.kvHeads*s.headDim, 1)
	o, p := make([]float64, len(q)), make([]float64, s.batch*s.heads*s.seq*s.seq)
	gradcheck(t, "attention", [][]float64{q, k, v}, func() []float64 {
		attentionForward(e64, o, p, q, k, v, s)
		return o
	}, func(do []float64) [][]float64 {
		dq, dk, dv := make([]float64, len(q)), make([]float64, len(k)), make([]float64, len(v))
		attentionBackward(e64, dq, dk, dv, do, p, q, k, v, s)
		return [][]float64{dq, dk, dv}
	})
}

func TestSwiGLUBackwardMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 5))
	const n = 40
	g, u := randn(rng, n, 2), randn(rng, n, 1)
	a := make([]float64, n)
	gradcheck(t, "swiglu", [][]float64{g, u}, func() []float64 {
		swigluForward(e64, a, g, u, n)
		return a
	}, func(da []float64) [][]float64 {
		dg, du := make([]float64, n), make([]float64, n)
		swigluBackward(e64, dg, du, da, g, u, n)
		return [][]float64{dg, du}
	})
}

func TestEmbeddingBackwardMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 6))
	const vocab, d = 5, 3
	tokens := []int32{4, 1, 4, 0, 2, 4}
	table := randn(rng, vocab*d, 1)
	y := make([]float64, len(tokens)*d)
	gradcheck(t, "embedding", [][]float64{table}, func() []float64 {
		embedForward(y, table, tokens, d)
		return y
	}, func(dy []float64) [][]float64 {
		dt := make([]float64, vocab*d)
		embedBackward(dt, dy, tokens, d)
		return [][]float64{dt}
	})
}

func TestCrossEntropyBackwardMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 7))
	const n, vocab, k = 6, 9, 4
	targets := []int32{0, 8, 3, 3, 5, 1}
	soft := &Soft{K: k, ID: make([]int32, n*k), P: make([]float32, n*k)}
	for i := range soft.ID {
		soft.ID[i], soft.P[i] = int32(rng.IntN(vocab)), float32(rng.Float64())
	}
	for i := 0; i < k; i++ { // row 2 has no teacher targets
		soft.ID[2*k+i] = -1
	}
	soft.ID[4*k+3] = -1 // row 4 has three
	for _, lambda := range []float64{0, 0.5, 1} {
		z := randn(rng, n*vocab, 2)
		rows := make([]lossRow, n)
		dz := make([]float64, n*vocab)
		name := map[float64]string{0: "cross-entropy (hard targets)", 0.5: "cross-entropy (half teacher)", 1: "cross-entropy (teacher only)"}[lambda]
		gradcheck(t, name, [][]float64{z}, func() []float64 {
			crossEntropy(e64, dz, z, targets, soft, lambda, rows, n, vocab)
			// the loss is the mean over rows of (1−λ)·ce + λ·(KL + H(p̃)); H(p̃) does not depend on z
			var l float64
			for i, r := range rows {
				lam := lambda
				if i == 2 {
					lam = 0
				}
				l += (1-lam)*r.ce + lam*r.kl
			}
			return []float64{l / n}
		}, func(dy []float64) [][]float64 {
			g := make([]float64, len(dz))
			for i := range g {
				g[i] = dz[i] * dy[0]
			}
			return [][]float64{g}
		})
	}
}
