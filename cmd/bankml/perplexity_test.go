package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPerplexityCommand: bankml perplexity prints llama-perplexity's running
// estimates and final line for the held-out text (the values are checked
// against the reference in package perplexity), and refuses a text shorter
// than two chunks, naming both sizes, and bad flags.
func TestPerplexityCommand(t *testing.T) {
	model := storiesPath(t)
	text := filepath.Join("..", "..", "perplexity", "testdata", "heldout-stories.txt")
	code, stdout, stderr := runCLI("perplexity", model, text, "-c", "64", "--chunks", "3", "-t", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !regexp.MustCompile(`^\[1\]\d+\.\d{4},\[2\]\d+\.\d{4},\[3\]\d+\.\d{4},\nFinal estimate: PPL = \d+\.\d{4} \+/- \d+\.\d{5}\n$`).MatchString(stdout) {
		t.Errorf("stdout %q", stdout)
	}
	if !strings.Contains(stderr, "calculating perplexity over 3 chunks, n_ctx=64, batch_size=64") {
		t.Errorf("stderr %q", stderr)
	}
	short := filepath.Join(t.TempDir(), "short.txt")
	if err := os.WriteFile(short, []byte("Once upon a time there was a cat.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"perplexity", model, short}, "you need at least 1024 tokens to evaluate perplexity with a context of 512"},
		{[]string{"perplexity", model, short, "-c", "1"}, "-c/--ctx-size: value 1 out of range [3, 1073741824]"},
		{[]string{"perplexity", model, filepath.Join(t.TempDir(), "absent.txt")}, "no such file"},
		{[]string{"perplexity", filepath.Join(t.TempDir(), "absent.gguf"), short}, "bankml: perplexity: guard: open "},
	} {
		if code, _, stderr := runCLI(tc.args...); code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args[2:], code, stderr, tc.want)
		}
	}
}

// TestPerplexityRefusesAnEncoderUpFrontAsRunDoes: an encoder (bert) gives embeddings, not logits: perplexity
// refuses it as soon as it is admitted, in run's words and with run's exit status (2), before the text is
// tokenized or a chunk evaluated.
func TestPerplexityRefusesAnEncoderUpFrontAsRunDoes(t *testing.T) {
	bert := filepath.Join(t.TempDir(), "b.gguf")
	if code, _, stderr := runCLI("synth", bert, "--arch", "bert", "--preset", "tiny", "--type", "f16", "--pooling", "mean"); code != 0 {
		t.Fatalf("synth: %s", stderr)
	}
	text := filepath.Join("..", "..", "perplexity", "testdata", "heldout-stories.txt")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"run refuses it", []string{"run", bert, "-p", "Once"}, "bankml: run: the bert model is an encoder: it gives embeddings, not text (use bankml embed)"},
		{"perplexity refuses it alike", []string{"perplexity", bert, text, "-c", "128"}, "bankml: perplexity: the bert model is an encoder: it gives embeddings, not text (use bankml embed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "calculating perplexity") || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and only %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

// TestPerplexityRefusesWhatLlamaPerplexityRefusesBeforeItsHeader: a text shorter than two chunks is refused
// before the "calculating perplexity over N chunks" line, as llama-perplexity checks it first; -c 0 is refused
// as llama-perplexity refuses it ("perplexity tool requires '--ctx-size' > 0"), saying it is not the training
// context here; llama-perplexity's scores bankml lacks (--ppl-stride, --kl-divergence, ...) are refused naming
// them as not implemented, as the other llama.cpp flags bankml lacks are (llamaflags.go), not "unknown flag".
func TestPerplexityRefusesWhatLlamaPerplexityRefusesBeforeItsHeader(t *testing.T) {
	model := storiesPath(t)
	held, err := os.ReadFile(filepath.Join("..", "..", "perplexity", "testdata", "heldout-stories.txt"))
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "short.txt") // 1023 tokens: one chunk of 600, two needed
	if err := os.WriteFile(short, held[:2000], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a text of one chunk is refused before the header", []string{short, "-c", "600"}, "perplexity: you need at least 1200 tokens to evaluate perplexity with a context of 600; the text tokenizes to only 1023"},
		{"-c 0 is refused as llama-perplexity refuses it", []string{short, "-c", "0"}, "perplexity: -c/--ctx-size: value 0 out of range [3, 1073741824] (tokens per chunk: the second half of a chunk is scored, less its first token, so 3 is the least that scores one; 0 is not the training context here: llama-perplexity requires --ctx-size > 0)"},
		{"--ppl-stride is not implemented", []string{short, "--ppl-stride", "256"}, "perplexity: --ppl-stride: not supported by bankml perplexity: the strided perplexity (llama-perplexity's perplexity_v2) is not implemented"},
		{"--ppl-output-type goes with it", []string{short, "--ppl-output-type=1"}, "perplexity: --ppl-output-type: not supported by bankml perplexity"},
		{"--kl-divergence is not implemented", []string{short, "--kl-divergence"}, "perplexity: --kl-divergence: not supported by bankml perplexity: the KL divergence against saved logits is not implemented"},
		{"--save-all-logits is not implemented", []string{short, "--save-all-logits", "l.bin"}, "perplexity: --save-all-logits: not supported by bankml perplexity"},
		{"--hellaswag is not implemented", []string{short, "--hellaswag"}, "perplexity: --hellaswag: not supported by bankml perplexity: the HellaSwag score is not implemented"},
		{"--winogrande-tasks is not implemented", []string{short, "--winogrande-tasks", "5"}, "perplexity: --winogrande-tasks: not supported by bankml perplexity: the Winogrande score is not implemented"},
		{"--multiple-choice is not implemented", []string{short, "--multiple-choice"}, "perplexity: --multiple-choice: not supported by bankml perplexity: the multiple-choice score is not implemented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"perplexity", model}, tc.args...)...)
			if code != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "calculating perplexity") || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1, %q and no header", code, stdout, stderr, tc.want)
			}
		})
	}
}
