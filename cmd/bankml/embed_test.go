package main

import (
	"encoding/json"
	"math"
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
