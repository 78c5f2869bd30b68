package tokenizer

import (
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/testdata"
)

// modelsDir returns the shared models folder, or skips the test.
func modelsDir(t testing.TB) string { return testdata.ModelsDir(t) }

// modelFile returns the path of a file under the models folder, or skips the test.
func modelFile(t testing.TB, rel string) string { return testdata.Model(t, rel) }

// loadGGUFTokenizer opens a GGUF file and builds its tokenizer, which must be an SPM.
func loadGGUFTokenizer(t testing.TB, path string) *SPM {
	t.Helper()
	tok := loadAnyTokenizer(t, path)
	spm, ok := tok.(*SPM)
	if !ok {
		t.Fatalf("tokenizer of %s is %T, want *SPM", path, tok)
	}
	return spm
}

// loadAnyTokenizer opens a GGUF file and builds its tokenizer.
func loadAnyTokenizer(t testing.TB, path string) Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatalf("tokenizer of %s: %v", path, err)
	}
	return tok
}
