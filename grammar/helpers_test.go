package grammar

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/tokenizer"
)

// The oracle of this package is the reference's own grammar code: its
// grammar sampler (llama_sampler_init_grammar and _lazy_patterns in
// libllama), llama_grammar_parser::parse, json_schema_to_grammar and
// build_grammar in libllama-common, reached through a g++ shim
// (reference.GrammarShim) loaded beside the reference.

// shimFor loads the reference and the grammar shim, skipping the test (failing
// under CI) when they are not installed.
func shimFor(t testing.TB) (*reference.Lib, *reference.GrammarShim) {
	t.Helper()
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	g, err := lib.LoadGrammarShim(ctx)
	if err != nil {
		testdata.Absent(t, "grammar shim: %v", err)
	}
	return lib, g
}

// vocabModel is a vocabulary the oracles run on: the reference's (a vocab-only
// model) and bankml's tokenizer of the same file.
type vocabModel struct {
	name string
	ref  *reference.Model
	tok  tokenizer.Tokenizer
	v    *Vocab
}

var (
	vocabMu    sync.Mutex
	vocabCache = map[string]*vocabModel{}
)

// vocabs returns stories260K's vocabulary and the real Qwen3 one (a tiny
// synthetic qwen3 model, shared with the engine's tests through synthcache),
// loaded once per test binary.
func vocabs(t testing.TB, lib *reference.Lib) []*vocabModel {
	t.Helper()
	return []*vocabModel{vocabOf(t, lib, "stories260K", testdata.Model(t, "stories260K.gguf")), qwen3Vocab(t, lib)}
}

func qwen3Vocab(t testing.TB, lib *reference.Lib) *vocabModel {
	t.Helper()
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.Q1_0, Embd: gguf.Q1_0, Output: gguf.Q1_0,
		Vocab: synthcache.Qwen3Vocab(t), Seed: 1}
	return vocabOf(t, lib, "qwen3", synthcache.File(t, "qwen3-tiny-Q1_0", cfg))
}

func vocabOf(t testing.TB, lib *reference.Lib, name, path string) *vocabModel {
	t.Helper()
	vocabMu.Lock()
	defer vocabMu.Unlock()
	if vm, ok := vocabCache[name]; ok {
		return vm
	}
	ref, err := lib.LoadVocab(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	vm := &vocabModel{name: name, ref: ref, tok: tok, v: NewVocab(tok)}
	vocabCache[name] = vm
	return vm
}

// llamaGrammars reads the grammars of llama.cpp's grammars/ folder from the
// reference's source bundle.
func llamaGrammars(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"arithmetic", "c", "chess", "english", "japanese", "json", "json_arr", "list"} {
		out[name] = string(bundleFile(t, "grammars/"+name+".gbnf"))
	}
	return out
}

var (
	bundleOnce sync.Once
	bundleDir  string
	bundleErr  error
)

// bundleFile reads a file of the reference's source from a checkout of the
// node-llama-cpp bundle (made once per test binary in a temporary folder).
func bundleFile(t testing.TB, rel string) []byte {
	t.Helper()
	bundleOnce.Do(func() { bundleDir, bundleErr = reference.CheckoutBundle(context.Background(), "/grammars/", "/tests/") })
	if bundleErr != nil {
		testdata.Absent(t, "reference source bundle: %v", bundleErr)
	}
	b, err := os.ReadFile(filepath.Join(bundleDir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
