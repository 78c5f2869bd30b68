package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/testdata"
)

// TestSynthWritesTheRequestedModel: bankml synth writes a file that parses with the architecture, tensor types and
// vocabulary asked for, and writes the same bytes again for the same flags.
func TestSynthWritesTheRequestedModel(t *testing.T) {
	dir := t.TempDir()
	tokDir := filepath.Dir(testdata.Model(t, "qwen3/tokenizer_config.json"))
	for _, tc := range []struct {
		name  string
		args  []string
		arch  string
		types map[string]gguf.GGMLType // tensor name -> type; gguf.GGMLType(999) for an absent tensor
		vocab int
	}{
		{"qwen3 q1_0", []string{"--arch", "qwen3", "--preset", "tiny", "--type", "q1_0"}, "qwen3",
			map[string]gguf.GGMLType{"token_embd.weight": gguf.Q1_0, "blk.1.ffn_down.weight": gguf.Q1_0, "output.weight": gguf.Q1_0, "blk.0.attn_q_norm.weight": gguf.F32}, 1024},
		{"per-class types", []string{"--arch", "qwen3", "--preset", "tiny", "--type", "TQ2_0", "--type-embd", "Q8_0", "--type-output", "f16", "--seed", "9"}, "qwen3",
			map[string]gguf.GGMLType{"token_embd.weight": gguf.Q8_0, "blk.0.attn_v.weight": gguf.TQ2_0, "output.weight": gguf.F16}, 1024},
		{"k-quants", []string{"--arch", "qwen3", "--preset", "tiny", "--type", "q4_k", "--type-embd", "Q6_K", "--type-output", "q2_k"}, "qwen3",
			map[string]gguf.GGMLType{"token_embd.weight": gguf.Q6_K, "blk.1.ffn_down.weight": gguf.Q4_K, "output.weight": gguf.Q2_K}, 1024},
		{"llama tied", []string{"--arch", "llama", "--preset", "tiny", "--type", "bf16", "--tied"}, "llama",
			map[string]gguf.GGMLType{"blk.0.attn_k.weight": gguf.BF16, "output.weight": 999, "blk.0.attn_q_norm.weight": 999}, 1024},
		{"qwen3 vocabulary", []string{"--arch", "qwen3", "--preset", "tiny", "--type", "q1_0", "--tied", "--vocab", "qwen3", "--tokenizer", tokDir}, "qwen3",
			map[string]gguf.GGMLType{"token_embd.weight": gguf.Q1_0}, 151936},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".gguf")
			args := append([]string{"synth", out}, tc.args...)
			code, stdout, stderr := runCLI(args...)
			if code != 0 || !strings.Contains(stdout, out) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			first, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Parse(first)
			if err != nil {
				t.Fatal(err)
			}
			if f.Architecture() != tc.arch {
				t.Errorf("architecture %q", f.Architecture())
			}
			if a, ok := f.GetArray("tokenizer.ggml.tokens"); !ok || a.Len != tc.vocab {
				t.Errorf("vocabulary %v", a)
			}
			for name, want := range tc.types {
				ti, ok := f.Tensor(name)
				switch {
				case want == 999 && ok:
					t.Errorf("%s present", name)
				case want != 999 && (!ok || ti.Type != want):
					t.Errorf("%s: %v, want %s", name, ti, want)
				}
			}
			// Without --force an existing output is refused and left alone.
			if code, _, stderr := runCLI(args...); code != 1 || !strings.Contains(stderr, "--force") {
				t.Fatalf("second run without --force: exit %d, %s", code, stderr)
			}
			if code, _, stderr := runCLI(append(args, "--force")...); code != 0 {
				t.Fatalf("second run: exit %d, %s", code, stderr)
			}
			if again, err := os.ReadFile(out); err != nil || !bytes.Equal(again, first) {
				t.Fatalf("second run wrote different bytes (%v)", err)
			}
		})
	}
}

// TestSynthRefusesBadFlags: each bad invocation exits 1 with a message naming the problem and writes nothing.
func TestSynthRefusesBadFlags(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.gguf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--arch", "qwen3", "--preset", "tiny", "--type", "q4_1"}, "unsupported weight type"},
		{[]string{"--arch", "qwen3", "--preset", "tiny", "--type", "q8_k"}, "unsupported weight type"},
		{[]string{"--arch", "qwen3", "--preset", "tiny", "--type", "q1_0", "--type-embd", "iq2_xs"}, "--type-embd"},
		{[]string{"--arch", "qwen3", "--preset", "tiny"}, "--type"},
		{[]string{"--arch", "gpt2", "--preset", "tiny", "--type", "q1_0"}, "--arch"},
		{[]string{"--arch", "qwen3", "--preset", "70b", "--type", "q1_0"}, "--preset"},
		{[]string{"--arch", "qwen3", "--preset", "tiny", "--type", "q1_0", "--vocab", "qwen3", "--tokenizer", dir}, "tokenizer"},
	} {
		code, _, stderr := runCLI(append([]string{"synth", out}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("%v: left %v", tc.args, left)
		}
	}
}
