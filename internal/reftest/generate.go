package reftest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bankml/bankml/grammar"
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
	Text   string  // the pieces (without special tokens), cut before the first stop string
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
	chain, err := Chain(m, p)
	if err != nil {
		return Answer{}, err
	}
	defer chain.Free()
	grmr, err := Grammar(m, p)
	if err != nil {
		return Answer{}, err
	}
	if grmr != nil {
		defer grmr.Free()
	}
	for _, tok := range turn.Prompt {
		chain.Accept(tok)
	}
	var a Answer
	var text []byte
	for {
		tok, err := Draw(chain, grmr, logits)
		if err != nil {
			return Answer{}, err
		}
		if grmr != nil && !isEOG(m, tok) {
			if err := grmr.Accept(tok); err != nil {
				return Answer{}, fmt.Errorf("reftest: the grammar refuses token %d: %w", tok, err)
			}
		}
		chain.Accept(tok)
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

func isEOG(m *reference.Model, tok int32) bool {
	eog, err := m.IsEOG(tok)
	return err == nil && eog
}

// Grammar builds the reference's grammar sampler for p as common_sampler_init builds it (nil when p.Grammar is
// empty): the triggers turned into patterns (a word through regex_escape, a full pattern anchored) and tokens,
// llama_sampler_init_grammar or _lazy_patterns with start symbol "root" (through the grammar shim), then, for an
// output-format or tool-calls grammar that is not lazy, the tokens of the generation prompt accepted (the first
// one skipped when its piece starts with a space the prompt does not). The caller frees it.
func Grammar(m *reference.Model, p sample.Params) (*reference.RefGrammar, error) {
	if p.Grammar == "" {
		return nil, nil
	}
	lib, err := reference.Load()
	if err != nil {
		return nil, err
	}
	shim, err := lib.LoadGrammarShim(context.Background())
	if err != nil {
		return nil, err
	}
	var patterns []string
	var tokens []int32
	for _, t := range p.GrammarTriggers {
		switch t.Type {
		case sample.TriggerWord:
			patterns = append(patterns, grammar.RegexEscape(t.Value))
		case sample.TriggerPattern:
			patterns = append(patterns, t.Value)
		case sample.TriggerPatternFull:
			a := "^$"
			if v := t.Value; v != "" {
				a = v
				if v[0] != '^' {
					a = "^" + a
				}
				if v[len(v)-1] != '$' {
					a += "$"
				}
			}
			patterns = append(patterns, a)
		case sample.TriggerToken:
			tokens = append(tokens, t.Token)
		}
	}
	g, msg := shim.NewGrammar(m, p.Grammar, "root", p.GrammarLazy, patterns, tokens)
	if g == nil {
		return nil, fmt.Errorf("reftest: the reference refuses the grammar: %s", msg)
	}
	if !p.GrammarLazy && (p.GrammarType == sample.GrammarOutputFormat || p.GrammarType == sample.GrammarToolCalls) && p.GenerationPrompt != "" {
		ids, err := m.Tokenize(p.GenerationPrompt, false, true)
		if err != nil {
			g.Free()
			return nil, err
		}
		for i, id := range ids {
			piece, err := m.TokenToPiece(id, true)
			if err != nil {
				g.Free()
				return nil, err
			}
			if i == 0 && len(piece) > 0 && isSpace(piece[0]) && !isSpace(p.GenerationPrompt[0]) {
				continue
			}
			if err := g.Accept(id); err != nil {
				g.Free()
				return nil, fmt.Errorf("reftest: the grammar refuses the generation prompt: %w", err)
			}
		}
	}
	return g, nil
}

func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// Draw is common_sampler_sample (grammar_first false, as llama-server calls it) on the reference's samplers: the
// chain draws; with a grammar, the token drawn is checked alone, and when the grammar refuses it the candidates
// are set afresh, masked by the grammar over the whole vocabulary and drawn from again.
func Draw(chain *reference.SamplerChain, g *reference.RefGrammar, logits []float32) (int32, error) {
	ap, err := chain.Apply(logits)
	if err != nil {
		return 0, err
	}
	tok := ap.Cands[ap.Selected].ID
	if g == nil || g.Apply([]int32{tok})[0] {
		return tok, nil
	}
	all := make([]int32, len(logits))
	for i := range all {
		all[i] = int32(i)
	}
	masked := slices.Clone(logits)
	for i, ok := range g.Apply(all) {
		if !ok {
			masked[i] = float32(math.Inf(-1))
		}
	}
	if ap, err = chain.Apply(masked); err != nil {
		return 0, err
	}
	return ap.Cands[ap.Selected].ID, nil
}
