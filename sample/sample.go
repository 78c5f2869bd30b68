// Package sample chooses the next token from logits.
//
// Design record
//
//   - What: greedy choice (temperature 0, the default) and seeded
//     temperature / top-k / top-p sampling, applied in llama.cpp's order for
//     these stages (top-k, top-p, temperature, draw).
//   - Follows: llama_sampler_greedy (first maximum wins ties) and the
//     definitions of llama.cpp's top_k, top_p and temp samplers.
//   - Deliberate differences: the random draw uses Go's PCG, not llama.cpp's
//     std::mt19937 with libstdc++'s distributions, and the sort is stable where
//     libstdc++'s std::sort is not; seeded runs are reproducible within bankml
//     but not yet token-identical to llama.cpp's (the sampler-chain issue makes
//     them so). Greedy is exact.
//   - Determinism: a Sampler with the same seed gives the same sequence for
//     the same logits; it holds its own RNG, no global state.
package sample

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Params are the sampling settings, with llama.cpp's parameter names.
type Params struct {
	Temp float32 // temperature; <= 0 means greedy
	TopK int     // keep the k most likely tokens; <= 0 keeps all
	TopP float32 // keep the smallest set with cumulative probability >= top_p; >= 1 keeps all
	Seed uint64  // seed of the random draw
}

// Validate reports a parameter outside its domain: a temperature or top_p
// that is not a finite number. As in llama.cpp, top_p <= 0 keeps only the most
// likely token and top_p >= 1 keeps all.
func (p Params) Validate() error {
	switch {
	case math.IsNaN(float64(p.Temp)) || math.IsInf(float64(p.Temp), 0):
		return fmt.Errorf("sample: temp %v is not a finite number", p.Temp)
	case math.IsNaN(float64(p.TopP)) || math.IsInf(float64(p.TopP), 0):
		return fmt.Errorf("sample: top_p %v is not a finite number", p.TopP)
	}
	return nil
}

// Sampler draws tokens with fixed Params.
type Sampler struct {
	p   Params
	rng *rand.Rand
	buf []cand
}

type cand struct {
	id int32
	v  float32
}

// New returns a Sampler for p (see Params.Validate).
func New(p Params) *Sampler {
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, 0x62616e6b6d6c))}
}

// Greedy returns the index of the first maximum of logits, as
// llama_sampler_greedy does.
func Greedy(logits []float32) int32 {
	best := 0
	for i := 1; i < len(logits); i++ {
		if logits[i] > logits[best] {
			best = i
		}
	}
	return int32(best)
}

// Sample picks the next token from logits (one per vocabulary entry).
func (s *Sampler) Sample(logits []float32) int32 {
	if s.p.Temp <= 0 {
		return Greedy(logits)
	}
	c := s.buf[:0]
	for i, v := range logits {
		c = append(c, cand{int32(i), v})
	}
	slices.SortStableFunc(c, func(a, b cand) int { return cmp.Compare(b.v, a.v) })
	if k := s.p.TopK; k > 0 && k < len(c) {
		c = c[:k]
	}
	// softmax in float64 for the top-p cut, then the temperature.
	probs := softmax(c, 1)
	if s.p.TopP < 1 {
		cum := 0.0 // the first token is always kept (min_keep 1)
		for i, p := range probs {
			cum += p
			if cum >= float64(s.p.TopP) {
				c = c[:i+1]
				break
			}
		}
	}
	probs = softmax(c, float64(s.p.Temp))
	r := s.rng.Float64()
	for i, p := range probs {
		if r < p {
			s.buf = c
			return c[i].id
		}
		r -= p
	}
	s.buf = c
	return c[len(c)-1].id
}

func softmax(c []cand, temp float64) []float64 {
	out := make([]float64, len(c))
	maxv := float64(c[0].v) / temp
	sum := 0.0
	for i, x := range c {
		out[i] = math.Exp(float64(x.v)/temp - maxv)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}
