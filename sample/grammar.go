package sample

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bankml/bankml/grammar"
)

// GrammarType is common_grammar_type: where Params.Grammar came from, which
// decides whether the generation prompt is fed to it.
type GrammarType int

// The grammar types.
const (
	// GrammarUser is a GBNF grammar the user gave (llama-server's "grammar"
	// field); it is what a non-empty Grammar with no type is.
	GrammarUser GrammarType = iota + 1
	// GrammarOutputFormat is a grammar made from a JSON schema (json_schema,
	// response_format).
	GrammarOutputFormat
	// GrammarToolCalls is a grammar the chat template's parser made for
	// tool calls.
	GrammarToolCalls
)

// TriggerType is common_grammar_trigger_type.
type TriggerType int

// The trigger types of a lazy grammar.
const (
	TriggerToken       TriggerType = iota // Token is generated
	TriggerWord                           // Value appears in the text
	TriggerPattern                        // the regular expression Value matches the text
	TriggerPatternFull                    // Value matches the whole text (anchored with ^...$)
)

// GrammarTrigger is common_grammar_trigger: what ends a lazy grammar's
// wait.
type GrammarTrigger struct {
	Type  TriggerType
	Value string // the word or pattern
	Token int32  // TriggerToken: the token
}

// llguidancePrefix marks a grammar for llguidance, which the reference's
// libraries are built without.
const llguidancePrefix = "%llguidance"

// newGrammar builds the chain's grammar sampler as common_sampler_init does:
// the triggers turned into patterns (a word escaped, a full pattern anchored)
// and tokens, llama_sampler_init_grammar or _lazy_patterns with start symbol
// "root", then, for a grammar made from a schema or for tool calls that is
// not lazy, the generation prompt's tokens fed to it. It returns nil when
// p.Grammar is empty.
func newGrammar(p *Params, v *grammar.Vocab, nVocab int) (*grammar.Grammar, error) {
	if p.Grammar == "" {
		return nil, nil
	}
	if v == nil {
		return nil, invalid("grammar", "the model has no vocabulary for grammars (sample.Model.Grammar)")
	}
	if n := v.Tokens().NVocab(); n != nVocab {
		return nil, invalid("grammar", "the grammar vocabulary has %d tokens and the model %d", n, nVocab)
	}
	o := grammar.Options{Lazy: p.GrammarLazy}
	for _, t := range p.GrammarTriggers {
		switch t.Type {
		case TriggerWord:
			o.TriggerPatterns = append(o.TriggerPatterns, grammar.RegexEscape(t.Value))
		case TriggerPattern:
			o.TriggerPatterns = append(o.TriggerPatterns, t.Value)
		case TriggerPatternFull:
			anchored := "^$"
			if v := t.Value; v != "" {
				anchored = v
				if v[0] != '^' {
					anchored = "^" + anchored
				}
				if v[len(v)-1] != '$' {
					anchored += "$"
				}
			}
			o.TriggerPatterns = append(o.TriggerPatterns, anchored)
		case TriggerToken:
			o.TriggerTokens = append(o.TriggerTokens, t.Token)
		default:
			return nil, invalid("grammar_triggers", "unknown trigger type %d", int(t.Type))
		}
	}
	if !p.GrammarLazy {
		// llama_sampler_init_grammar takes no triggers
		o.TriggerPatterns, o.TriggerTokens = nil, nil
	}
	g, err := grammar.New(p.Grammar, v, o)
	if err != nil {
		return nil, &ParamError{Param: "grammar", Reason: grammarReason(err), Err: ErrInvalid}
	}
	if !p.GrammarLazy && (p.GrammarType == GrammarOutputFormat || p.GrammarType == GrammarToolCalls) {
		for _, id := range prefillTokens(p, v.Tokens()) {
			if err := g.Accept(id); err != nil {
				return nil, &ParamError{Param: "generation_prompt", Reason: "the grammar does not accept the generation prompt: " + err.Error(), Err: ErrInvalid}
			}
		}
	}
	return g, nil
}

// prefillTokens are the tokens of the generation prompt fed to the grammar
// and the reasoning budget (tokenized with special tokens; a first token
// whose piece starts with a space the prompt does not start with is left
// out, as some tokenizers put one before a leading special token).
func prefillTokens(p *Params, tok grammar.Tokens) []int32 {
	if p.GenerationPrompt == "" {
		return nil
	}
	var out []int32
	for i, id := range tok.Tokenize(p.GenerationPrompt, false, true) {
		piece := tok.TokenToPiece(id, true)
		if i == 0 && len(piece) > 0 && isSpace(piece[0]) && !isSpace(p.GenerationPrompt[0]) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// newReasoningBudget builds the reasoning budget sampler as
// common_sampler_init does (nil when it is not wanted) and feeds it the
// generation prompt's tokens.
func newReasoningBudget(p *Params, v *grammar.Vocab) (*reasoningBudget, error) {
	if len(p.ReasoningBudgetStart) == 0 || len(p.ReasoningBudgetEnd) == 0 ||
		!(p.GrammarLazy || p.ReasoningBudgetTokens >= 0 || p.ReasoningControl) {
		return nil, nil
	}
	if v == nil {
		return nil, invalid("reasoning_budget_tokens", "the model has no vocabulary for the reasoning budget (sample.Model.Grammar)")
	}
	budget := p.ReasoningBudgetTokens
	if budget < 0 {
		budget = math.MaxInt32
	}
	tok := v.Tokens()
	r := &reasoningBudget{
		piece:  func(id int32) []byte { return tok.TokenToPiece(id, false) },
		start:  newTokenMatcher([][]int32{p.ReasoningBudgetStart}),
		end:    newTokenMatcher(p.ReasoningBudgetEnd),
		forced: slices.Clone(p.ReasoningBudgetForced),
		budget: budget, remaining: budget, endMatch: -1,
	}
	for _, id := range prefillTokens(p, tok) {
		r.accept(id)
	}
	return r, nil
}

// grammarReason words a grammar error as llama.cpp does: the parser's
// message, or the init's.
func grammarReason(err error) string {
	var pe *grammar.ParseError
	if errors.As(err, &pe) {
		return "failed to parse grammar: " + pe.Msg
	}
	return "failed to parse grammar: " + err.Error()
}

// isSpace is std::isspace in the C locale.
func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// applyGrammar is the grammar sampler's apply on the chain's candidates,
// which are the whole vocabulary in id order (set_logits has just filled
// them): every candidate the grammar refuses gets logit -Inf, a word of the
// grammar's mask at a time.
func applyGrammar(g *grammar.Grammar, c *candidates) {
	if g.Awaiting() {
		return
	}
	m := g.Mask()
	if m.All() {
		return
	}
	ninf := float32(math.Inf(-1))
	for w, x := range m.Words() {
		if x == ^uint64(0) {
			continue
		}
		base := w * 64
		for b := range min(64, len(c.data)-base) {
			if x&(1<<b) == 0 {
				c.data[base+b].Logit = ninf
			}
		}
	}
}

// checkGrammarParams reports grammar settings bankml refuses.
func checkGrammarParams(p *Params) error {
	if strings.HasPrefix(p.Grammar, llguidancePrefix) {
		return unsupported("grammar", "llguidance grammars: the reference is built without llguidance")
	}
	if p.GrammarType < 0 || p.GrammarType > GrammarToolCalls {
		return invalid("grammar", "unknown grammar type %d", int(p.GrammarType))
	}
	for _, t := range p.GrammarTriggers {
		if t.Type < TriggerToken || t.Type > TriggerPatternFull {
			return invalid("grammar_triggers", "unknown trigger type %d", int(t.Type))
		}
	}
	return nil
}

// GrammarError is a token the grammar could not take after it was drawn
// (llama_grammar_accept_impl throws or aborts there); Sample returns it.
type GrammarError struct{ Err error }

func (e *GrammarError) Error() string { return fmt.Sprintf("sample: grammar: %v", e.Err) }
func (e *GrammarError) Unwrap() error { return e.Err }
