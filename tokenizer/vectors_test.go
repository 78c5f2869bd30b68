package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bankml/bankml/internal/testdata"
)

// vocabGGUFs returns the vocabulary GGUF files kept in ../shared/models/vocab, sorted.
func vocabGGUFs(t testing.TB) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(modelsDir(t), "vocab", "*.gguf"))
	if err != nil || len(names) == 0 {
		testdata.Absent(t, "no vocabulary GGUF files in %s/vocab (%v)", modelsDir(t), err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	return names
}

// readVectors reads llama.cpp's test vectors for a vocabulary as tests/test-tokenizer-0
// reads them: the .inp file split at "\n__ggml_vocab_test__\n" (the piece after the last
// separator is kept, as test-tokenizer-0 keeps it, and only dropped when empty), the .out
// file one line of space-separated ids per case.
func readVectors(t testing.TB, path string) (texts []string, ids [][]int32) {
	t.Helper()
	inp, err := os.ReadFile(path + ".inp")
	if err != nil {
		testdata.Absent(t, "test data: %v", err)
	}
	outb, err := os.ReadFile(path + ".out")
	if err != nil {
		testdata.Absent(t, "test data: %v", err)
	}
	texts = strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(outb), "\n"), "\n")
	if len(texts) != len(lines) {
		t.Fatalf("%s: %d inputs but %d outputs", path, len(texts), len(lines))
	}
	for i, line := range lines {
		var want []int32
		for _, f := range strings.Fields(line) {
			id, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s case %d: bad id %q", path, i, f)
			}
			want = append(want, int32(id))
		}
		ids = append(ids, want)
	}
	return texts, ids
}

// TestLlamaCppVocabVectorsAreReproduced runs llama.cpp's own tokenizer test vectors
// (tests/test-tokenizer-0: add_special=false, parse_special=false) for every vocabulary GGUF
// kept in ../shared/models/vocab.
func TestLlamaCppVocabVectorsAreReproduced(t *testing.T) {
	total, totalSame := 0, 0
	for _, name := range vocabGGUFs(t) {
		t.Run(name, func(t *testing.T) {
			path := modelFile(t, filepath.Join("vocab", name))
			texts, wants := readVectors(t, path)
			tok := loadAnyTokenizer(t, path)
			same := 0
			for i, text := range texts {
				want := wants[i]
				got := tok.Tokenize(text, false, false)
				if !slices.Equal(got, want) {
					t.Errorf("case %d %q:\n got %v\nwant %v", i, text, got, want)
					continue
				}
				same++
			}
			t.Logf("%s: %d of %d cases identical", name, same, len(texts))
			total += len(texts)
			totalSame += same
		})
	}
	t.Logf("all vocabularies: %d of %d cases identical", totalSame, total)
}

// TestDetokenizeInvertsTokenizeOnVectors checks that the pieces of every vector give its
// text back: without BOS, llama_detokenize drops the space Tokenize put in front.
func TestDetokenizeInvertsTokenizeOnVectors(t *testing.T) {
	path := modelFile(t, filepath.Join("vocab", "ggml-vocab-llama-spm.gguf"))
	inp, err := os.ReadFile(path + ".inp")
	if err != nil {
		testdata.Absent(t, "test data: %v", err)
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

// FuzzTokenizeRoundTrip checks, on the Llama-2 vocabulary (every byte has a token and no
// token is user-defined), that Tokenize never panics whatever the flags, and that valid
// UTF-8 survives Tokenize then Detokenize. Two inputs are exempt from the round trip, as
// in the reference: a literal U+2581 reads back as a space (it is how SentencePiece
// escapes spaces), and in invalid UTF-8 a stray lead byte swallows the bytes after it
// into one symbol (unicode_len_utf8), so an escaped space there comes back as raw U+2581.
func FuzzTokenizeRoundTrip(f *testing.F) {
	path := modelFile(f, filepath.Join("vocab", "ggml-vocab-llama-spm.gguf"))
	tok := loadGGUFTokenizer(f, path)
	for _, s := range oracleTexts(50) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ids := tok.Tokenize(text, false, false)
		tok.Tokenize(text, true, true)
		if !utf8.ValidString(text) || strings.Contains(text, "\u2581") {
			return
		}
		if got := string(tok.Detokenize(ids, false, false)); got != text {
			t.Fatalf("round trip of %q gave %q (ids %v)", text, got, ids)
		}
	})
}

// BenchmarkTokenize measures Tokenize on about 4 KiB of mixed text with the 32k-token
// Llama-2 vocabulary.
func BenchmarkTokenize(b *testing.B) {
	tok := loadGGUFTokenizer(b, modelFile(b, filepath.Join("vocab", "ggml-vocab-llama-spm.gguf")))
	var sb strings.Builder
	for _, s := range oracleTexts(100) {
		sb.WriteString(s)
		sb.WriteByte(' ')
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Tokenize(text, true, false)
	}
}
