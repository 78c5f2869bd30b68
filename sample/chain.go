package sample

import (
	"fmt"
	"math"

	"github.com/bankml/bankml/grammar"
	"github.com/bankml/bankml/internal/stdcpp"
)

// Model is what a chain needs from the model.
type Model struct {
	// NVocab is the vocabulary size: the length of every logits row.
	NVocab int
	// SuppressTokens are the model's tokenizer.ggml.suppress_tokens
	// (llama_vocab_get_suppress_tokens), banned with a -Inf bias.
	SuppressTokens []int32
	// Vocab is needed only when DRY is on with sequence breakers.
	Vocab Vocab
	// Grammar is the vocabulary prepared for grammars (grammar.NewVocab of
	// the model's tokenizer), needed only when Params.Grammar is set. It is
	// shared by the chains of every request.
	Grammar *grammar.Vocab
}

// Chain is common_sampler: the llama_sampler chain llama-server builds per
// request, with its candidate buffer. See the package doc.
type Chain struct {
	params Params
	nVocab int
	stages []stage
	dist   *dist

	cur []TokenData // the candidate buffer, one entry per vocabulary token
	arr candidates  // cur_p: the candidates after the last Sample
	buf []TokenData // scratch for the bucket sort

	grmr    *grammar.Grammar // the grammar sampler, nil without a grammar
	rbudget *reasoningBudget // the reasoning budget sampler, nil without one
	sampled bool             // Sample ran since New or Reset: Accept takes generated tokens
	err     error            // a token the grammar could not take, returned by the next Sample
}

// New builds the chain common_sampler_init builds for p: the grammar sampler
// when p.Grammar is set (see newGrammar), the logit biases (p.LogitBias,
// then m.SuppressTokens at -Inf) if any, the stages of p.Samplers that are
// not no-ops, and the seeded draw. Errors: p.Check's (*ParamError), a
// grammar that does not parse or a generation prompt it refuses (a
// *ParamError naming "grammar" or "generation_prompt", wrapping
// ErrInvalid), a vocabulary size below 1, DRY sequence breakers without
// m.Vocab. A logit bias or suppress token outside the vocabulary is kept as
// llama.cpp keeps it (it then matches no candidate).
func New(p Params, m Model) (*Chain, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if m.NVocab < 1 {
		return nil, fmt.Errorf("sample: vocabulary of %d tokens", m.NVocab)
	}
	c := &Chain{params: p, nVocab: m.NVocab, cur: make([]TokenData, m.NVocab)}
	g, err := newGrammar(&p, m.Grammar, m.NVocab)
	if err != nil {
		return nil, err
	}
	c.grmr = g
	if c.rbudget, err = newReasoningBudget(&p, m.Grammar); err != nil {
		return nil, err
	}
	bias := append([]LogitBias(nil), p.LogitBias...)
	for _, t := range m.SuppressTokens {
		bias = append(bias, LogitBias{Token: t, Bias: float32(math.Inf(-1))})
	}
	if len(bias) > 0 {
		c.stages = append(c.stages, &logitBias{bias: bias})
	}
	minKeep := max(0, int(p.MinKeep))
	for _, t := range p.Samplers {
		var s stage
		switch t {
		case Dry:
			lastN := max(0, p.DryPenaltyLastN)
			if p.DryMultiplier != 0 && p.DryBase >= 1 && lastN != 0 {
				q := p
				q.DryPenaltyLastN = lastN
				d, err := newDry(&q, m.Vocab, m.NVocab)
				if err != nil {
					return nil, err
				}
				s = d
			}
		case TopK:
			if p.TopK > 0 {
				s = &topK{k: p.TopK}
			}
		case TopP:
			if p.TopP < 1 {
				s = &topP{p: p.TopP, minKeep: minKeep}
			}
		case TopNSigma:
			if p.TopNSigma > 0 {
				s = &topNSigma{n: p.TopNSigma}
			}
		case MinP:
			if p.MinP > 0 {
				s = &minP{p: p.MinP, minKeep: minKeep}
			}
		case XTC:
			if p.XTCProbability > 0 && p.XTCThreshold <= 0.5 {
				s = &xtc{probability: p.XTCProbability, threshold: p.XTCThreshold, minKeep: minKeep,
					seed: p.Seed, rng: stdcpp.NewMT19937(rngSeed(p.Seed))}
			}
		case TypicalP:
			if p.TypicalP < 1 {
				s = &typical{p: p.TypicalP, minKeep: minKeep}
			}
		case Temperature:
			if !(p.Temp == 1 && p.DynatempRange <= 0) {
				s = &tempExt{temp: p.Temp, delta: p.DynatempRange, exponent: p.DynatempExponent}
			}
		case Penalties:
			lastN := max(0, p.PenaltyLastN)
			if lastN != 0 && !(p.PenaltyRepeat == 1 && p.PenaltyFreq == 0 && p.PenaltyPresent == 0) {
				s = &penalties{lastN: lastN, repeat: p.PenaltyRepeat, freq: p.PenaltyFreq,
					present: p.PenaltyPresent, prev: newRing(int(lastN)), count: map[int32]int{}}
			}
		}
		if s != nil {
			c.stages = append(c.stages, s)
		}
	}
	seed := rngSeed(p.Seed)
	c.dist = &dist{seed: p.Seed, seedCur: seed, rng: stdcpp.NewMT19937(seed)}
	c.stages = append(c.stages, c.dist)
	return c, nil
}

// Params returns the parameters the chain was built from.
func (c *Chain) Params() Params { return c.params }

// Seed returns the seed of the draw (llama_sampler_get_seed of the chain):
// Params.Seed, or the random seed drawn for DefaultSeed.
func (c *Chain) Seed() uint32 { return c.dist.seedCur }

// Sample runs the chain over one row of logits (NVocab float32s, left
// unchanged) as common_sampler_sample does (grammar_first false, as
// llama-server calls it) and returns the drawn token: the stages run and
// draw; with a grammar, the token drawn is checked alone, and only when the
// grammar refuses it are the candidates set afresh, masked by the grammar
// and the stages run again (drawing again). It does not accept the token:
// call Accept. Errors: a row of the wrong length, a *GrammarError for a
// token the grammar could not take at the last Accept.
func (c *Chain) Sample(logits []float32) (int32, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(logits) != c.nVocab {
		return 0, fmt.Errorf("sample: %d logits for a vocabulary of %d", len(logits), c.nVocab)
	}
	c.sampled = true
	id, err := c.run(logits, false)
	if err != nil || !c.grammarApplies() {
		return id, err
	}
	if c.grmr.Allows(id) {
		return id, nil
	}
	return c.run(logits, true)
}

// grammarApplies is grammar_should_apply: there is a grammar, and unless it
// is lazy and a reasoning budget is counting, it applies.
func (c *Chain) grammarApplies() bool {
	if c.grmr == nil {
		return false
	}
	if c.rbudget == nil || !c.params.GrammarLazy {
		return true
	}
	return c.rbudget.state == ReasoningIdle || c.rbudget.state == ReasoningDone
}

// run sets the candidates from logits, masks them by the grammar when
// masked, and applies the stages.
func (c *Chain) run(logits []float32, masked bool) (int32, error) {
	c.cur = c.cur[:c.nVocab]
	for i, l := range logits {
		c.cur[i] = TokenData{ID: int32(i), Logit: l}
	}
	c.arr = candidates{data: c.cur, selected: -1}
	if c.rbudget != nil {
		c.rbudget.apply(&c.arr)
	}
	if masked && c.grammarApplies() {
		applyGrammar(c.grmr, &c.arr)
	}
	for _, s := range c.stages {
		s.apply(&c.arr, &c.buf)
	}
	if c.arr.selected < 0 || c.arr.selected >= len(c.arr.data) {
		return 0, fmt.Errorf("sample: no token selected (%d candidates left)", len(c.arr.data))
	}
	return c.arr.data[c.arr.selected].ID, nil
}

// Accept feeds an accepted token to the stages that keep history (penalties,
// DRY), to the reasoning budget and to the grammar, as common_sampler_accept
// does. Tokens accepted
// before the first Sample since New or Reset are prompt tokens
// (llama-server's server_slot::init_sampler accepts every prompt token
// after the reset with is_generated false): the grammar does not take them.
// A token the grammar cannot take is kept as an error for the next Sample
// (see Err).
func (c *Chain) Accept(tok int32) {
	if !c.sampled {
		c.AcceptPrompt(tok)
		return
	}
	acceptGrammar := c.grammarApplies() // before the budget takes the token
	if c.rbudget != nil {
		c.rbudget.accept(tok)
		// a budget that has just ended replays its end sequence (which may
		// hold the grammar's trigger) to a grammar that stood aside
		if c.grmr != nil && !acceptGrammar && c.rbudget.state == ReasoningDone {
			for _, t := range c.rbudget.endSeq() {
				c.acceptGrammar(t)
			}
		}
	}
	if c.grmr != nil && acceptGrammar {
		c.acceptGrammar(tok)
	}
	for _, s := range c.stages {
		s.accept(tok)
	}
}

func (c *Chain) acceptGrammar(tok int32) {
	if c.err != nil {
		return
	}
	if err := c.grmr.Accept(tok); err != nil {
		c.err = &GrammarError{Err: err}
	}
}

// AcceptPrompt feeds a prompt token (common_sampler_accept with
// is_generated false): the history stages take it, the grammar and the
// reasoning budget do not.
func (c *Chain) AcceptPrompt(tok int32) {
	for _, s := range c.stages {
		s.accept(tok)
	}
}

// Err returns the *GrammarError of a token the grammar could not take, or
// nil.
func (c *Chain) Err() error { return c.err }

// Grammar returns the chain's grammar (nil without one), for callers that
// report its state.
func (c *Chain) Grammar() *grammar.Grammar { return c.grmr }

// Reasoning returns the state of the reasoning budget (ReasoningIdle
// without one).
func (c *Chain) Reasoning() ReasoningState {
	if c.rbudget == nil {
		return ReasoningIdle
	}
	return c.rbudget.state
}

// Reset clears the history and reseeds XTC and the draw (common_sampler_reset;
// DefaultSeed draws new random seeds). Like common_sampler_reset it leaves
// the grammar where it is; the next tokens accepted before a Sample are
// prompt tokens again.
func (c *Chain) Reset() {
	for _, s := range c.stages {
		s.reset()
	}
	c.sampled = false
}

// Candidates returns the candidates the last Sample left and the index of the
// drawn one, as common_sampler_get_candidates(do_sort) does: with doSort and
// unsorted candidates they are first sorted by descending probability with
// std::sort (and stay so). The slice is the chain's own, valid until the next
// Sample; do not modify it.
func (c *Chain) Candidates(doSort bool) ([]TokenData, int) {
	a := &c.arr
	if doSort && !a.sorted && a.selected >= 0 {
		id := a.data[a.selected].ID
		stdcpp.Sort(a.data, func(x, y TokenData) bool { return x.P > y.P })
		for i := range a.data {
			if a.data[i].ID == id {
				a.selected = i
				break
			}
		}
		a.sorted = true
	}
	return a.data, a.selected
}
