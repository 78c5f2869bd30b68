package synth

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

// archCase is one synthetic file of an architecture: its weight type and, when not "", the llama.cpp vocabulary
// file (../shared/models/vocab/ggml-vocab-<vocab>.gguf) whose tokenizer it carries.
type archCase struct {
	arch   string
	weight gguf.GGMLType
	vocab  string
}

// archCases are the files TestReferenceLoadsEveryArchitecture writes: each architecture in F16, Q8_0 and the
// low-bit types it takes, with a real vocabulary where the shared folder has one.
var archCases = []archCase{
	{ArchQwen2, gguf.F16, ""}, {ArchQwen2, gguf.Q8_0, ""}, {ArchQwen2, gguf.Q2_0, ""},
	{ArchGemma3, gguf.F16, "llama-spm"}, {ArchGemma3, gguf.Q8_0, "llama-spm"}, {ArchGemma3, gguf.Q1_0, "llama-spm"},
	{ArchPhi3, gguf.F16, "phi-3"}, {ArchPhi3, gguf.Q8_0, "phi-3"}, {ArchPhi3, gguf.TQ2_0, "phi-3"},
	{ArchBitnet, gguf.F16, "gpt-2"}, {ArchBitnet, gguf.TQ1_0, "gpt-2"}, {ArchBitnet, gguf.TQ2_0, "gpt-2"},
	{ArchBert, gguf.F16, "bert-bge"}, {ArchBert, gguf.Q8_0, "bert-bge"},
}

// archConfig is the tiny config of c (ForArch's settings), with its vocabulary.
func archConfig(t testing.TB, c archCase) Config {
	t.Helper()
	cfg := tiny(t, c.arch, c.weight, 21)
	cfg.Shape = ForArch(c.arch, cfg.Shape)
	if c.vocab != "" {
		v, err := VocabFromGGUF(testdata.Model(t, "vocab/ggml-vocab-"+c.vocab+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Vocab = v
	}
	return cfg
}

// TestReferenceLoadsEveryArchitecture: the reference loads each architecture's synthetic file, in every weight
// type synth gives it, with its real vocabulary, and computes finite logits (an embedding for bert) of a plausible
// range from a short prompt: synth writes the tensors and keys each loader wants.
func TestReferenceLoadsEveryArchitecture(t *testing.T) {
	lib := refLib(t)
	dir := t.TempDir()
	n := 0
	for _, c := range archCases {
		t.Run(fmt.Sprintf("%s %s", c.arch, c.weight), func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("%s-%s.gguf", c.arch, c.weight))
			if _, err := WriteFile(path, archConfig(t, c)); err != nil {
				t.Fatal(err)
			}
			m, err := lib.LoadModel(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			prompt, err := m.Tokenize("Hello world, once upon a time", true, false)
			if err != nil {
				t.Fatal(err)
			}
			var out []float32
			if c.arch == ArchBert {
				e, err := m.Embed(prompt, reference.PoolingUnspecified, 1)
				if err != nil {
					t.Fatal(err)
				}
				if e.Pooling != reference.PoolingMean || len(e.Pooled) != 256 {
					t.Fatalf("pooling %d, %d values", e.Pooling, len(e.Pooled))
				}
				out = e.Pooled
			} else if out, err = m.PromptLogits(prompt, 1); err != nil {
				t.Fatal(err)
			}
			lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
			for _, x := range out {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("non-finite output %v", x)
				}
				lo, hi = min(lo, x), max(hi, x)
			}
			if !(hi > lo) || hi-lo > 100 {
				t.Fatalf("%d outputs in [%g, %g]", len(out), lo, hi)
			}
			n++
		})
	}
	t.Logf("the reference loads and runs %d of %d synthetic files", n, len(archCases))
}

// TestArchitecturesHaveTheirTensors: the tensors each architecture adds to or removes from llama's blocks.
func TestArchitecturesHaveTheirTensors(t *testing.T) {
	for _, tc := range []struct {
		arch        string
		has, hasNot []string
	}{
		{ArchQwen2, []string{"blk.1.attn_q.bias", "blk.1.attn_k.bias", "blk.1.attn_v.bias"}, []string{"blk.0.attn_q_norm.weight"}},
		{ArchGemma3, []string{"blk.0.attn_q_norm.weight", "blk.0.post_attention_norm.weight", "blk.0.post_ffw_norm.weight"}, []string{"output.weight"}},
		{ArchPhi3, []string{"blk.0.attn_qkv.weight", "rope_factors_long.weight", "rope_factors_short.weight"}, []string{"blk.0.attn_q.weight", "blk.0.ffn_gate.weight"}},
		{ArchBitnet, []string{"blk.0.attn_sub_norm.weight", "blk.0.ffn_sub_norm.weight", "blk.0.attn_q.scale", "blk.1.ffn_down.scale"}, []string{"output.weight"}},
		{ArchBert, []string{"token_types.weight", "position_embd.weight", "token_embd_norm.bias", "blk.1.layer_output_norm.bias", "blk.0.ffn_up.bias"}, []string{"output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_gate.weight"}},
	} {
		cfg := tiny(t, tc.arch, gguf.Q8_0, 1)
		cfg.Shape = ForArch(tc.arch, cfg.Shape)
		_, infos, err := Plan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ti := range infos {
			names = append(names, ti.Name)
		}
		for _, n := range tc.has {
			if !slices.Contains(names, n) {
				t.Errorf("%s: no %s", tc.arch, n)
			}
		}
		for _, n := range tc.hasNot {
			if slices.Contains(names, n) {
				t.Errorf("%s: has %s", tc.arch, n)
			}
		}
	}
}
