package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/internal/testdata"
)

// TestEmbedPrintsTheReferencesVectors: bankml embed writes a synthetic bert (bankml synth --vocab bge) and
// prints, for each pooling and normalisation, every text's vector exactly as the reference's
// llama_get_embeddings_seq normalized by libllama-common's common_embd_normalize.
func TestEmbedPrintsTheReferencesVectors(t *testing.T) {
	lib := reftest.Lib(t)
	path := filepath.Join(t.TempDir(), "bert.gguf")
	if code, _, stderr := runCLI("synth", path, "--arch", "bert", "--preset", "tiny", "--type", "q8_0",
		"--vocab", testdata.Model(t, "vocab/ggml-vocab-bert-bge.gguf")); code != 0 {
		t.Fatalf("synth: %s", stderr)
	}
	rm, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	texts := []string{"hello world", "the quick brown fox jumps over the lazy dog", "a"}
	n := 0
	for _, tc := range []struct {
		pooling string
		ref     int
		norm    int
	}{{"", reference.PoolingMean, 2}, {"cls", reference.PoolingCLS, 2}, {"last", reference.PoolingLast, -1}, {"mean", reference.PoolingMean, 0}} {
		args := []string{"embed", path, "-p", strings.Join(texts, "\n"), "--embd-output-format", "array", "--embd-normalize", string(rune('0' + max(tc.norm, 0)))}
		if tc.norm < 0 {
			args[len(args)-1] = "-1"
		}
		if tc.pooling != "" {
			args = append(args, "--pooling", tc.pooling)
		}
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Fatalf("%v: %d %s", args, code, stderr)
		}
		var got [][]float64
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got) != len(texts) {
			t.Fatalf("%v: %v %q", args, err, stdout)
		}
		for i, text := range texts {
			toks, err := rm.Tokenize(text, true, true)
			if err != nil {
				t.Fatal(err)
			}
			e, err := rm.Embed(toks, tc.ref, 1)
			if err != nil {
				t.Fatal(err)
			}
			want, err := lib.EmbdNormalize(e.Pooled, tc.norm)
			if err != nil {
				t.Fatal(err)
			}
			ok := len(got[i]) == len(want)
			for k := 0; ok && k < len(want); k++ {
				ok = math.Float32bits(float32(got[i][k])) == math.Float32bits(want[k])
			}
			if !ok {
				t.Errorf("pooling %q norm %d text %d: not the reference's vector", tc.pooling, tc.norm, i)
				continue
			}
			n++
		}
	}
	t.Logf("%d of %d printed vectors bit-equal to the reference's", n, 4*len(texts))
}

// TestEmbedTakesLlamaEmbeddingsBatchAndFileFlags: embed takes llama-embedding's -b/--batch-size (the most tokens
// one text may have, 2048 by default, raised to -c; each text one micro-batch), its -ub/--ubatch-size (which
// llama-embedding overrides with -b: taken with a warning) and -f/--file FNAME (the texts from a file, one
// trailing newline dropped, the last of -p and -f counting); a text past -b is refused in llama-embedding's
// words naming -b, one past the context naming -c.
func TestEmbedTakesLlamaEmbeddingsBatchAndFileFlags(t *testing.T) {
	model := storiesPath(t)
	dir := t.TempDir()
	long := strings.TrimSuffix(strings.Repeat("once upon a time there was a little girl ", 45), " ") // 541 tokens with BOS
	longFile := filepath.Join(dir, "long.txt")
	if err := os.WriteFile(longFile, []byte(long+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, want, stderr := runCLI("embed", model, "-p", long, "--pooling", "mean", "--embd-output-format", "array")
	if code != 0 {
		t.Fatalf("a text of 541 tokens with the default -b 2048: exit %d, %s", code, stderr)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string // in standard error
		same   bool   // standard output is the -p text's
	}{
		{"-b 2048 -ub 2048 take the text, -ub with a warning", []string{"-p", long, "-b", "2048", "-ub", "2048"}, 0, "-ub 2048 ignored: llama-embedding sets the physical batch of embeddings to -b's", true},
		{"--ubatch-size is -ub", []string{"-p", long, "--ubatch-size", "64"}, 0, "-ub 64 ignored", true},
		{"-f reads the text from a file", []string{"-f", longFile}, 0, "", true},
		{"--file is -f, and the last of -p and -f counts", []string{"-p", "hi", "--file", longFile}, 0, "", true},
		{"-b below the text refuses it naming -b", []string{"-p", long, "-b", "512"}, 1,
			"embed: text 0: number of tokens in input line (541) exceeds batch size (512), increase batch size (-b/--batch-size) and re-run", false},
		{"-c above -b raises the batch to it", []string{"-p", long, "-b", "512", "-c", "1024"}, 0, "setting batch size to 1024", true},
		{"past the context refused naming -c", []string{"-p", long, "-c", "256"}, 1, "text 0: 541 tokens do not fit the context of 256 tokens (-c/--ctx-size", false},
		{"-b 0 is out of range", []string{"-p", "hi", "-b", "0"}, 1, "embed: -b/--batch-size: value 0 out of range [1, 2147483647]", false},
		{"-f of a missing file", []string{"-f", filepath.Join(dir, "missing.txt")}, 1, "embed: -f: failed to read the prompt file", false},
		{"an empty --embd-separator is refused naming it, where llama-embedding's split never ends", []string{"-p", "hi", "--embd-separator", ""}, 1,
			`bankml: embed: --embd-separator "" is empty: the prompt is split into texts on it; give a non-empty separator (the default is a newline)`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"embed", model, "--pooling", "mean", "--embd-output-format", "array"}, tc.args...)
			code, stdout, stderr := runCLI(args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, %s; want exit %d with %q", code, stderr, tc.code, tc.stderr)
			}
			if tc.same && stdout != want {
				t.Fatalf("the vectors differ from the -p text's alone")
			}
		})
	}
}
