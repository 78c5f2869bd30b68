package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainRefusesBadInvocations: usage errors exit 1 naming the problem, before a teacher is read or a story is
// drawn.
func TestTrainRefusesBadInvocations(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a float student exported as ternary", []string{"--mode", "float", "--export", "tq2_0"}, "needs --mode ternary"},
		{"an unknown export type", []string{"--export", "q4_0"}, `--export "q4_0"`},
		{"a teacher weight outside [0, 1]", []string{"--lambda", "2"}, "lambda 2"},
		{"a ternary width that is no TQ2_0 block", []string{"--n-embd", "192", "--n-head", "6", "--n-head-kv", "6"}, "multiples of 256"},
		{"heads that do not divide the width", []string{"--n-head", "7"}, "heads"},
		{"no steps", []string{"--steps", "0"}, "--steps: value 0 out of range [1, inf)"},
		{"an unknown ES task", []string{"--es", "mnist"}, "--es"},
		{"a missing teacher", []string{"--teacher", filepath.Join(dir, "none.gguf")}, "none.gguf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(append([]string{"train", "--out", dir}, c.args...)...)
			if code != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q: want exit 1 naming %q", code, stderr, c.want)
			}
		})
	}
}
