package sample

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// DefaultSeed is LLAMA_DEFAULT_SEED (0xFFFFFFFF): "pick a random seed". It is
// what llama-server's "seed": -1 becomes (the JSON integer is read as a
// uint32).
const DefaultSeed uint32 = 0xFFFFFFFF

// Type names a sampler stage (common_sampler_type).
type Type int

// The sampler stages, in common_sampler_type's order.
const (
	Dry Type = iota + 1
	TopK
	TopP
	MinP
	TypicalP
	Temperature
	XTC
	Infill
	Penalties
	TopNSigma
	AdaptiveP
)

// typeNames are common_sampler_type_to_str's canonical names and
// common_sampler_type_to_chr's letters.
var typeNames = map[Type]struct {
	name string
	chr  byte
}{
	Dry: {"dry", 'd'}, TopK: {"top_k", 'k'}, TypicalP: {"typ_p", 'y'}, TopP: {"top_p", 'p'},
	TopNSigma: {"top_n_sigma", 's'}, MinP: {"min_p", 'm'}, Temperature: {"temperature", 't'},
	XTC: {"xtc", 'x'}, Infill: {"infill", 'i'}, Penalties: {"penalties", 'e'}, AdaptiveP: {"adaptive_p", 'a'},
}

// String returns the canonical name llama-server reports ("top_k", "typ_p",
// ...), or "" for an unknown Type.
func (t Type) String() string { return typeNames[t].name }

// DefaultSamplers is common_params_sampling's default order.
func DefaultSamplers() []Type {
	return []Type{Penalties, Dry, TopNSigma, TopK, TypicalP, TopP, MinP, XTC, Temperature}
}

// ParseSamplerNames maps names to stages as common_sampler_types_from_names
// does: case-insensitive canonical names, their kebab-case and no-underscore
// forms ("top-k", "topk"), and the aliases "nucleus", "temp" and "typ".
// Names it does not know are skipped (llama.cpp logs a warning and goes on)
// and returned in unknown, so that the caller can say so.
func ParseSamplerNames(names []string) (types []Type, unknown []string) {
	for _, n := range names {
		if t, ok := lookupName(strings.ToLower(n)); ok {
			types = append(types, t)
		} else {
			unknown = append(unknown, n)
		}
	}
	return types, unknown
}

func lookupName(n string) (Type, bool) {
	switch n {
	case "nucleus":
		return TopP, true
	case "temp":
		return Temperature, true
	case "typ":
		return TypicalP, true
	}
	for t, tn := range typeNames {
		if n == tn.name || strings.Contains(tn.name, "_") &&
			(n == strings.ReplaceAll(tn.name, "_", "-") || n == strings.ReplaceAll(tn.name, "_", "")) {
			return t, true
		}
	}
	return 0, false
}

// ParseSamplerChars maps letters to stages as
// common_sampler_types_from_chars does ("edskypmxt" is the default order);
// unknown letters are skipped and returned.
func ParseSamplerChars(chars string) (types []Type, unknown []byte) {
	for i := 0; i < len(chars); i++ {
		found := false
		for t, tn := range typeNames {
			if tn.chr == chars[i] {
				types, found = append(types, t), true
				break
			}
		}
		if !found {
			unknown = append(unknown, chars[i])
		}
	}
	return types, unknown
}

// LogitBias adds Bias to the logit of Token (llama_logit_bias); -Inf bans it.
type LogitBias struct {
	Token int32
	Bias  float32
}

// Params are the sampling settings: common_params_sampling's fields under
// llama-server's JSON names (server-schema.cpp), with its defaults from
// [DefaultParams]. Probabilities and temperatures are plain numbers; counts
// are tokens.
type Params struct {
	Seed uint32 `json:"seed"` // seed of XTC and of the draw; DefaultSeed: random

	Temp             float32 `json:"temperature"`       // <= 0: keep only the most likely token
	DynatempRange    float32 `json:"dynatemp_range"`    // > 0: dynamic temperature in [temp-range, temp+range]
	DynatempExponent float32 `json:"dynatemp_exponent"` // maps normalised entropy to the range
	TopK             int32   `json:"top_k"`             // <= 0: off
	TopP             float32 `json:"top_p"`             // >= 1: off
	MinP             float32 `json:"min_p"`             // <= 0: off
	TopNSigma        float32 `json:"top_n_sigma"`       // <= 0: off
	XTCProbability   float32 `json:"xtc_probability"`   // <= 0: off
	XTCThreshold     float32 `json:"xtc_threshold"`     // > 0.5: off
	TypicalP         float32 `json:"typical_p"`         // >= 1: off
	MinKeep          int32   `json:"min_keep"`          // candidates top-p, min-p, typical-p and XTC always keep

	PenaltyLastN   int32   `json:"repeat_last_n"`     // tokens of history penalised; 0: off
	PenaltyRepeat  float32 `json:"repeat_penalty"`    // 1: off
	PenaltyFreq    float32 `json:"frequency_penalty"` // 0: off
	PenaltyPresent float32 `json:"presence_penalty"`  // 0: off

	DryMultiplier       float32  `json:"dry_multiplier"` // 0: off
	DryBase             float32  `json:"dry_base"`
	DryAllowedLength    int32    `json:"dry_allowed_length"`
	DryPenaltyLastN     int32    `json:"dry_penalty_last_n"` // 0: off
	DrySequenceBreakers []string `json:"dry_sequence_breakers"`

	Mirostat       int32   `json:"mirostat"` // refused unless 0
	MirostatTau    float32 `json:"mirostat_tau"`
	MirostatEta    float32 `json:"mirostat_eta"`
	AdaptiveTarget float32 `json:"adaptive_target"` // used only by the adaptive_p stage (refused)
	AdaptiveDecay  float32 `json:"adaptive_decay"`

	NProbs          int32 `json:"n_probs"` // > 0: report the top n_probs tokens (see Chain.Probs)
	BackendSampling bool  `json:"backend_sampling"`

	Samplers  []Type      `json:"-"` // stage order; see ParseSamplerNames
	LogitBias []LogitBias `json:"-"` // applied first, before every stage

	// Grammar is a GBNF grammar the tokens drawn must follow ("" for none),
	// applied as common_sampler_sample applies it: the chain draws first,
	// and only when the grammar refuses the token drawn is the chain run
	// again over the candidates the grammar allows.
	Grammar string `json:"grammar"`
	// GrammarType says where Grammar came from (0 is GrammarUser); for
	// GrammarOutputFormat and GrammarToolCalls grammars that are not lazy,
	// the tokens of GenerationPrompt are fed to the grammar first.
	GrammarType GrammarType `json:"-"`
	// GrammarLazy grammars constrain nothing until one of GrammarTriggers.
	GrammarLazy     bool             `json:"-"`
	GrammarTriggers []GrammarTrigger `json:"-"`
	// PreservedTokens are special tokens whose text the answer shows
	// (llama-server renders them with special = true); the chain does not
	// use them.
	PreservedTokens []int32 `json:"-"`
	// GenerationPrompt is the part of the prompt the chat template put
	// after the last message (common_params_sampling.generation_prompt); its
	// tokens are fed to the reasoning budget, and to output-format and
	// tool-call grammars.
	GenerationPrompt string `json:"-"`

	// The reasoning budget (common/reasoning-budget.cpp), made when both
	// tags are set and the grammar is lazy, the budget is >= 0 or
	// ReasoningControl is set: it counts the tokens between the start
	// tokens and one of the end sequences and, past ReasoningBudgetTokens,
	// forces ReasoningBudgetForced (the message and the first end tag);
	// while it counts, a lazy grammar stands aside.
	ReasoningBudgetTokens int32     `json:"-"` // -1: no limit
	ReasoningBudgetStart  []int32   `json:"-"` // the start tag's tokens
	ReasoningBudgetEnd    [][]int32 `json:"-"` // the end tags' tokens
	ReasoningBudgetForced []int32   `json:"-"`
	ReasoningControl      bool      `json:"-"`
}

// DefaultParams returns common_params_sampling's defaults, llama-server's
// when neither the command line nor the model's general.sampling.* metadata
// changes them:
//
//	seed -1 (random), temperature 0.8, dynatemp_range 0, dynatemp_exponent 1,
//	top_k 40, top_p 0.95, min_p 0.05, top_n_sigma -1, xtc_probability 0,
//	xtc_threshold 0.1, typical_p 1, min_keep 0, repeat_last_n 64,
//	repeat_penalty 1, frequency_penalty 0, presence_penalty 0,
//	dry_multiplier 0, dry_base 1.75, dry_allowed_length 2,
//	dry_penalty_last_n 64, dry_sequence_breakers ["\n", ":", "\"", "*"],
//	mirostat 0, mirostat_tau 5, mirostat_eta 0.1, adaptive_target -1,
//	adaptive_decay 0.9, n_probs 0, samplers DefaultSamplers(),
//	reasoning_budget_tokens -1.
func DefaultParams() Params {
	return Params{
		Seed: DefaultSeed, Temp: 0.8, DynatempExponent: 1, TopK: 40, TopP: 0.95, MinP: 0.05, TopNSigma: -1,
		XTCThreshold: 0.1, TypicalP: 1, PenaltyLastN: 64, PenaltyRepeat: 1, DryBase: 1.75, DryAllowedLength: 2,
		DryPenaltyLastN: 64, DrySequenceBreakers: []string{"\n", ":", "\"", "*"}, MirostatTau: 5, MirostatEta: 0.1,
		AdaptiveTarget: -1, AdaptiveDecay: 0.9, Samplers: DefaultSamplers(), ReasoningBudgetTokens: -1,
	}
}

// ErrUnsupported is wrapped by the error for a parameter bankml cannot
// reproduce exactly (llama-server answers 400 naming it).
var ErrUnsupported = errors.New("not reproduced exactly by bankml")

// ErrInvalid is wrapped by the error for a parameter value llama.cpp
// rejects (common_sampler_init's checks, server-schema.cpp's hard limits).
var ErrInvalid = errors.New("invalid sampling parameter")

// ParamError names the offending parameter by its llama-server name.
type ParamError struct {
	Param  string // e.g. "mirostat", "repeat_penalty"
	Reason string
	Err    error // ErrUnsupported or ErrInvalid
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("sample: %s: %s (%v)", e.Param, e.Reason, e.Err)
}

func (e *ParamError) Unwrap() error { return e.Err }

func unsupported(param, reason string) error {
	return &ParamError{Param: param, Reason: reason, Err: ErrUnsupported}
}

func invalid(param, format string, args ...any) error {
	return &ParamError{Param: param, Reason: fmt.Sprintf(format, args...), Err: ErrInvalid}
}

// Check reports the first parameter that bankml refuses (a *ParamError
// wrapping ErrUnsupported: mirostat, llguidance grammars, the adaptive_p
// and infill stages, backend_sampling) or that llama.cpp rejects (wrapping
// ErrInvalid:
// common_sampler_init's "penalty_repeat must be finite and greater than 0",
// "penalty_freq must be finite", "penalty_present must be finite", a
// non-finite float anywhere, an unknown stage, an unknown grammar or
// trigger type). A grammar that does not parse is New's error.
func (p *Params) Check() error {
	switch {
	case p.Mirostat != 0:
		return unsupported("mirostat", fmt.Sprintf("mirostat %d is not implemented; use 0", p.Mirostat))
	case p.BackendSampling && p.Grammar != "":
		// common_sampler_init turns backend sampling off when there is a grammar
	case p.BackendSampling:
		return unsupported("backend_sampling", "backend sampling runs ggml graphs whose results bankml does not reproduce")
	}
	if err := checkGrammarParams(p); err != nil {
		return err
	}
	for _, t := range p.Samplers {
		switch t {
		case AdaptiveP:
			return unsupported("samplers", "the adaptive_p sampler is not implemented")
		case Infill:
			return unsupported("samplers", "the infill sampler is not implemented")
		}
		if _, ok := typeNames[t]; !ok {
			return invalid("samplers", "unknown sampler type %d", int(t))
		}
	}
	r := p.PenaltyRepeat
	if !finite(r) || r <= 0 || !finite(1/r) {
		return invalid("repeat_penalty", "penalty_repeat must be finite and greater than 0, not %v", r)
	}
	if !finite(p.PenaltyFreq) {
		return invalid("frequency_penalty", "penalty_freq must be finite, not %v", p.PenaltyFreq)
	}
	if !finite(p.PenaltyPresent) {
		return invalid("presence_penalty", "penalty_present must be finite, not %v", p.PenaltyPresent)
	}
	for _, f := range []struct {
		name string
		v    float32
	}{{"temperature", p.Temp}, {"dynatemp_range", p.DynatempRange}, {"dynatemp_exponent", p.DynatempExponent},
		{"top_p", p.TopP}, {"min_p", p.MinP}, {"top_n_sigma", p.TopNSigma}, {"xtc_probability", p.XTCProbability},
		{"xtc_threshold", p.XTCThreshold}, {"typical_p", p.TypicalP}, {"dry_multiplier", p.DryMultiplier},
		{"dry_base", p.DryBase}} {
		if !finite(f.v) {
			return invalid(f.name, "%v is not a finite number", f.v)
		}
	}
	for _, b := range p.LogitBias {
		if b.Bias != b.Bias || math.IsInf(float64(b.Bias), 1) {
			return invalid("logit_bias", "bias %v for token %d is not a number or -Inf", b.Bias, b.Token)
		}
	}
	return nil
}

// ApplyServerLimits applies llama-server's per-field limits
// (server-schema.cpp) to p as if every field had come in a request: soft
// limits clamp (top_k to >= 0; top_p, min_p, xtc_probability, xtc_threshold
// to [0, 1]; temperature to >= 0; mirostat to [0, 2]; adaptive_target to
// <= 1), hard limits are errors wrapping ErrInvalid (repeat_last_n,
// dry_allowed_length, dry_penalty_last_n and min_keep >= 0; adaptive_decay in
// [0, 0.99]), and a dry_base below 1 takes base's (the server's default).
func (p *Params) ApplyServerLimits(base Params) error {
	clamp := func(v *float32, lo, hi float32) {
		*v = max(lo, min(hi, *v))
	}
	p.TopK = max(0, p.TopK)
	clamp(&p.TopP, 0, 1)
	clamp(&p.MinP, 0, 1)
	clamp(&p.XTCProbability, 0, 1)
	clamp(&p.XTCThreshold, 0, 1)
	p.Temp = max(0, p.Temp)
	p.Mirostat = max(0, min(2, p.Mirostat))
	p.AdaptiveTarget = min(1, p.AdaptiveTarget)
	for _, f := range []struct {
		name string
		v    int32
	}{{"repeat_last_n", p.PenaltyLastN}, {"dry_allowed_length", p.DryAllowedLength},
		{"dry_penalty_last_n", p.DryPenaltyLastN}, {"min_keep", p.MinKeep}} {
		if f.v < 0 {
			return invalid(f.name, "Value must be between 0 <= value <= 2147483647, but got %d", f.v)
		}
	}
	if p.AdaptiveDecay < 0 || p.AdaptiveDecay > 0.99 {
		return invalid("adaptive_decay", "Value must be between 0 <= value <= 0.99, but got %v", p.AdaptiveDecay)
	}
	if p.DryBase < 1 {
		p.DryBase = base.DryBase
	}
	return nil
}

func finite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
