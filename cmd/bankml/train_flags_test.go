package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainsIntFlagsOutOfRangeAreRefusedBeforeAnythingIsRead: --es-iters, --es-pop and --checkpoint-every below 0
// were taken for their defaults without a word, and --stories, --story-tokens, --soft-top-k and the student's
// sizes were refused only after the teacher was read (the sizes in a message quoting the whole config). Each is
// now refused first, naming the flag and its range in the one range wording, exit 1: the teacher given here does
// not exist, so an error about it means the flag was not checked first.
func TestTrainsIntFlagsOutOfRangeAreRefusedBeforeAnythingIsRead(t *testing.T) {
	dir := t.TempDir()
	const dflt = "0: the task's default"
	for _, c := range []struct {
		name string
		args []string
		want string // standard error, whole
	}{
		{name: "a negative --es-iters is refused, not the task's default",
			args: []string{"--es", "student", "--es-iters", "-1"}, want: "bankml: train: --es-iters: value -1 out of range [0, inf) (" + dflt + ")"},
		{name: "a negative --es-pop is refused, not the task's default",
			args: []string{"--es", "spirals", "--es-pop", "-3"}, want: "bankml: train: --es-pop: value -3 out of range [0, inf) (" + dflt + ")"},
		{name: "a negative --checkpoint-every is refused, not taken for only at the end",
			args: []string{"--checkpoint-every", "-1"}, want: "bankml: train: --checkpoint-every: value -1 out of range [0, inf) (0: only at the end)"},
		{name: "no stories is refused before the teacher is read",
			args: []string{"--stories", "0"}, want: "bankml: train: --stories: value 0 out of range [1, inf)"},
		{name: "stories of no tokens are refused before the teacher is read",
			args: []string{"--story-tokens", "0"}, want: "bankml: train: --story-tokens: value 0 out of range [1, 1073741823] (the sampling context holds BOS and the story)"},
		{name: "no soft targets are refused before the teacher is read",
			args: []string{"--soft-top-k", "-2"}, want: "bankml: train: --soft-top-k: value -2 out of range [1, inf)"},
		{name: "a student of no layers is refused naming the flag",
			args: []string{"--n-layer", "0"}, want: "bankml: train: --n-layer: value 0 out of range [1, inf)"},
		{name: "a sequence of one token is refused naming the flag",
			args: []string{"--seq", "1"}, want: "bankml: train: --seq: value 1 out of range [2, inf) (a token and the one after it at least)"},
		{name: "a negative warm-up is refused in an ES run too",
			args: []string{"--es", "student", "--warmup", "-1"}, want: "bankml: train: --warmup: value -1 out of range [0, inf)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"train", "--out", dir, "--teacher", filepath.Join(dir, "none.gguf")}, c.args...)
			code, _, stderr := runCLI(args...)
			if code != 1 || strings.TrimRight(stderr, "\n") != c.want {
				t.Fatalf("exit %d, stderr\n%s\nwant exit 1 and\n%s", code, stderr, c.want)
			}
		})
	}
}
