// Package refgen runs the reference (libllama through internal/reference) the
// way llama-server runs one request on one slot, for oracle tests of code
// that generates through package engine (the HTTP layer, load tests): the
// tokens the reference samples for a prompt and sampling parameters.
//
// # Design record
//
// What. [Chain] builds the reference's llama_sampler chain for a
// sample.Params as common_sampler_init (common/sampling.cpp) builds it
// (reference.NewCommonSampler: the logit biases, the model's suppress
// tokens at -Inf, every stage of Params.Samplers, the seeded draw).
// [Generate] is llama-server's loop:
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
	"encoding/json"
	"fmt"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/sample"
)

// Chain builds the reference chain for p: reference.NewCommonSampler
// (common_sampler_init's assembly, the model's suppress tokens included) on
// p's fields, converted by their shared llama-server JSON names, its stage
// order by common_sampler_type_to_str's names and its logit biases. The
// caller frees it.
func Chain(m *reference.Model, p sample.Params) (*reference.SamplerChain, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var cp reference.CommonSamplerParams
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, err
	}
	for _, t := range p.Samplers {
		cp.Samplers = append(cp.Samplers, t.String())
	}
	for _, lb := range p.LogitBias {
		cp.LogitBias = append(cp.LogitBias, reference.LogitBias{Token: lb.Token, Bias: lb.Bias})
	}
	return m.NewCommonSampler(cp)
}

// Generate returns the tokens the reference generates for prompt with p
// (see the package doc): at most n, the last one an end-of-generation token
// when one ended the turn. nCtx is the session's context (0: the model's
// training context); threads its thread count.
func Generate(m *reference.Model, prompt []int32, p sample.Params, n, nCtx, threads int) ([]int32, error) {
	c, err := Chain(m, p)
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
