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
	ArchLlama = "llama" // llama.cpp's LLM_ARCH_LLAMA: no q/k norms, normal RoPE
	ArchQwen3 = "qwen3" // llama.cpp's LLM_ARCH_QWEN3: per-head RMS norms on q and k, NeoX RoPE
)

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
	RMSEps       float32 // attention.layer_norm_rms_epsilon
	Tied         bool    // no output.weight: the output projection reuses token_embd (tie_word_embeddings)
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
	// bonsai-8b: the shapes of Qwen3-8B, those of Bonsai-8B (DESIGN.md §5): n_embd 4096, 36 layers, n_ff 12288,
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
	if c.Arch != ArchLlama && c.Arch != ArchQwen3 {
		return fmt.Errorf("%w: unknown architecture %q (have %s, %s)", ErrConfig, c.Arch, ArchLlama, ArchQwen3)
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
	if c.Arch == ArchLlama && s.NEmbd != s.NHead*s.HeadDim {
		// llama.cpp's llama loader derives n_rot from n_embd/n_head and refuses a different rope dimension.
		return fmt.Errorf("%w: llama needs n_embd = n_head*head_dim, have %d != %d*%d", ErrConfig, s.NEmbd, s.NHead, s.HeadDim)
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
