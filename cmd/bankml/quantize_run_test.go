package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/ternary"
)

// TestQuantizedF16RunsAsTheReference: `bankml quantize --type tq2_0` (and
// q2_0, tq1_0) of a tiny synthetic qwen3 F16 model (stories260K's vocabulary,
// which bankml tokenizes) writes a file that the reference loads and whose
// greedy continuation `bankml run` prints byte for byte as the reference
// computes it. A K=1 PTQTP file (`--type ptqtp --planes 1`) is admitted by
// `bankml run` for engine bankml, saying that mainline would refuse it, and
// prints the continuation the reference computes on its single-plane
// equivalent (ternary.Unplane).
func TestQuantizedF16RunsAsTheReference(t *testing.T) {
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	vocab, extra := storiesVocab(t)
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "qwen3-F16.gguf")
	cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.F16, Embd: gguf.F16, Output: gguf.F16, Vocab: vocab, Seed: 21, Metadata: extra}
	if _, err := synth.WriteFile(in, cfg); err != nil {
		t.Fatal(err)
	}
	prompts := []string{"Once upon a time", "Lily and Tom went to the park."}
	const n = 24
	for _, ty := range []string{"tq2_0", "q2_0", "tq1_0", "ptqtp"} {
		t.Run(ty, func(t *testing.T) {
			out := filepath.Join(dir, ty+".gguf")
			args := []string{"quantize", in, out, "--type", ty}
			if ty == "ptqtp" {
				args = append(args, "--planes", "1")
			}
			if code, _, stderr := runCLI(args...); code != 0 {
				t.Fatalf("quantize: %s", stderr)
			}
			refPath := out
			if ty == "ptqtp" {
				f, err := gguf.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				w, err := os.Create(filepath.Join(dir, "unplaned.gguf"))
				if err != nil {
					t.Fatal(err)
				}
				if err := ternary.Unplane(f, w); err != nil {
					t.Fatal(err)
				}
				f.Close()
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				refPath = w.Name()
			}
			rm, err := lib.LoadModel(refPath)
			if err != nil {
				t.Fatal(err)
			}
			defer rm.Close()
			for _, prompt := range prompts {
				want := string(append(refContinuation(t, rm, prompt, n), '\n'))
				code, got, stderr := runCLI("run", out, "-p", prompt, "-n", "24", "-t", "2", "--no-display-prompt")
				if code != 0 {
					t.Fatalf("run %q: exit %d: %s", prompt, code, stderr)
				}
				if len(want) < 2 {
					t.Fatalf("%q: the reference's continuation is empty", prompt)
				}
				if got != want {
					t.Errorf("%q:\n got %q\nwant %q", prompt, got, want)
				}
				if ty == "ptqtp" && (!strings.Contains(stderr, "mainline llama.cpp would refuse this file") || !strings.Contains(stderr, "guard play (bankml)")) {
					t.Errorf("run of a PTQTP file: stderr %q lacks the engine note", stderr)
				}
				for _, line := range strings.Split(stderr, "\n") { // issue 20: the note was one 500-character line
					if strings.HasPrefix(line, "note:") && len(line) > 160 {
						t.Errorf("a note of %d characters: %q", len(line), line)
					}
				}
			}
			if !t.Failed() {
				t.Logf("%s: %d of %d continuations (%d tokens) equal the reference's, e.g. %q", ty, len(prompts), len(prompts), n, refContinuation(t, rm, prompts[0], n))
			}
		})
	}
}
