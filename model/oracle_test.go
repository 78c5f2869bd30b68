package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/sample"
)

func modelsDir(t testing.TB) string { return testdata.ModelsDir(t) }

func refLib(t testing.TB) *reference.Lib { return reftest.Lib(t) }

// The six prompts of the oracle tests: plain English, punctuation, digits,
// leading spaces, a long-ish sentence and a single word.
var oraclePrompts = []string{
	"Once upon a time",
	"The little dog was sad because",
	"Lily and Tom went to the park. They saw a big tree!",
	"  One day, a boy named 7 found",
	"Mom said: \"Do not touch the hot stove.\" But Ben",
	"Sun",
}

var oracleFiles = []string{
	"stories260K.gguf",
	"derived/stories260K-F16.gguf",
	"derived/stories260K-Q8_0.gguf",
	"derived/stories260K-Q4_0.gguf",
}

func loadModel(t testing.TB, path string) *Model {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func greedy(t testing.TB, m *Model, prompt []int32, n int) []int32 {
	t.Helper()
	c := newCtx(t, m, len(prompt)+n, 1)
	logits, err := c.Decode(prompt)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, 0, n)
	for {
		best := sample.Greedy(logits)
		out = append(out, best)
		if len(out) == n {
			return out
		}
		if logits, err = c.Decode([]int32{best}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGreedyMatchesReference(t *testing.T) {
	dir := modelsDir(t)
	lib := refLib(t)
	for _, name := range oracleFiles {
		t.Run(filepath.Base(name), func(t *testing.T) {
			path := filepath.Join(dir, name)
			m := loadModel(t, path)
			rm, err := lib.LoadModel(path)
			if err != nil {
				t.Fatal(err)
			}
			defer rm.Close()
			for _, p := range oraclePrompts {
				toks, err := rm.Tokenize(p, true, false)
				if err != nil {
					t.Fatal(err)
				}
				want, err := rm.Greedy(toks, 64, 1)
				if err != nil {
					t.Fatal(err)
				}
				got := greedy(t, m, toks, 64)
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("%q: token %d: bankml %d, reference %d\n got %v\nwant %v", p, i, got[i], want[i], got, want)
						break
					}
				}
			}
		})
	}
}

func TestPromptLogitsBitExact(t *testing.T) {
	dir := modelsDir(t)
	lib := refLib(t)
	for _, name := range oracleFiles {
		t.Run(filepath.Base(name), func(t *testing.T) {
			path := filepath.Join(dir, name)
			m := loadModel(t, path)
			rm, err := lib.LoadModel(path)
			if err != nil {
				t.Fatal(err)
			}
			defer rm.Close()
			// The six prompts, then prompts that take the tiled attention
			// kernel (~100 tokens) and two micro-batches (~600 tokens).
			for _, p := range append(oraclePrompts[:len(oraclePrompts):len(oraclePrompts)], longText(8), longText(48)) {
				toks, err := rm.Tokenize(p, true, false)
				if err != nil {
					t.Fatal(err)
				}
				want, err := rm.PromptLogits(toks, 1)
				if err != nil {
					t.Fatal(err)
				}
				c := newCtx(t, m, len(toks), 1)
				got, err := c.Decode(toks)
				if err != nil {
					t.Fatal(err)
				}
				diff, maxd := 0, 0.0
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						diff++
						maxd = max(maxd, math.Abs(float64(got[i]-want[i])))
					}
				}
				if diff > 0 {
					t.Errorf("%.40q (%d tokens): %d of %d logits differ (max |Δ| %g)", p, len(toks), diff, len(want), maxd)
				}
				t.Logf("%d-token prompt: %d of %d logits bit-equal", len(toks), len(want)-diff, len(want))
			}
		})
	}
}

// longText builds a story prompt of roughly the given number of tokens.
func longText(sentences int) string {
	parts := []string{
		"Once upon a time there was a little girl named Lily.",
		"She liked to play with her red ball in the park.",
		"One day she met a big dog who wanted to play too.",
		"They ran and jumped until the sun went down.",
		"Mom called them home for dinner and they were happy.",
	}
	var b []byte
	for i := range sentences {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, parts[i%len(parts)]...)
	}
	return string(b)
}

// TestLongContextsMatchReference covers the attention kernels that short
// prompts never reach: the tiled kernel (micro-batches of 64+ rows), prompts
// split into two micro-batches of 512, and the split-KV decode kernel (KV
// cache past 256 cells in a context of 512 or more), at 1 thread and, for
// split-KV chunking, at 2.
func TestLongContextsMatchReference(t *testing.T) {
	dir := modelsDir(t)
	lib := refLib(t)
	cases := []struct {
		file      string
		sentences int
		n         int
		threads   int
	}{
		{"stories260K.gguf", 8, 32, 1},  // ~100-token prompt: tiled
		{"stories260K.gguf", 1, 300, 1}, // decode to ~310 cells: split-KV
		{"stories260K.gguf", 48, 8, 1},  // ~600 tokens: two micro-batches
		{"stories260K.gguf", 22, 6, 2},  // ~270-token prompt, decode past 256 on 2 threads
		{"derived/stories260K-Q4_0.gguf", 8, 200, 1},
		{"derived/stories260K-F16.gguf", 22, 16, 1},
	}
	for _, tc := range cases {
		path := filepath.Join(dir, tc.file)
		m := loadModel(t, path)
		rm, err := lib.LoadModel(path)
		if err != nil {
			t.Fatal(err)
		}
		toks, err := rm.Tokenize(longText(tc.sentences), true, false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := rm.Greedy(toks, tc.n, tc.threads)
		rm.Close()
		if err != nil {
			t.Fatal(err)
		}
		c := newCtx(t, m, len(toks)+tc.n, tc.threads)
		logits, err := c.Decode(toks)
		if err != nil {
			t.Fatal(err)
		}
		same := 0
		for i := range want {
			best := sample.Greedy(logits)
			if best != want[i] {
				t.Errorf("%s, %d-token prompt, %d threads: token %d: bankml %d, reference %d", tc.file, len(toks), tc.threads, i, best, want[i])
				break
			}
			same++
			if i+1 < len(want) {
				if logits, err = c.Decode([]int32{best}); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Logf("%s, %d-token prompt, %d threads: %d of %d tokens identical", tc.file, len(toks), tc.threads, same, len(want))
	}
}

func newCtx(t testing.TB, m *Model, nCtx, threads int) *Context {
	t.Helper()
	c, err := m.NewContext(nCtx, threads)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
