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
		{"a teacher weight outside [0, 1]", []string{"--lambda", "2"}, "--lambda: value 2 out of range [0, 1]"},
		{"a ternary width that is no TQ2_0 block", []string{"--n-embd", "192", "--n-head", "6", "--n-head-kv", "6"}, "--n-embd 192 is not a multiple of 256"},
		{"heads that do not divide the width", []string{"--n-head", "7"}, "--n-embd 256 is not a multiple of --n-head 7"},
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

// TestTrainsFloatFlagsOutOfRangeReadAsEveryOtherRangeError: a float flag of train outside what it takes is refused
// in the words of every command's range errors, "FLAG: value V out of range [LO, HI] (…)" ("(" where the end is
// not taken, "inf)" with no upper bound, a value finite), prefixed "train: ", exit 1, before a teacher is read or
// a run of evolution strategies starts; a value that does not parse reads as on every command.
func TestTrainsFloatFlagsOutOfRangeReadAsEveryOtherRangeError(t *testing.T) {
	dir := t.TempDir()
	const es = "0: the task's default"
	for _, c := range []struct {
		name string
		args []string
		want string // standard error's last line, whole
	}{
		{"a negative --lr", []string{"--lr", "-1"}, "bankml: train: --lr: value -1 out of range (0, inf)"},
		{"--lr 0", []string{"--lr", "0"}, "bankml: train: --lr: value 0 out of range (0, inf)"},
		{"--lr NaN", []string{"--lr", "NaN"}, "bankml: train: --lr: value NaN out of range (0, inf)"},
		{"--lr Inf", []string{"--lr", "Inf"}, "bankml: train: --lr: value +Inf out of range (0, inf)"},
		{"a --min-lr above --lr", []string{"--lr", "0.01", "--min-lr", "0.5"}, "bankml: train: --min-lr: value 0.5 out of range [0, 0.01] (at most --lr)"},
		{"a negative --weight-decay", []string{"--weight-decay", "-0.1"}, "bankml: train: --weight-decay: value -0.1 out of range [0, inf)"},
		{"a negative --clip", []string{"--clip", "-1"}, "bankml: train: --clip: value -1 out of range [0, inf) (0: off)"},
		{"a --lambda above 1", []string{"--lambda", "2"}, "bankml: train: --lambda: value 2 out of range [0, 1] (the weight of the teacher's soft targets)"},
		{"--temp 0", []string{"--temp", "0"}, "bankml: train: --temp: value 0 out of range (0, inf)"},
		{"a negative --temp, a float32 flag", []string{"--temp", "-0.1"}, "bankml: train: --temp: value -0.1 out of range (0, inf)"},
		{"an --es-flip-rate above 1", []string{"--es", "spirals", "--es-flip-rate", "2"}, "bankml: train: --es-flip-rate: value 2 out of range [0, 1] (" + es + ")"},
		{"a negative --es-update", []string{"--es", "student", "--es-update", "-1"}, "bankml: train: --es-update: value -1 out of range [0, 1] (" + es + ")"},
		{"an --lr that is no number", []string{"--lr", "abc"}, `bankml: train: --lr: expected a float but got "abc" (string) (see bankml train --help)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(append([]string{"train", "--out", dir}, c.args...)...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if got := lines[len(lines)-1]; code != 1 || got != c.want || len(lines) != 1 {
				t.Fatalf("exit %d, stderr\n%s\nwant exit 1 and the one line\n%s", code, stderr, c.want)
			}
		})
	}
}
