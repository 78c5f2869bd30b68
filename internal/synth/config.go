package synth

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bankml/bankml/gguf"
)

// The architectures synth writes: the values of general.architecture.
const (
	ArchLlama  = "llama"  // llama.cpp's LLM_ARCH_LLAMA: no q/k norms, normal RoPE
	ArchQwen3  = "qwen3"  // llama.cpp's LLM_ARCH_QWEN3: per-head RMS norms on q and k, NeoX RoPE
	ArchQwen2  = "qwen2"  // LLM_ARCH_QWEN2: llama's blocks with Q/K/V biases, NeoX RoPE
	ArchGemma3 = "gemma3" // LLM_ARCH_GEMMA3: q/k norms, post-attention and post-FFN norms, GeGLU, sliding-window layers
	ArchPhi3   = "phi3"   // LLM_ARCH_PHI3: fused attn_qkv and gate+up (ffn_up of 2*n_ff rows), optional rope factors
	ArchBitnet = "bitnet" // LLM_ARCH_BITNET: attention and FFN sub-norms, per-tensor weight scales, tied output
	ArchBert   = "bert"   // LLM_ARCH_BERT: encoder; absolute positions, token types, layer norms with biases, GELU
)

// Archs returns the architectures synth writes, sorted.
func Archs() []string {
	return []string{ArchBert, ArchBitnet, ArchGemma3, ArchLlama, ArchPhi3, ArchQwen2, ArchQwen3}
}

// The pooling types of {arch}.pooling_type (enum llama_pooling_type in include/llama.h).
var poolingTypes = map[string]uint32{"none": 0, "mean": 1, "cls": 2, "last": 3, "rank": 4}

// ErrConfig is wrapped by every error about a Config, a preset name or a type name.
var ErrConfig = errors.New("synth: bad configuration")

// Shape holds a model's hyperparameters. Counts are plain numbers, lengths are in elements.
type Shape struct {
	NEmbd        int     // embedding length (n_embd)
	NLayer       int     // transformer blocks
	NFF          int     // feed-forward length (n_ff)
	NHead        int     // attention heads
	NHeadKV      int     // key/value heads (grouped-query attention); divides NHead
	HeadDim      int     // per-head key and value length (attention.key_length, value_length, RoPE dimensions)
	NVocab       int     // size of the synthetic vocabulary; a Config's explicit Vocab overrides it
	NCtxTrain    int     // context_length
	RopeFreqBase float32 // rope.freq_base
	RMSEps       float32 // attention.layer_norm_rms_epsilon (bert: attention.layer_norm_epsilon)
	Tied         bool    // no output.weight: the output projection reuses token_embd (tie_word_embeddings)

	// Architecture settings (see ForArch for each architecture's defaults); zero values leave the key or tensor out.
	SlidingWindow   int     // gemma3: attention.sliding_window, the window of the sliding-window layers
	SlidingPattern  int     // gemma3: attention.sliding_window_pattern (every N-th layer is global; llama.cpp's default 6)
	RopeFreqBaseSWA float32 // gemma3: rope.freq_base_swa, the sliding-window layers' RoPE base
	RopeScaleLinear float32 // rope.scaling.type "linear" with rope.scaling.factor this value
	LogitSoftcap    float32 // gemma3: final_logit_softcapping
	FusedQKV        bool    // phi3: one attn_qkv.weight instead of attn_q, attn_k and attn_v
	RopeFactors     bool    // phi3: rope_factors_long and rope_factors_short ({head_dim/2}, F32)
	NCtxOrig        int     // rope.scaling.original_context_length (phi3 picks the long factors past it)
	RopeAttnFactor  float32 // rope.scaling.attn_factor
	WeightScales    bool    // bitnet: a {1} F32 "<name>.scale" beside each block projection
	NTokenTypes     int     // bert: tokenizer.ggml.token_type_count and the rows of token_types.weight
	Pooling         string  // {arch}.pooling_type: "none", "mean", "cls", "last" or "rank"; "" leaves the key out
	Classifier      int     // bert, qwen3: the labels of a ranking head (cls.output, bert also cls); 0: none
}

// The presets. Row lengths (n_embd, n_ff, n_head*head_dim) are multiples of 256 in all of them, so every block type
// fits every 2-D weight (the K-quants' 256-element super-blocks included).
var presets = map[string]Shape{
	// tiny: small enough for fast tests, block-compatible with every type (rows of 256 and 512 elements).
	"tiny": {NEmbd: 256, NLayer: 2, NFF: 512, NHead: 4, NHeadKV: 2, HeadDim: 64, NVocab: 1024,
		NCtxTrain: 4096, RopeFreqBase: 1e6, RMSEps: 1e-6},
	// bonsai-1.7b: the shapes of Qwen3-1.7B (config.json: hidden 2048, 28 layers, intermediate 6144, 16 heads,
	// 8 KV heads, head_dim 128, vocab 151936, 40960 positions, rope_theta 1e6, eps 1e-6, tied embeddings).
	"bonsai-1.7b": {NEmbd: 2048, NLayer: 28, NFF: 6144, NHead: 16, NHeadKV: 8, HeadDim: 128, NVocab: 151936,
		NCtxTrain: 40960, RopeFreqBase: 1e6, RMSEps: 1e-6, Tied: true},
	// bonsai-8b: the shapes of Qwen3-8B, which Bonsai-8B shares: n_embd 4096, 36 layers, n_ff 12288,
	// 32 heads, 8 KV heads, head_dim 128, vocab 151936, untied output.
	"bonsai-8b": {NEmbd: 4096, NLayer: 36, NFF: 12288, NHead: 32, NHeadKV: 8, HeadDim: 128, NVocab: 151936,
		NCtxTrain: 40960, RopeFreqBase: 1e6, RMSEps: 1e-6},
}

// Preset returns the shape of a named preset: "tiny", "bonsai-1.7b" or "bonsai-8b" (see [PresetNames]). An unknown
// name gives an error wrapping [ErrConfig].
func Preset(name string) (Shape, error) {
	s, ok := presets[name]
	if !ok {
		return Shape{}, fmt.Errorf("%w: unknown preset %q (have %s)", ErrConfig, name, strings.Join(PresetNames(), ", "))
	}
	return s, nil
}

// PresetNames returns the preset names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// fileTypes maps each weight type synth generates to llama.cpp's llama_ftype (include/llama.h), written as
// general.file_type for the type of the blocks' 2-D weights. Q3_K, Q4_K and Q5_K map to the _S ("small") mixes,
// the ones that use the type for (nearly) every 2-D weight; Q2_K and Q6_K have one mix each.
var fileTypes = map[gguf.GGMLType]uint32{
	gguf.F32: 0, gguf.F16: 1, gguf.Q4_0: 2, gguf.Q8_0: 7,
	gguf.Q2_K: 10, gguf.Q3_K: 11, gguf.Q4_K: 14, gguf.Q5_K: 16, gguf.Q6_K: 18,
	gguf.BF16: 32, gguf.TQ1_0: 36, gguf.TQ2_0: 37, gguf.Q1_0: 40, gguf.Q2_0: 41,
}

// Types returns the weight types synth generates, in ggml id order: F32, F16, Q4_0, Q8_0, Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, BF16, TQ1_0, TQ2_0, Q1_0, Q2_0.
func Types() []gguf.GGMLType {
	out := make([]gguf.GGMLType, 0, len(fileTypes))
	for t := range fileTypes {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// ParseType returns the weight type named by ggml's type name, case-insensitively ("q1_0", "Q1_0", "tq2_0",
// "bf16", ...). Names of types synth does not generate give an error wrapping [ErrConfig].
func ParseType(name string) (gguf.GGMLType, error) {
	for _, t := range Types() {
		if strings.EqualFold(name, t.String()) {
			return t, nil
		}
	}
	var names []string
	for _, t := range Types() {
		names = append(names, strings.ToUpper(t.String()))
	}
	return 0, fmt.Errorf("%w: unsupported weight type %q (have %s)", ErrConfig, name, strings.Join(names, ", "))
}

// Config describes one synthetic model.
type Config struct {
	Arch  string // ArchLlama or ArchQwen3
	Shape Shape  // hyperparameters, e.g. from Preset

	// Weight is the type of the blocks' 2-D weights (attention and feed-forward matrices); Embd that of
	// token_embd and Output that of output (unused when Shape.Tied). Zero values mean F32. Norms are always F32.
	Weight, Embd, Output gguf.GGMLType

	// Vocab is the vocabulary; nil means Synthetic(Shape.NVocab). Its size sets n_vocab.
	Vocab *Vocab

	Seed uint64 // selects the weights; the vocabulary does not depend on it

	Name        string // general.name; empty gives "synthetic <arch> <type>"
	Description string // general.description; empty gives a line naming the arch, types, seed and vocabulary

	// Metadata is appended after the planned keys, for settings the presets do not carry (e.g.
	// "qwen3.rope.scaling.type", "tokenizer.ggml.scores"); a key that is already planned is an error wrapping
	// [ErrConfig].
	Metadata []gguf.KV
}

// validate checks the shape against the architecture's rules (positive sizes, heads dividing evenly) and the
// types against what synth generates; tensors then checks that every row length is a multiple of its type's block
// size (256 elements for the K-quants).
func (c *Config) validate(nVocab int) error {
	s := c.Shape
	if !slices.Contains(Archs(), c.Arch) {
		return fmt.Errorf("%w: unknown architecture %q (have %s)", ErrConfig, c.Arch, strings.Join(Archs(), ", "))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"n_embd", s.NEmbd}, {"n_layer", s.NLayer}, {"n_ff", s.NFF}, {"n_head", s.NHead}, {"n_head_kv", s.NHeadKV},
		{"head_dim", s.HeadDim}, {"n_vocab", nVocab}, {"n_ctx_train", s.NCtxTrain}} {
		if f.v < 1 || f.v > 1<<31-1 {
			return fmt.Errorf("%w: %s = %d, want 1 to 2^31-1", ErrConfig, f.name, f.v)
		}
	}
	if s.NHead%s.NHeadKV != 0 {
		return fmt.Errorf("%w: n_head %d is not a multiple of n_head_kv %d", ErrConfig, s.NHead, s.NHeadKV)
	}
	if s.HeadDim%2 != 0 {
		return fmt.Errorf("%w: head_dim %d is odd; RoPE rotates pairs", ErrConfig, s.HeadDim)
	}
	switch c.Arch {
	case ArchLlama, ArchQwen2, ArchPhi3, ArchBitnet, ArchBert:
		// llama.cpp's llama loader derives n_rot from n_embd/n_head and refuses a different rope dimension; the
		// others bind attn_output (and bitnet attn_q) as {n_embd, n_embd}.
		if s.NEmbd != s.NHead*s.HeadDim {
			return fmt.Errorf("%w: %s needs n_embd = n_head*head_dim, have %d != %d*%d", ErrConfig, c.Arch, s.NEmbd, s.NHead, s.HeadDim)
		}
	}
	if c.Arch == ArchBitnet && !s.Tied {
		// src/models/bitnet.cpp has no output tensor: its logits use token_embd.
		return fmt.Errorf("%w: bitnet has no output.weight: its shape must be tied", ErrConfig)
	}
	if c.Arch == ArchBert && s.NTokenTypes < 1 {
		return fmt.Errorf("%w: bert needs token types (llama.cpp: \"model needs to define token type count\")", ErrConfig)
	}
	if _, ok := poolingTypes[s.Pooling]; s.Pooling != "" && !ok {
		return fmt.Errorf("%w: pooling %q (have none, mean, cls, last, rank)", ErrConfig, s.Pooling)
	}
	if s.Classifier < 0 || (s.Classifier > 0 && c.Arch != ArchBert && c.Arch != ArchQwen3) {
		return fmt.Errorf("%w: a classifier of %d labels on %s (bert and qwen3 have one)", ErrConfig, s.Classifier, c.Arch)
	}
	if s.SlidingWindow < 0 || s.SlidingPattern < 0 || s.NCtxOrig < 0 || s.NTokenTypes < 0 {
		return fmt.Errorf("%w: negative sliding window, pattern, original context or token types", ErrConfig)
	}
	if !(s.RMSEps > 0) || !(s.RopeFreqBase > 0) {
		return fmt.Errorf("%w: rms_eps %g and rope_freq_base %g must be positive", ErrConfig, s.RMSEps, s.RopeFreqBase)
	}
	for _, t := range []struct {
		class string
		t     gguf.GGMLType
	}{{"weight", c.Weight}, {"embd", c.Embd}, {"output", c.Output}} {
		if _, ok := fileTypes[t.t]; !ok {
			return fmt.Errorf("%w: %s type %s is not one synth generates", ErrConfig, t.class, t.t)
		}
	}
	return nil
}

// ForArch returns s with the settings architecture arch needs and the defaults synth gives it, so that a preset
// serves every architecture (other architectures get s unchanged):
//   - gemma3: a sliding window of 16 on every other layer (pattern 2: layer 0 slides, layer 1 is global), the
//     sliding layers' RoPE base 10000, linear RoPE scaling by 8 on the global layers, final logit soft-capping 30
//     (Gemma 3 4B's settings but for the window and pattern, which the tiny prompts of tests must cross), tied output;
//   - phi3: fused attn_qkv, rope factors (long and short) with an original context of a quarter of the
//     training context and attn_factor 1.1902381 (Phi-3-mini-128k's);
//   - bitnet: tied output and per-tensor weight scales;
//   - bert: as many KV heads as heads, 512 positions, 2 token types, mean pooling, layer-norm epsilon 1e-12
//     (bge-small's).
func ForArch(arch string, s Shape) Shape {
	switch arch {
	case ArchGemma3:
		s.SlidingWindow, s.SlidingPattern, s.RopeFreqBaseSWA, s.RopeScaleLinear, s.LogitSoftcap = 16, 2, 10000, 8, 30
		s.Tied = true
	case ArchPhi3:
		s.FusedQKV, s.RopeFactors, s.NCtxOrig, s.RopeAttnFactor = true, true, max(1, s.NCtxTrain/4), 1.1902381
	case ArchBitnet:
		s.Tied, s.WeightScales = true, true
	case ArchBert:
		s.NHeadKV, s.NCtxTrain, s.NTokenTypes, s.Pooling, s.RMSEps = s.NHead, 512, 2, "mean", 1e-12
	}
	return s
}
