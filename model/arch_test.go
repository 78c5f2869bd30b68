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
