package engine

import (
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/tokenizer"
)

// testModel is one model loaded by bankml (model, tokenizer) and, for the
// oracle tests, by the reference.
type testModel struct {
	name     string
	path     string
	m        *model.Model
	tok      tokenizer.Tokenizer
	suppress []int32
	ref      *reference.Model
}

func loadBankml(t testing.TB, name, path string) *testModel {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	sup, err := sample.SuppressTokens(f, m.HP.NVocab)
	if err != nil {
		t.Fatal(err)
	}
	return &testModel{name: name, path: path, m: m, tok: tok, suppress: sup}
}

func refLib(t testing.TB) *reference.Lib { return reftest.Lib(t) }

// withRef loads the reference's copy of tm.
func (tm *testModel) withRef(t testing.TB) *testModel {
	t.Helper()
	rm, err := refLib(t).LoadModel(tm.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	tm.ref = rm
	return tm
}

func stories(t testing.TB) *testModel {
	return loadBankml(t, "stories260K", testdata.Model(t, "stories260K.gguf"))
}

func newEngine(t testing.TB, tm *testModel, o Options) *Engine {
	t.Helper()
	o.SuppressTokens = tm.suppress
	e, err := New(tm.m, tm.tok, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// greedyParams are sampling parameters whose chain keeps only the most likely
// token (temperature 0).
func greedyParams() sample.Params {
	p := sample.DefaultParams()
	p.Temp = 0
	p.Seed = 1
	return p
}

// qwen3 is a tiny synthetic qwen3 model (Q1_0 weights, untied output) with
// the real Qwen3 vocabulary, kept between runs by internal/synthcache.
func qwen3(t testing.TB) *testModel {
	t.Helper()
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.Q1_0, Embd: gguf.Q1_0, Output: gguf.Q1_0, Vocab: synthcache.Qwen3Vocab(t), Seed: 1}
	return loadBankml(t, "qwen3-tiny-Q1_0", synthcache.File(t, "qwen3-tiny-Q1_0", cfg))
}
