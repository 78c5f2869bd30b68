package reference

import (
	"encoding/json"
	"fmt"
	"math"
)

// CommonSamplerParams are the fields of common_params_sampling that
// common_sampler_init reads to build a chain, under llama-server's JSON names
// (the same tags as package sample's Params, so a test may convert with a
// JSON round trip), plus the stage order and the request's logit biases.
type CommonSamplerParams struct {
	Seed uint32 `json:"seed"`

	Temp             float32 `json:"temperature"`
	DynatempRange    float32 `json:"dynatemp_range"`
	DynatempExponent float32 `json:"dynatemp_exponent"`
	TopK             int32   `json:"top_k"`
	TopP             float32 `json:"top_p"`
	MinP             float32 `json:"min_p"`
	TopNSigma        float32 `json:"top_n_sigma"`
	XTCProbability   float32 `json:"xtc_probability"`
	XTCThreshold     float32 `json:"xtc_threshold"`
	TypicalP         float32 `json:"typical_p"`
	MinKeep          int32   `json:"min_keep"`

	PenaltyLastN   int32   `json:"repeat_last_n"`
	PenaltyRepeat  float32 `json:"repeat_penalty"`
	PenaltyFreq    float32 `json:"frequency_penalty"`
	PenaltyPresent float32 `json:"presence_penalty"`

	DryMultiplier       float32  `json:"dry_multiplier"`
	DryBase             float32  `json:"dry_base"`
	DryAllowedLength    int32    `json:"dry_allowed_length"`
	DryPenaltyLastN     int32    `json:"dry_penalty_last_n"`
	DrySequenceBreakers []string `json:"dry_sequence_breakers"`

	// Samplers are the stages in order, by common_sampler_type_to_str's
	// names: "penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p",
	// "min_p", "xtc", "temperature".
	Samplers []string `json:"-"`
	// LogitBias are the request's biases; the model's suppress tokens
	// follow them at -Inf.
	LogitBias []LogitBias `json:"-"`

	// The grammar and the reasoning budget (common_params_sampling's
	// grammar, grammar_lazy, grammar_triggers, preserved_tokens,
	// generation_prompt, reasoning_budget_*, reasoning_control), used by
	// GrammarShim.NewCommonSampler only. GrammarType is common_grammar_type
	// (1 user, 2 output format, 3 tool calls).
	Grammar               string           `json:"-"`
	GrammarType           int              `json:"-"`
	GrammarLazy           bool             `json:"-"`
	GrammarTriggers       []GrammarTrigger `json:"-"`
	PreservedTokens       []int32          `json:"-"`
	GenerationPrompt      string           `json:"-"`
	ReasoningBudgetTokens int32            `json:"-"`
	ReasoningBudgetStart  []int32          `json:"-"`
	ReasoningBudgetEnd    [][]int32        `json:"-"`
	ReasoningBudgetForced []int32          `json:"-"`
	ReasoningControl      bool             `json:"-"`
}

// GrammarTrigger is common_grammar_trigger: Type is common_grammar_trigger_type (0 token, 1 word, 2 pattern, 3
// full pattern).
type GrammarTrigger struct {
	Type  int
	Value string
	Token int32
}

// structJSON writes p keyed by common_params_sampling's field names, as the grammar shim's gs_csampler_init reads
// them (a -Inf bias as null).
func (p CommonSamplerParams) structJSON() ([]byte, error) {
	var bias [][2]any
	for _, b := range p.LogitBias {
		var v any = b.Bias
		if math.IsInf(float64(b.Bias), -1) {
			v = nil
		}
		bias = append(bias, [2]any{b.Token, v})
	}
	var triggers [][3]any
	for _, t := range p.GrammarTriggers {
		triggers = append(triggers, [3]any{t.Type, t.Value, t.Token})
	}
	m := map[string]any{
		"seed": p.Seed, "temp": p.Temp, "dynatemp_range": p.DynatempRange, "dynatemp_exponent": p.DynatempExponent,
		"top_k": p.TopK, "top_p": p.TopP, "min_p": p.MinP, "top_n_sigma": p.TopNSigma, "xtc_probability": p.XTCProbability,
		"xtc_threshold": p.XTCThreshold, "typ_p": p.TypicalP, "min_keep": p.MinKeep, "penalty_last_n": p.PenaltyLastN,
		"penalty_repeat": p.PenaltyRepeat, "penalty_freq": p.PenaltyFreq, "penalty_present": p.PenaltyPresent,
		"dry_multiplier": p.DryMultiplier, "dry_base": p.DryBase, "dry_allowed_length": p.DryAllowedLength,
		"dry_penalty_last_n": p.DryPenaltyLastN, "dry_sequence_breakers": p.DrySequenceBreakers, "samplers": p.Samplers,
		"logit_bias": bias, "grammar_lazy": p.GrammarLazy, "grammar_triggers": triggers,
		"preserved_tokens": p.PreservedTokens, "generation_prompt": p.GenerationPrompt,
		"reasoning_budget_tokens": p.ReasoningBudgetTokens, "reasoning_budget_start": p.ReasoningBudgetStart,
		"reasoning_budget_end": p.ReasoningBudgetEnd, "reasoning_budget_forced": p.ReasoningBudgetForced,
		"reasoning_control": p.ReasoningControl,
	}
	if p.DrySequenceBreakers == nil {
		m["dry_sequence_breakers"] = []string{}
	}
	if p.Samplers == nil {
		m["samplers"] = []string{}
	}
	if p.Grammar != "" {
		m["grammar"] = map[string]any{"type": p.GrammarType, "text": p.Grammar}
	}
	return json.Marshal(m)
}

// NewCommonSampler builds the reference's chain for p exactly as
// common_sampler_init (common/sampling.cpp) does: a logit-bias stage with
// p.LogitBias then the model's suppress tokens at -Inf (when there are any),
// every stage of p.Samplers through its llama_sampler_init_* (no-op stages
// included: llama.cpp creates them as empty samplers), then the seeded draw
// (llama_sampler_init_dist). An unknown stage name is an error.
func (m *Model) NewCommonSampler(p CommonSamplerParams) (*SamplerChain, error) {
	suppress, err := m.SuppressTokens()
	if err != nil {
		return nil, err
	}
	c, err := m.NewSamplerChain()
	if err != nil {
		return nil, err
	}
	bias := append([]LogitBias(nil), p.LogitBias...)
	for _, s := range suppress {
		bias = append(bias, LogitBias{Token: s, Bias: float32(math.Inf(-1))})
	}
	if len(bias) > 0 {
		c.AddLogitBias(bias)
	}
	mk := int(p.MinKeep)
	for _, st := range p.Samplers {
		switch st {
		case "dry":
			c.AddDry(p.DryMultiplier, p.DryBase, p.DryAllowedLength, p.DryPenaltyLastN, p.DrySequenceBreakers)
		case "top_k":
			c.AddTopK(p.TopK)
		case "top_p":
			c.AddTopP(p.TopP, mk)
		case "top_n_sigma":
			c.AddTopNSigma(p.TopNSigma)
		case "min_p":
			c.AddMinP(p.MinP, mk)
		case "xtc":
			c.AddXTC(p.XTCProbability, p.XTCThreshold, mk, p.Seed)
		case "typ_p":
			c.AddTypical(p.TypicalP, mk)
		case "temperature":
			c.AddTempExt(p.Temp, p.DynatempRange, p.DynatempExponent)
		case "penalties":
			c.AddPenalties(p.PenaltyLastN, p.PenaltyRepeat, p.PenaltyFreq, p.PenaltyPresent)
		default:
			c.Free()
			return nil, fmt.Errorf("reference: no sampler stage %q", st)
		}
	}
	c.AddDist(p.Seed)
	return c, nil
}
