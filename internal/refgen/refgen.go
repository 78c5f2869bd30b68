// Package refgen runs the reference (libllama through internal/reference) the
// way llama-server runs one request on one slot, for oracle tests of code
// that generates through package engine (the HTTP layer, load tests): the
// tokens the reference samples for a prompt and sampling parameters.
//
// # Design record
//
// What. [Chain] builds the reference's llama_sampler chain for a
// sample.Params as common_sampler_init (common/sampling.cpp) builds it: the
// logit biases (the request's, then the model's suppress tokens at -Inf),
// the stages of Params.Samplers that llama.cpp would not make no-ops, then
// llama_sampler_dist with the seed. [Generate] is llama-server's loop:
// decode the prompt in one batch, feed every prompt token to the chain
// (common_sampler_accept after the prompt, as the server does), then sample,
// accept and decode one token at a time until n tokens or an
// end-of-generation token (kept, as llama-server counts it).
//
// Follows. tools/server/server-context.cpp (the slot's sampling loop) and
// common/sampling.cpp at the reference's commit.
//
// Deliberate differences. Stop strings and the context limit are not
// applied: a caller compares tokens up to the point its own answer stopped.
//
// Determinism. The reference is deterministic for a fixed seed; a seed of
// sample.DefaultSeed draws a random one, so oracle callers fix the seed.
package refgen

import (
	"fmt"
	"math"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/sample"
)

// Chain builds the reference chain for p (see the package doc); suppress
// are the model's suppress tokens (sample.SuppressTokens). The caller frees
// it. Errors: a stage the reference has no constructor for (adaptive_p,
// infill), the reference's own.
func Chain(m *reference.Model, p sample.Params, suppress []int32) (*reference.SamplerChain, error) {
	c, err := m.NewSamplerChain()
	if err != nil {
		return nil, err
	}
	var bias []reference.LogitBias
	for _, b := range p.LogitBias {
		bias = append(bias, reference.LogitBias{Token: b.Token, Bias: b.Bias})
	}
	for _, s := range suppress {
		bias = append(bias, reference.LogitBias{Token: s, Bias: float32(math.Inf(-1))})
	}
	if len(bias) > 0 {
		c.AddLogitBias(bias)
	}
	mk := int(p.MinKeep)
	for _, st := range p.Samplers {
		switch st {
		case sample.Dry:
			c.AddDry(p.DryMultiplier, p.DryBase, p.DryAllowedLength, p.DryPenaltyLastN, p.DrySequenceBreakers)
		case sample.TopK:
			c.AddTopK(p.TopK)
		case sample.TopP:
			c.AddTopP(p.TopP, mk)
		case sample.TopNSigma:
			c.AddTopNSigma(p.TopNSigma)
		case sample.MinP:
			c.AddMinP(p.MinP, mk)
		case sample.XTC:
			c.AddXTC(p.XTCProbability, p.XTCThreshold, mk, p.Seed)
		case sample.TypicalP:
			c.AddTypical(p.TypicalP, mk)
		case sample.Temperature:
			c.AddTempExt(p.Temp, p.DynatempRange, p.DynatempExponent)
		case sample.Penalties:
			c.AddPenalties(p.PenaltyLastN, p.PenaltyRepeat, p.PenaltyFreq, p.PenaltyPresent)
		default:
			c.Free()
			return nil, fmt.Errorf("refgen: no reference stage for %v", st)
		}
	}
	c.AddDist(p.Seed)
	return c, nil
}

// Generate returns the tokens the reference generates for prompt with p
// (see the package doc): at most n, the last one an end-of-generation token
// when one ended the turn. nCtx is the session's context (0: the model's
// training context); threads its thread count.
func Generate(m *reference.Model, prompt []int32, p sample.Params, suppress []int32, n, nCtx, threads int) ([]int32, error) {
	c, err := Chain(m, p, suppress)
	if err != nil {
		return nil, err
	}
	defer c.Free()
	s, err := m.NewSession(nCtx, threads)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	logits, err := s.Decode(prompt)
	if err != nil {
		return nil, err
	}
	for _, t := range prompt {
		c.Accept(t)
	}
	var out []int32
	for len(out) < n {
		a, err := c.Apply(logits)
		if err != nil {
			return nil, err
		}
		tok := a.Cands[a.Selected].ID
		c.Accept(tok)
		out = append(out, tok)
		eog, err := m.IsEOG(tok)
		if err != nil {
			return nil, err
		}
		if eog || len(out) == n {
			break
		}
		if logits, err = s.Decode([]int32{tok}); err != nil {
			return nil, fmt.Errorf("refgen: token %d: %w", len(out), err)
		}
	}
	return out, nil
}
