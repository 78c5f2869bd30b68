package model

import (
	"errors"
	"math"
	"path/filepath"
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
