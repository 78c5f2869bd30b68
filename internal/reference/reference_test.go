package reference

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

// loadOrSkip returns the reference, skipping the test when it is not
// installed.
func loadOrSkip(t *testing.T) *Lib {
	t.Helper()
	l, err := Load()
	if errors.Is(err, ErrNotInstalled) {
		testdata.Absent(t, "skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// sharedModel returns the path of a test model in ../shared/models,
// skipping when it is absent (failing under CI).
func sharedModel(t *testing.T, name string) string { return testdata.Model(t, name) }

func loadModel(t *testing.T, name string) *Model {
	t.Helper()
	l := loadOrSkip(t)
	m, err := l.LoadModel(sharedModel(t, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func TestDirEnv(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	if _, err := Dir(); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Dir() with an empty %s: err = %v, want ErrNotInstalled", EnvDir, err)
	}
}

func TestLoadIsHaswell(t *testing.T) {
	l := loadOrSkip(t)
	if got := filepath.Base(l.CPUBackend()); got != libCPUHaswell {
		t.Errorf("CPU backend %s, want %s", got, libCPUHaswell)
	}
	if _, err := l.verifyCPUBackend(); err != nil {
		t.Error(err)
	}
	feats := strings.Join(l.CPUFeatures(), " ")
	for _, f := range []string{"AVX2=1", "FMA=1", "F16C=1"} {
		if !strings.Contains(feats, f) {
			t.Errorf("features %q lack %s", feats, f)
		}
	}
	if strings.Contains(feats, "AVX512") {
		t.Errorf("features %q include AVX512", feats)
	}
	l2, err := Load()
	if err != nil || l2 != l {
		t.Errorf("second Load() = %p, %v; want the same Lib %p", l2, err, l)
	}
	t.Logf("dir %s\nfeatures %s\nsystem info %s", l.Dir(), feats, l.SystemInfo())
}

func TestTokenize(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	if m.NVocab() != 512 {
		t.Errorf("NVocab() = %d, want 512", m.NVocab())
	}
	toks, err := m.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) < 2 || toks[0] != 1 {
		t.Fatalf("Tokenize = %v, want BOS (1) first", toks)
	}
	var text []byte
	for _, tok := range toks {
		p, err := m.TokenToPiece(tok, false)
		if err != nil {
			t.Fatal(err)
		}
		text = append(text, p...)
	}
	// SentencePiece adds a leading space to the text; BOS renders as nothing.
	if string(text) != " Once upon a time" {
		t.Errorf("pieces of %v = %q", toks, text)
	}
	bos, err := m.TokenToPiece(1, true)
	if err != nil || string(bos) != "<s>" {
		t.Errorf("TokenToPiece(1, special) = %q, %v; want <s>", bos, err)
	}
	empty, err := m.Tokenize("", true, false)
	if err != nil || !slices.Equal(empty, []int32{1}) {
		t.Errorf("Tokenize(\"\", addSpecial) = %v, %v; want [1]", empty, err)
	}
	if _, err := m.TokenToPiece(512, false); err == nil {
		t.Error("TokenToPiece(512) did not fail")
	}
}

// TestStoriesGreedy checks the harness against the recorded reference answer
// in ../shared/models/MANIFEST.md §1.
func TestStoriesGreedy(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	prompt, err := m.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	out, tm, err := m.GreedyTimed(prompt, 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 32 || tm.Tokens != 31 {
		t.Fatalf("got %d tokens (%d timed decodes), want 32 (31)", len(out), tm.Tokens)
	}
	var text []byte
	for _, tok := range out {
		p, err := m.TokenToPiece(tok, false)
		if err != nil {
			t.Fatal(err)
		}
		text = append(text, p...)
	}
	const want = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw"
	if !bytes.HasPrefix(text, []byte(want)) {
		t.Errorf("greedy text %q\nwant prefix %q", text, want)
	}
	t.Logf("prompt %v\nout %v\ntext %q\n%.0f tok/s", prompt, out, text, tm.TokensPerSecond())

	again, err := m.Greedy(prompt, 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again, out) {
		t.Errorf("second run %v != first %v", again, out)
	}

	// The first generated token is the argmax of the prompt's last logits,
	// and the logits are reproducible bit for bit.
	logits, err := m.PromptLogits(prompt, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(logits) != m.NVocab() {
		t.Fatalf("len(logits) = %d, want %d", len(logits), m.NVocab())
	}
	if a := argmax(logits); a != out[0] {
		t.Errorf("argmax(PromptLogits) = %d, Greedy's first token %d", a, out[0])
	}
	logits2, err := m.PromptLogits(prompt, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range logits {
		if math.Float32bits(logits[i]) != math.Float32bits(logits2[i]) {
			t.Fatalf("logit %d differs between runs: %08x vs %08x", i, math.Float32bits(logits[i]), math.Float32bits(logits2[i]))
		}
	}
}

// TestDerivedGreedy checks the F16 and Q8_0 derivatives, which MANIFEST.md §3
// says match the F32 model's greedy output.
func TestDerivedGreedy(t *testing.T) {
	ref := loadModel(t, "stories260K.gguf")
	prompt, err := ref.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Greedy(prompt, 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"derived/stories260K-F16.gguf", "derived/stories260K-Q8_0.gguf"} {
		m := loadModel(t, name)
		got, err := m.Greedy(prompt, 32, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: greedy %v, want %v", name, got, want)
		}
	}
}

func TestErrors(t *testing.T) {
	l := loadOrSkip(t)
	if _, err := l.LoadModel(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("LoadModel of a missing file did not fail")
	}
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(bad, []byte("not a gguf file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.LoadModel(bad); err == nil {
		t.Error("LoadModel of a non-GGUF file did not fail")
	} else {
		t.Logf("expected error: %v", err)
	}

	m := loadModel(t, "stories260K.gguf")
	if _, err := m.Greedy(nil, 4, 1); err == nil {
		t.Error("Greedy with an empty prompt did not fail")
	}
	if _, err := m.Greedy([]int32{1, 9999}, 4, 1); err == nil {
		t.Error("Greedy with an out-of-range token did not fail")
	}
	if _, err := m.PromptLogits([]int32{1}, 0); err == nil {
		t.Error("PromptLogits with 0 threads did not fail")
	}
	m.Close()
	m.Close()
	if _, err := m.Tokenize("x", false, false); err == nil {
		t.Error("Tokenize after Close did not fail")
	}
}
