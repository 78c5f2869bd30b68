package reftest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/sample"
)

// NUbatch is llama.cpp's default micro-batch (n_ubatch), the size of the
// prompt batches Generate decodes.
const NUbatch = 512

// Chain builds the reference's llama_sampler chain for p as
// common_sampler_init builds it (reference.NewCommonSampler: the logit
// biases, the model's suppress tokens at -Inf, every stage of p.Samplers, the
// seeded draw), p's fields converted by their shared llama-server JSON names,
// the stages by common_sampler_type_to_str's names. The caller frees it.
func Chain(m *reference.Model, p sample.Params) (*reference.SamplerChain, error) {
	var rp reference.CommonSamplerParams
	b, err := json.Marshal(p)
	if err == nil {
		err = json.Unmarshal(b, &rp)
	}
	if err != nil {
		return nil, fmt.Errorf("reftest: sampling parameters: %w", err)
	}
	for _, st := range p.Samplers {
		rp.Samplers = append(rp.Samplers, st.String())
	}
	for _, lb := range p.LogitBias {
		rp.LogitBias = append(rp.LogitBias, reference.LogitBias{Token: lb.Token, Bias: lb.Bias})
	}
	return m.NewCommonSampler(rp)
}

// Turn is one request as a llama-server slot runs it.
type Turn struct {
	Prompt    []int32       // the prompt's tokens
	Kept      int           // cached tokens the slot keeps (llama_memory_seq_rm from there)
	Sampling  sample.Params // fix the seed: DefaultSeed draws a random one
	NPredict  int           // n_predict: -1 for no limit
	Stop      []string      // stop strings
	IgnoreEOS bool          // a -Inf bias on every token llama_vocab_is_eog accepts, after Sampling's
}

// Answer is what the reference generates for a Turn.
type Answer struct {
	Tokens []int32 // every sampled token, an end-of-generation one included
	Text   string  // the pieces (special tokens only when preserved), cut before the first stop string
	Finish string  // "stop" or "length"
}

// Generate runs turn on the reference session s as llama-server's slot
// loop runs it (tools/server/server-context.cpp): it keeps turn.Kept cached
// tokens, decodes the rest of the prompt in micro-batches of NUbatch from
// there, feeds every prompt token to a fresh chain (server_slot::init_sampler),
// then samples, accepts and decodes one token at a time. It stops, as
// process_token's order decides the finish reason, on an end-of-generation
// token ("stop"), when the next token would find the context full (no
// context shift: "length"), on the first token whose text completes a stop
// string ("stop"), or after NPredict tokens ("length"; 0 still samples one).
func Generate(m *reference.Model, s *reference.Session, turn Turn) (Answer, error) {
	if err := s.Truncate(turn.Kept); err != nil {
		return Answer{}, err
	}
	var logits []float32
	for pos := turn.Kept; pos < len(turn.Prompt); pos += NUbatch {
		var err error
		if logits, err = s.Decode(turn.Prompt[pos:min(len(turn.Prompt), pos+NUbatch)]); err != nil {
			return Answer{}, err
		}
	}
	if logits == nil {
		return Answer{}, fmt.Errorf("reftest: nothing to decode (%d kept of %d prompt tokens)", turn.Kept, len(turn.Prompt))
	}
	p := turn.Sampling
	if turn.IgnoreEOS {
		p.LogitBias = append([]sample.LogitBias(nil), p.LogitBias...)
		for id := range m.NVocab() {
			eog, err := m.IsEOG(int32(id))
			if err != nil {
				return Answer{}, err
			}
			if eog {
				p.LogitBias = append(p.LogitBias, sample.LogitBias{Token: int32(id), Bias: float32(math.Inf(-1))})
			}
		}
	}
	smpl, err := newSampler(m, p)
	if err != nil {
		return Answer{}, err
	}
	defer smpl.free()
	for _, tok := range turn.Prompt {
		if err := smpl.accept(tok, false); err != nil {
			return Answer{}, err
		}
	}
	var a Answer
	var text []byte
	for {
		tok, err := smpl.draw(s, logits)
		if err != nil {
			return Answer{}, err
		}
		if err := smpl.accept(tok, true); err != nil {
			return Answer{}, fmt.Errorf("reftest: token %d: %w", tok, err)
		}
		a.Tokens = append(a.Tokens, tok)
		piece, err := m.TokenToPiece(tok, slices.Contains(p.PreservedTokens, tok))
		if err != nil {
			return Answer{}, err
		}
		text = append(text, piece...)
		eog, err := m.IsEOG(tok)
		if err != nil {
			return Answer{}, err
		}
		cut := -1
		for _, w := range turn.Stop {
			if i := strings.Index(string(text), w); i >= 0 && (cut < 0 || i < cut) {
				cut = i
			}
		}
		switch {
		case eog:
			a.Finish = "stop"
		case len(s.Tokens())+1 >= s.NCtx():
			a.Finish = "length"
		case cut >= 0:
			a.Finish = "stop"
		case turn.NPredict >= 0 && len(a.Tokens) >= turn.NPredict:
			a.Finish = "length"
		}
		if cut >= 0 {
			text = text[:cut]
		}
		if a.Finish != "" {
			a.Text = string(text)
			return a, nil
		}
		if logits, err = s.Decode([]int32{tok}); err != nil {
			return Answer{}, fmt.Errorf("reftest: token %d: %w", len(a.Tokens), err)
		}
	}
}

// sampler is what Generate draws with: the reference's chain built in Go as common_sampler_init builds it
// (Chain), or, when p has a grammar or a reasoning budget, llama.cpp's own common_sampler.
type sampler struct {
	chain  *reference.SamplerChain
	common *reference.CommonSampler
}

func newSampler(m *reference.Model, p sample.Params) (*sampler, error) {
	if p.Grammar == "" && len(p.ReasoningBudgetStart) == 0 {
		c, err := Chain(m, p)
		return &sampler{chain: c}, err
	}
	c, err := CommonSampler(m, p)
	return &sampler{common: c}, err
}

func (s *sampler) accept(tok int32, generated bool) error {
	if s.chain != nil {
		s.chain.Accept(tok)
		return nil
	}
	return s.common.Accept(tok, generated)
}

func (s *sampler) draw(sess *reference.Session, logits []float32) (int32, error) {
	if s.chain != nil {
		ap, err := s.chain.Apply(logits)
		if err != nil {
			return 0, err
		}
		return ap.Cands[ap.Selected].ID, nil
	}
	return s.common.Sample(sess), nil
}

func (s *sampler) free() {
	if s.chain != nil {
		s.chain.Free()
	} else {
		s.common.Free()
	}
}

// CommonSampler builds llama.cpp's own common_sampler for p (common_sampler_init in libllama-common, through the
// grammar shim): the chain, the grammar sampler joined to it as common_sampler_sample joins them, the reasoning
// budget, the generation prompt fed to both. The caller frees it.
func CommonSampler(m *reference.Model, p sample.Params) (*reference.CommonSampler, error) {
	lib, err := reference.Load()
	if err != nil {
		return nil, err
	}
	shim, err := lib.LoadGrammarShim(context.Background())
	if err != nil {
		return nil, err
	}
	var rp reference.CommonSamplerParams
	b, err := json.Marshal(p)
	if err == nil {
		err = json.Unmarshal(b, &rp)
	}
	if err != nil {
		return nil, fmt.Errorf("reftest: sampling parameters: %w", err)
	}
	for _, st := range p.Samplers {
		rp.Samplers = append(rp.Samplers, st.String())
	}
	for _, lb := range p.LogitBias {
		rp.LogitBias = append(rp.LogitBias, reference.LogitBias{Token: lb.Token, Bias: lb.Bias})
	}
	rp.Grammar, rp.GrammarType, rp.GrammarLazy = p.Grammar, int(p.GrammarType), p.GrammarLazy
	for _, t := range p.GrammarTriggers {
		rp.GrammarTriggers = append(rp.GrammarTriggers, reference.GrammarTrigger{Type: int(t.Type), Value: t.Value, Token: t.Token})
	}
	rp.PreservedTokens, rp.GenerationPrompt = p.PreservedTokens, p.GenerationPrompt
	rp.ReasoningBudgetTokens, rp.ReasoningBudgetStart = p.ReasoningBudgetTokens, p.ReasoningBudgetStart
	rp.ReasoningBudgetEnd, rp.ReasoningBudgetForced, rp.ReasoningControl = p.ReasoningBudgetEnd, p.ReasoningBudgetForced, p.ReasoningControl
	return shim.NewCommonSampler(m, rp)
}
