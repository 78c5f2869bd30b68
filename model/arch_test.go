package model

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
)

// TestLoadRefusesWhatTheGraphsDoNotRun: metadata and tensors outside what the
// registered graphs run are refused with the reason, wrapping ErrUnsupported
// where the file is valid but not supported (synthetic tiny files with a
// synthetic vocabulary).
func TestLoadRefusesWhatTheGraphsDoNotRun(t *testing.T) {
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	shape.NVocab = 300
	kv := func(key string, v gguf.Value) []gguf.KV { return []gguf.KV{{Key: key, Value: v}} }
	for _, tc := range []struct {
		name        string
		arch        string
		meta        []gguf.KV
		want        string
		unsupported bool
	}{
		{"longrope", "qwen3", kv("qwen3.rope.scaling.type", gguf.StringValue("longrope")), `rope scaling "longrope"`, true},
		{"unknown scaling", "qwen3", kv("qwen3.rope.scaling.type", gguf.StringValue("ntk")), `rope scaling "ntk"`, true},
		{"scaling type not a string", "qwen3", kv("qwen3.rope.scaling.type", gguf.Uint32Value(2)), "rope.scaling.type has type", false},
		{"partial rope", "qwen3", kv("qwen3.rope.dimension_count", gguf.Uint32Value(32)), "partial RoPE", true},
		{"experts", "llama", kv("llama.expert_count", gguf.Uint32Value(8)), "mixture of experts", true},
		{"nan factor", "qwen3", kv("qwen3.rope.scaling.factor", gguf.Float32Value(float32(math.NaN()))), "rope.scaling.factor", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := synth.Config{Arch: tc.arch, Shape: shape, Weight: gguf.Q2_0, Embd: gguf.Q2_0, Output: gguf.Q2_0, Metadata: tc.meta}
			path := filepath.Join(t.TempDir(), "m.gguf")
			if _, err := synth.WriteFile(path, cfg); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = Load(f)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrUnsupported) != tc.unsupported {
				t.Errorf("Load: %v; want an error with %q (ErrUnsupported %v)", err, tc.want, tc.unsupported)
			}
		})
	}
}

// TestCheckArchitectureRefusesMissingHyperparameters: the hyperparameters
// llama_model::load_hparams requires are refused by name from the header
// alone (CheckArchitecture, before any hashing), a missing
// {arch}.context_length among them (llama.cpp: "key not found in model:
// qwen3.context_length"; bankml once defaulted it to 2048); the reference
// refuses each file too.
func TestCheckArchitectureRefusesMissingHyperparameters(t *testing.T) {
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	shape.NVocab = 300
	for _, tc := range []struct {
		name, arch, drop, want string
	}{
		{"a qwen3 file without context_length", "qwen3", "qwen3.context_length", "qwen3.context_length missing"},
		{"a llama file without context_length", "llama", "llama.context_length", "llama.context_length missing"},
		{"a llama file without block_count", "llama", "llama.block_count", "llama.block_count missing"},
		{"a qwen3 file without the RMS epsilon", "qwen3", "qwen3.attention.layer_norm_rms_epsilon", "layer_norm_rms_epsilon missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := synth.Config{Arch: tc.arch, Shape: shape, Weight: gguf.Q8_0, Embd: gguf.Q8_0, Output: gguf.Q8_0}
			path := filepath.Join(t.TempDir(), "m.gguf")
			if _, err := synth.WriteFile(path, cfg); err != nil {
				t.Fatal(err)
			}
			// The reference loads the file as written, and refuses it without the key (below).
			rm, err := refLib(t).LoadModel(path)
			if err != nil {
				t.Fatalf("the reference refuses the complete file: %v", err)
			}
			rm.Close()
			dropped := withoutKey(t, path, tc.drop)
			f, err := gguf.Open(dropped)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			err = CheckArchitecture(f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckArchitecture: %v; want an error naming %q", err, tc.want)
			}
			if _, err := Load(f); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v; want an error naming %q", err, tc.want)
			}
			// The oracle: the reference refuses the same file.
			if rm, err := refLib(t).LoadModel(dropped); err == nil {
				rm.Close()
				t.Errorf("the reference loads the file without %s; bankml refuses it", tc.drop)
			}
		})
	}
}

// withoutKey rewrites the GGUF file at path without the metadata key drop
// (which must be there) and returns the new file's path.
func withoutKey(t *testing.T, path, drop string) string {
	t.Helper()
	src, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	kvs := slices.DeleteFunc(slices.Clone(src.KVs), func(kv gguf.KV) bool { return kv.Key == drop })
	if len(kvs) != len(src.KVs)-1 {
		t.Fatalf("%s holds no key %s", path, drop)
	}
	out := filepath.Join(t.TempDir(), "dropped.gguf")
	fo, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	w, err := gguf.NewWriter(fo, kvs, src.Tensors)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Tensors {
		if err := w.WriteTensor(src.TensorData(&src.Tensors[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// withTensor rewrites the GGUF file at path with one more tensor (zeros) and returns the new file's path.
func withTensor(t *testing.T, path string, extra gguf.TensorInfo) string {
	t.Helper()
	src, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out := filepath.Join(t.TempDir(), "extra.gguf")
	fo, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	w, err := gguf.NewWriter(fo, src.KVs, append(slices.Clone(src.Tensors), extra))
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Tensors {
		if err := w.WriteTensor(src.TensorData(&src.Tensors[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteTensor(make([]byte, extra.NElements()*int64(extra.Type.TypeSize())/int64(extra.Type.BlockSize()))); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArchitecturesRefuse: what each new graph refuses, by name; where the reference refuses the same file
// (marked), it is checked to.
func TestArchitecturesRefuse(t *testing.T) {
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	shape.NVocab = 300
	kv := func(key string, v gguf.Value) []gguf.KV { return []gguf.KV{{Key: key, Value: v}} }
	n := 0
	for _, tc := range []struct {
		name        string
		arch        string
		meta        []gguf.KV
		drop        string
		extra       *gguf.TensorInfo
		want        string
		unsupported bool
		refRefuses  bool
	}{
		{name: "gemma3's per-layer window flags", arch: "gemma3", meta: kv("gemma3.attention.sliding_window_pattern", gguf.ArrayValue(gguf.BoolArray([]bool{true, false}))),
			want: "per-layer flags", unsupported: true},
		{name: "bert without token types", arch: "bert", drop: "tokenizer.ggml.token_type_count", want: "token_type_count", refRefuses: true},
		{name: "a causal bert", arch: "bert", drop: "bert.attention.causal", want: "non-causal attention", unsupported: true},
		{name: "a non-causal qwen2", arch: "qwen2", meta: kv("qwen2.attention.causal", gguf.BoolValue(false)), want: "runs causal attention", unsupported: true},
		{name: "bitnet with an output matrix", arch: "bitnet", extra: &gguf.TensorInfo{Name: "output.weight", Ne: []int64{256, 300}, Type: gguf.F32},
			want: `tensor "output.weight" is not used by the bitnet graph`, unsupported: true, refRefuses: true},
		{name: "phi3 with long factors only", arch: "phi3", drop: "", extra: nil, want: "come together"},
		{name: "a fused and a separate Q", arch: "qwen2", extra: &gguf.TensorInfo{Name: "blk.0.attn_qkv.weight", Ne: []int64{256, 512}, Type: gguf.F32},
			want: "needs blk.0.attn_qkv.weight or all of attn_q"},
		{name: "a pooling type llama.cpp lacks", arch: "bert", meta: kv("bert.pooling_type", gguf.Uint32Value(9)), want: "pooling_type = 9"},
		{name: "longrope on gemma3", arch: "gemma3", meta: kv("gemma3.rope.scaling.type", gguf.StringValue("longrope")), want: `rope scaling "longrope" on gemma3`, unsupported: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := synth.ForArch(tc.arch, shape)
			if tc.name == "phi3 with long factors only" {
				s.RopeFactors = false
				tc.extra = &gguf.TensorInfo{Name: "rope_factors_long.weight", Ne: []int64{32}, Type: gguf.F32}
			}
			for _, m := range tc.meta { // the key the case sets instead of synth
				switch m.Key {
				case "gemma3.rope.scaling.type":
					s.RopeScaleLinear = 0
				case "gemma3.attention.sliding_window_pattern":
					s.SlidingPattern = 0
				case "bert.pooling_type":
					s.Pooling = ""
				}
			}
			cfg := synth.Config{Arch: tc.arch, Shape: s, Weight: gguf.Q8_0, Embd: gguf.Q8_0, Output: gguf.Q8_0, Metadata: tc.meta}
			path := filepath.Join(t.TempDir(), "m.gguf")
			if _, err := synth.WriteFile(path, cfg); err != nil {
				t.Fatal(err)
			}
			if tc.drop != "" {
				path = withoutKey(t, path, tc.drop)
			}
			if tc.extra != nil {
				path = withTensor(t, path, *tc.extra)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = Load(f)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrUnsupported) != tc.unsupported {
				t.Fatalf("Load: %v; want an error with %q (ErrUnsupported %v)", err, tc.want, tc.unsupported)
			}
			if tc.refRefuses {
				if rm, err := refLib(t).LoadModel(path); err == nil {
					rm.Close()
					t.Fatalf("the reference loads the file bankml refuses (%v)", err)
				}
			}
			n++
		})
	}
	t.Logf("%d refusals named", n)
}
