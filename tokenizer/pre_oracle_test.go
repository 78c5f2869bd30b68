package tokenizer

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
)

// writePreVocab writes a metadata-only GGUF: the general and gpt2.* keys of ggml-vocab-gpt-2.gguf (so the reference
// loads it) with a synthetic byte-level BPE vocabulary of 4,096 tokens (internal/synth), plus "<think>" and
// "</think>" as user-defined tokens, under tokenizer.ggml.pre = pre. No BOS/EOS key is written, so llama.cpp's
// BPE defaults (11) and the pre-tokenizer's add_bos apply.
func writePreVocab(t *testing.T, dir, pre string) string {
	t.Helper()
	src, err := gguf.Open(filepath.Join(modelsDir(t), "vocab", "ggml-vocab-gpt-2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	v, err := synth.Synthetic(4096)
	if err != nil {
		t.Fatal(err)
	}
	tokens := append(slices.Clone(v.Tokens), "<think>", "</think>")
	types := append(slices.Clone(v.Types), synth.TokenUserDefined, synth.TokenUserDefined)
	var kvs []gguf.KV
	for _, kv := range src.KVs {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			kvs = append(kvs, kv)
		}
	}
	kvs = append(kvs,
		gguf.KV{Key: "tokenizer.ggml.model", Value: gguf.StringValue("gpt2")},
		gguf.KV{Key: "tokenizer.ggml.pre", Value: gguf.StringValue(pre)},
		gguf.KV{Key: "tokenizer.ggml.tokens", Value: gguf.ArrayValue(gguf.StringArray(tokens))},
		gguf.KV{Key: "tokenizer.ggml.token_type", Value: gguf.ArrayValue(gguf.Int32Array(types))},
		gguf.KV{Key: "tokenizer.ggml.merges", Value: gguf.ArrayValue(gguf.StringArray(v.Merges))},
	)
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, kvs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pre-"+strings.NewReplacer("/", "_", ".", "_").Replace(pre)+".gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEveryPreTokenizerMatchesReference loads, for every pre-tokenizer name bankml accepts (one per
// llama_vocab_pre_type, plus the aliases of the list), a synthetic vocabulary under that name in both
// bankml and the reference, and compares add_bos, the tokens of 150 fuzz strings (special text parsed and not,
// BOS/EOS added and not) and their detokenized text (clean_spaces depends on the name); an unknown name is
// refused by both.
func TestEveryPreTokenizerMatchesReference(t *testing.T) {
	lib := loadReference(t)
	dir := t.TempDir()
	texts := fuzzCorpus(150)
	var names []string
	seen := map[string]bool{}
	for _, p := range preNames {
		if !seen[p.kind] {
			seen[p.kind] = true
			names = append(names, p.names[0])
		}
	}
	names = append(names, "", "llama-bpe", "deepseek-r1-qwen", "megrez", "exaone4", "roberta-bpe")
	total, totalSame := 0, 0
	for _, pre := range names {
		path := writePreVocab(t, dir, pre)
		tok := loadAnyTokenizer(t, path)
		m := loadRefVocab(t, lib, path)
		addBOS, addEOS, err := m.AddBOSEOS()
		if err != nil {
			t.Fatal(err)
		}
		if tok.AddBOS() != addBOS || tok.AddEOS() != addEOS || tok.BOS() != mustSpecial(t, m.Special, "bos") {
			t.Errorf("pre %q: add_bos %v add_eos %v bos %d, reference %v %v %d", pre, tok.AddBOS(), tok.AddEOS(), tok.BOS(),
				addBOS, addEOS, mustSpecial(t, m.Special, "bos"))
		}
		n, same := 0, 0
		for _, text := range texts {
			for _, mode := range []struct{ add, parse bool }{{true, true}, {false, false}} {
				n++
				want, err := m.Tokenize(text, mode.add, mode.parse)
				if err != nil {
					t.Fatal(err)
				}
				got := tok.Tokenize(text, mode.add, mode.parse)
				if !slices.Equal(got, want) {
					if n-same <= 3 {
						t.Errorf("pre %q add=%v parse=%v %q:\n got %v\nwant %v", pre, mode.add, mode.parse, text, got, want)
					}
					continue
				}
				wantText, err := m.Detokenize(want, false, true)
				if err != nil {
					t.Fatal(err)
				}
				if gotText := tok.Detokenize(want, false, true); !bytes.Equal(gotText, wantText) {
					if n-same <= 3 {
						t.Errorf("pre %q detokenize %v:\n got %q\nwant %q", pre, want, gotText, wantText)
					}
					continue
				}
				same++
			}
		}
		t.Logf("pre %-26q (%s): tokenize+detokenize %d of %d identical", pre, tok.(*BPE).PreTokenizer(), same, n)
		total += n
		totalSame += same
	}
	t.Logf("all %d pre-tokenizer names: %d of %d identical", len(names), totalSame, total)

	path := writePreVocab(t, dir, "no-such-pre")
	if _, err := lib.LoadVocab(path); err == nil {
		t.Error("the reference loaded an unknown pre-tokenizer")
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := FromGGUF(f); err == nil || !strings.Contains(err.Error(), `unknown pre-tokenizer type "no-such-pre"`) {
		t.Errorf("FromGGUF with an unknown pre-tokenizer: %v", err)
	}
}

func mustSpecial(t *testing.T, f func(string) (int32, error), name string) int32 {
	t.Helper()
	id, err := f(name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
