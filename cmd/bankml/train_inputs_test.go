package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainNamesTheFlagOfAMissingInputBeforeAnyWork: train checks --teacher and --heldout before the teacher is
// admitted (no "admitted:" line), naming the flag, and the default when the default is what is missing (both are
// relative to the current folder); a teacher the front door refuses names --teacher too.
func TestTrainNamesTheFlagOfAMissingInputBeforeAnyWork(t *testing.T) {
	dir := t.TempDir()
	teacher := storiesPath(t)
	notGGUF := filepath.Join(dir, "t.txt")
	if err := os.WriteFile(notGGUF, []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.txt")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wd, "..", "shared", "models", "stories260K.gguf")); err == nil {
		t.Skip("the default teacher exists relative to this folder")
	}
	out := []string{"train", "--out", filepath.Join(dir, "run"), "-t", "1"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "the default teacher missing from the current folder names --teacher and its default",
			args: nil, code: 1,
			want: "bankml: train: --teacher " + filepath.Join(wd, "..", "shared", "models", "stories260K.gguf") + ": no such file (the default, ../shared/models/stories260K.gguf, is relative to the current folder"},
		{name: "a missing --teacher given names it without the default",
			args: []string{"--teacher", missing}, code: 1, want: "bankml: train: --teacher " + missing + ": no such file\n"},
		{name: "a missing --heldout is refused before the teacher is admitted",
			args: []string{"--teacher", teacher, "--heldout", missing}, code: 1, want: "bankml: train: --heldout " + missing + ": no such file\n"},
		{name: "a folder given as --heldout is refused naming it",
			args: []string{"--teacher", teacher, "--heldout", dir}, code: 1, want: "bankml: train: --heldout " + dir + ": is a folder, not a file"},
		{name: "a teacher that is no GGUF is 2 naming --teacher",
			args: []string{"--teacher", notGGUF, "--heldout", notGGUF}, code: 2, want: "bankml: train: --teacher: guard: refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(append(out, tc.args...)...)
			if code != tc.code || !strings.HasPrefix(stderr, tc.want) || strings.Contains(stderr, "admitted:") {
				t.Errorf("exit %d, stderr %q; want %d and a line starting %q, before any admission", code, stderr, tc.code, tc.want)
			}
		})
	}
}
