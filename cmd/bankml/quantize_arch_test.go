package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/ternary"
)

// TestQuantizedArchitecturesAreServed: `bankml quantize --type tq2_0` and `--type ptqtp --planes 1` of each
// new architecture's F16 file (`bankml synth --arch …`) write files that bankml serve admits and answers from:
// each decoder's greedy continuation through the engine equals the reference's on the TQ2_0 file and on the
// PTQTP file's single-plane equivalent (ternary.Unplane; mainline cannot load planes), bert's embedding the
// reference's.
func TestQuantizedArchitecturesAreServed(t *testing.T) {
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	dir := t.TempDir()
	n, total := 0, 0
	for _, tc := range []struct{ arch, vocab string }{
		{"qwen2", ""}, {"gemma3", "llama-spm"}, {"phi3", "phi-3"}, {"bitnet", "gpt-2"}, {"bert", "bert-bge"},
	} {
		in := filepath.Join(dir, tc.arch+"-F16.gguf")
		args := []string{"synth", in, "--arch", tc.arch, "--preset", "tiny", "--type", "f16", "--seed", "5"}
		if tc.vocab != "" {
			args = append(args, "--vocab", testdata.Model(t, "vocab/ggml-vocab-"+tc.vocab+".gguf"))
		}
		if code, _, stderr := runCLI(args...); code != 0 {
			t.Fatalf("synth %s: %s", tc.arch, stderr)
		}
		for _, ty := range []string{"tq2_0", "ptqtp"} {
			t.Run(tc.arch+" "+ty, func(t *testing.T) {
				total++
				out := filepath.Join(dir, tc.arch+"-"+ty+".gguf")
				args := []string{"quantize", in, out, "--type", ty}
				if ty == "ptqtp" {
					args = append(args, "--planes", "1")
				}
				if code, _, stderr := runCLI(args...); code != 0 {
					t.Fatalf("quantize: %s", stderr)
				}
				refPath := out
				if ty == "ptqtp" {
					refPath = unplaned(t, out)
				}
				rm, err := lib.LoadModel(refPath)
				if err != nil {
					t.Fatal(err)
				}
				defer rm.Close()
				m, err := admit.Open(out, admit.Options{Pin: admit.AllowUnpinned, Chat: true})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				s, err := serve.New(m, serve.Options{NCtx: 512, Version: "test"})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				ts := httptest.NewServer(s.Handler())
				defer ts.Close()
				toks, err := rm.Tokenize("Once upon a time there was a little dog", true, true)
				if err != nil {
					t.Fatal(err)
				}
				var got []float32
				var gotToks []int32
				if tc.arch == "bert" {
					want, err := rm.Embed(toks, reference.PoolingUnspecified, 1)
					if err != nil {
						t.Fatal(err)
					}
					var items []struct {
						Embedding [][]float64 `json:"embedding"`
					}
					post(t, ts.URL+"/embedding", map[string]any{"content": toks, "embd_normalize": -1}, &items)
					for _, v := range items[0].Embedding[0] {
						got = append(got, float32(v))
					}
					if !slices.EqualFunc(got, want.Pooled, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
						t.Fatalf("the served embedding is not the reference's")
					}
					n++
					return
				}
				want, err := rm.Greedy(toks, 16, 1)
				if err != nil {
					t.Fatal(err)
				}
				var ans struct {
					Tokens []int32 `json:"tokens"`
				}
				post(t, ts.URL+"/completion", map[string]any{"prompt": toks, "n_predict": 16, "temperature": 0, "ignore_eos": true, "return_tokens": true}, &ans)
				gotToks = ans.Tokens
				if !slices.Equal(gotToks, want) {
					t.Fatalf("served continuation %v, reference %v", gotToks, want)
				}
				n++
			})
		}
	}
	t.Logf("%d of %d quantized files served with the reference's answers", n, total)
}

// post sends v as JSON to url and decodes the 200 answer into out.
func post(t *testing.T, url string, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %v %s", url, resp.StatusCode, err, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("%s: %v %s", url, err, body)
	}
}

// unplaned writes the single-plane equivalent of a PTQTP file (ternary.Unplane) beside it.
func unplaned(t *testing.T, path string) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := path + ".unplaned.gguf"
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := ternary.Unplane(f, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}
