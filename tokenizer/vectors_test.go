package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLlamaCppVocabVectorsAreReproduced runs llama.cpp's own tokenizer test vectors
// (tests/test-tokenizer-0: add_special=false, parse_special=false) for the SentencePiece
// vocabularies kept in ../shared/models/vocab.
func TestLlamaCppVocabVectorsAreReproduced(t *testing.T) {
	for _, name := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf"} {
		t.Run(name, func(t *testing.T) {
			path := modelFile(t, filepath.Join("vocab", name))
			inp, err := os.ReadFile(path + ".inp")
			if err != nil {
				t.Skipf("test data: %v", err)
			}
			outb, err := os.ReadFile(path + ".out")
			if err != nil {
				t.Skipf("test data: %v", err)
			}
			texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
			// The file ends with the separator line: drop the empty tail it leaves.
			if last := texts[len(texts)-1]; last == "" || last == "\n" {
				texts = texts[:len(texts)-1]
			}
			lines := strings.Split(strings.TrimSuffix(string(outb), "\n"), "\n")
			if len(texts) != len(lines) {
				t.Fatalf("%d inputs but %d outputs", len(texts), len(lines))
			}
			tok := loadGGUFTokenizer(t, path)
			same := 0
			for i, text := range texts {
				var want []int32
				for _, f := range strings.Fields(lines[i]) {
					id, err := strconv.ParseInt(f, 10, 32)
					if err != nil {
						t.Fatalf("case %d: bad id %q", i, f)
					}
					want = append(want, int32(id))
				}
				got := tok.Tokenize(text, false, false)
				if !slices.Equal(got, want) {
					t.Errorf("case %d %q:\n got %v\nwant %v", i, text, got, want)
					continue
				}
				same++
			}
			t.Logf("%s: %d of %d cases identical", name, same, len(texts))
		})
	}
}

// TestDetokenizeInvertsTokenizeOnVectors checks that the pieces of every vector give its
// text back: without BOS, llama_detokenize drops the space Tokenize put in front.
func TestDetokenizeInvertsTokenizeOnVectors(t *testing.T) {
	path := modelFile(t, filepath.Join("vocab", "ggml-vocab-llama-spm.gguf"))
	inp, err := os.ReadFile(path + ".inp")
	if err != nil {
		t.Skipf("test data: %v", err)
	}
	tok := loadGGUFTokenizer(t, path)
	for i, text := range strings.Split(string(inp), "\n__ggml_vocab_test__\n") {
		ids := tok.Tokenize(text, false, false)
		got := string(tok.Detokenize(ids, false, false))
		if got != text {
			t.Errorf("case %d: detokenize(tokenize(%q)) = %q", i, text, got)
		}
	}
}
