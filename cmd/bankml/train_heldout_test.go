package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainReusesDataOnlyForTheHeldOutTextItWasFilteredAgainst: a run whose data file exists reuses it only when
// it was filtered against the same --heldout text (its sha256 in DATA.json); against another text the stories
// are drawn again and filtered against that one, never reused unchecked (the data could hold the new held-out
// text's stories).
func TestTrainReusesDataOnlyForTheHeldOutTextItWasFilteredAgainst(t *testing.T) {
	teacher := storiesPath(t)
	dir := t.TempDir()
	first, other := filepath.Join(dir, "heldout-a.txt"), filepath.Join(dir, "heldout-b.txt")
	if err := os.WriteFile(first, []byte("Once upon a time there was a little girl named Lily. She loved to play outside in the park."), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("One day, a big dog came to the park. The dog was very happy and wanted to play with the ball."), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data.tok")
	trainRun := func(heldout string) string {
		t.Helper()
		out := t.TempDir() // a fresh run each time (no checkpoint to resume), one data file for all
		code, _, stderr := runCLI("train", "--teacher", teacher, "--heldout", heldout, "--out", out, "--data", data,
			"--stories", "4", "--story-tokens", "24", "--steps", "1", "--batch", "1", "--seq", "16", "--warmup", "0",
			"--checkpoint-every", "0", "--mode", "float", "--n-embd", "16", "--n-head", "2", "--n-head-kv", "1",
			"--n-ff", "32", "--export", "f32", "-t", "1")
		if code != 0 {
			t.Fatalf("train --heldout %s: exit %d\n%s", heldout, code, stderr)
		}
		return stderr
	}
	trainRun(first) // draws data.tok against the first text
	for _, tc := range []struct {
		name    string
		heldout string
		want    string
		notWant string
	}{
		{name: "the same held-out text reuses the data", heldout: first,
			want: "train: reusing " + data, notWant: "sample:"},
		{name: "another held-out text draws the data again, filtered against it", heldout: other,
			want: "train: drawing " + data + " again: it was filtered against another held-out text than " + other, notWant: "train: reusing"},
		{name: "the data drawn against the other text is then reused for it", heldout: other,
			want: "train: reusing " + data, notWant: "sample:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr := trainRun(tc.heldout)
			if !strings.Contains(stderr, tc.want) || strings.Contains(stderr, tc.notWant) {
				t.Errorf("stderr\n%s\nwant %q and no %q", stderr, tc.want, tc.notWant)
			}
		})
	}
}
