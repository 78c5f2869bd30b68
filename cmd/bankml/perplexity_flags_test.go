package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPerplexityTakesLlamaPerplexitysFileFlag: the model and the text are given as llama-perplexity users give
// them, -m/--model FNAME and -f/--file FNAME, or as MODEL and FILE; every spelling scores the same text. No model,
// no text, two different files, or an empty name is a usage error naming the argument and the flag, never the
// current folder read as the file.
func TestPerplexityTakesLlamaPerplexitysFileFlag(t *testing.T) {
	model := storiesPath(t)
	text := filepath.Join("..", "..", "perplexity", "testdata", "heldout-stories.txt")
	other := filepath.Join(t.TempDir(), "other.txt")
	if err := os.WriteFile(other, []byte("Once upon a time.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-c", "64", "--chunks", "2", "-t", "1"}
	code, want, stderr := runCLI(append([]string{"perplexity", model, text}, flags...)...)
	if code != 0 {
		t.Fatalf("FILE: exit %d: %s", code, stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"-f FNAME names the text as llama-perplexity's -f does", []string{model, "-f", text}},
		{"--file=FNAME names it too", []string{model, "--file=" + text}},
		{"-f before MODEL is taken as well", []string{"-f", text, model}},
		{"FILE and -f naming the same file are one text", []string{model, text, "-f", text}},
		{"-m FNAME -f FNAME, llama-perplexity's own spelling, is taken", []string{"-m", model, "-f", text}},
		{"with -m the one argument is the text", []string{"-m", model, text}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append(append([]string{"perplexity"}, tc.args...), flags...)...)
			if code != 0 || stdout != want {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and FILE's %q", code, stdout, stderr, want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"two different texts are refused naming both", []string{model, text, "-f", other}, `bankml: perplexity: the text is given twice, as FILE "`},
		{"no text at all is refused naming FILE and -f", []string{model}, `bankml: perplexity: expected "<FILE>" or -f/--file FNAME: the text file to score`},
		{"an empty -f is refused naming the flag, not read as the current folder", []string{model, "-f", ""}, "bankml: perplexity: --file: the file name is empty"},
		{"an empty FILE is refused naming it, not read as the current folder", []string{model, ""}, "bankml: perplexity: [<FILE>]: the file name is empty"},
		{"no model is refused naming MODEL and -m", []string{"-f", text}, `bankml: perplexity: expected "<MODEL>" or -m/--model FNAME: the GGUF file to load`},
		{"an empty -m is refused naming the flag", []string{"-m", "", "-f", text}, "bankml: perplexity: --model: the file name is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"perplexity"}, tc.args...)...)
			if code != 1 || !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

// TestPerplexityRefusesAContextThatScoresNothing: llama-perplexity scores tokens n_ctx/2+1 .. n_ctx-1 of each
// chunk, none below -c 3 (it refuses only -c 0 and prints NaN estimates for 1 and 2); bankml refuses -c 1 and 2
// with the flag named and the bound, and -b past llama.cpp's 32-bit int.
func TestPerplexityRefusesAContextThatScoresNothing(t *testing.T) {
	model := storiesPath(t)
	text := filepath.Join("..", "..", "perplexity", "testdata", "heldout-stories.txt")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"-c 2 is refused with the least -c that scores a token", []string{"-c", "2"},
			"bankml: perplexity: -c/--ctx-size: value 2 out of range [3, 1073741824] (tokens per chunk: the second half of a chunk is scored, less its first token, so 3 is the least that scores one"},
		{"-c 1 is refused alike", []string{"-c", "1"}, "-c/--ctx-size: value 1 out of range [3, 1073741824]"},
		{"-b past a 32-bit int is refused naming the flag and the bound", []string{"-b", "99999999999"},
			"bankml: perplexity: -b/--batch-size: value 99999999999 out of range [1, 2147483647] (tokens per decode call)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"perplexity", model, text, "--chunks", "2"}, tc.args...)...)
			if code != 1 || !strings.Contains(stderr, tc.want) || stdout != "" || strings.Contains(stderr, "calculating perplexity") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and %q before the header", code, stdout, stderr, tc.want)
			}
		})
	}
	t.Run("-c 3 scores one token of each chunk", func(t *testing.T) {
		code, stdout, stderr := runCLI("perplexity", model, text, "-c", "3", "--chunks", "2", "-t", "1")
		if code != 0 || !strings.Contains(stderr, "2 tokens scored in 2 chunks") || !strings.Contains(stdout, "Final estimate: PPL = ") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 2 tokens scored and a final estimate", code, stdout, stderr)
		}
	})
}
