package sample

import (
	"math"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/internal/stdcpp"
)

// TokenProb is one entry of a probability list: a token and its probability.
type TokenProb struct {
	ID int32
	P  float32
}

// Probs is what llama-server reports for one generated token when n_probs > 0
// (completion_token_output): the token's probability and the top candidates.
type Probs struct {
	Token int32
	P     float32 // 1 when the token is not among the candidates (llama-server's default)
	Top   []TokenProb
}

// TokenProbs is llama-server's get_token_probabilities(ctx, idx, n_top)
// (tools/server/server-common.cpp) on one row of raw logits: every token,
// std::partial_sort'ed so that the first min(nTop, NVocab) are in descending
// logit order (the rest in the order the heap selection leaves them), with
// p = expf(logit - max) / sum over the whole vocabulary, the sum accumulated
// in float in that order. These are the probabilities of the model's logits
// before any sampler stage (no bias, penalty or temperature).
func TokenProbs(logits []float32, nTop int) []TokenData {
	cur := make([]TokenData, len(logits))
	for i, l := range logits {
		cur[i] = TokenData{ID: int32(i), Logit: l}
	}
	nTop = max(0, min(nTop, len(cur)))
	if nTop > 0 {
		stdcpp.PartialSort(cur, nTop, byLogitDesc)
	}
	maxL := float32(math.Inf(-1))
	if nTop > 0 {
		maxL = cur[0].Logit
	} else {
		for _, t := range cur {
			maxL = maxf(maxL, t.Logit)
		}
	}
	var sum float32
	for i := range cur {
		p := fmath.Expf(cur[i].Logit - maxL)
		cur[i].P = p
		sum += p
	}
	for i := range cur {
		cur[i].P /= sum
	}
	return cur
}

// Probs reports the probabilities llama-server attaches to token tok, just
// drawn by Sample from logits, for a request with n_probs = n
// (server_context::populate_token_probs):
//
//   - post = false (the default; llama-server's post_sampling_probs false):
//     TokenProbs(logits, n): the softmax of the raw logits over the whole
//     vocabulary; Top is its first n entries. This is the value OpenAI's
//     logprobs carry, as Logarithm(P).
//   - post = true: the candidates the chain left (Candidates(true): sorted by
//     probability), their probabilities as the draw normalised them; Top
//     stops at the first zero probability.
//
// n <= 0 gives P = 1 and no Top, as llama-server computes nothing then.
func (c *Chain) Probs(tok int32, logits []float32, n int, post bool) Probs {
	out := Probs{Token: tok, P: 1}
	if n <= 0 {
		return out
	}
	var cur []TokenData
	if post {
		cur, _ = c.Candidates(true)
	} else {
		cur = TokenProbs(logits, n)
	}
	for _, d := range cur {
		if d.ID == tok {
			out.P = d.P
			break
		}
	}
	for _, d := range cur[:min(n, len(cur))] {
		if post && d.P == 0 {
			break
		}
		out.Top = append(out.Top, TokenProb{ID: d.ID, P: d.P})
	}
	return out
}

// Logarithm is completion_token_output::logarithm, llama-server's logprob
// of a probability: logf(p), or -FLT_MAX for p == 0 (its JSON library would
// write -Inf as null).
func Logarithm(p float32) float32 {
	if p == 0 {
		return -math.MaxFloat32
	}
	return fmath.Logf(p)
}

// Greedy returns the index of the first maximum of logits, as
// llama_sampler_greedy does (ties go to the lowest id).
func Greedy(logits []float32) int32 {
	best := 0
	for i := 1; i < len(logits); i++ {
		if logits[i] > logits[best] {
			best = i
		}
	}
	return int32(best)
}
