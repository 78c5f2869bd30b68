package tokenizer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// modelsDir returns ../shared/models relative to the repository root (the folder holding
// go.mod, found by walking up from the test's working directory), or skips the test.
func modelsDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("test data: no go.mod above the working directory")
		}
		dir = parent
	}
	models := filepath.Join(dir, "..", "shared", "models")
	if _, err := os.Stat(models); err != nil {
		t.Skipf("test data: %s is absent (%v)", models, err)
	}
	return models
}

// modelFile returns the path of a file under the models folder, or skips the test.
func modelFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(modelsDir(t), rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("test data: %s is absent (%v)", p, err)
	}
	return p
}

// loadGGUFTokenizer opens a GGUF file and builds its tokenizer.
func loadGGUFTokenizer(t testing.TB, path string) *SPM {
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
	spm, ok := tok.(*SPM)
	if !ok {
		t.Fatalf("tokenizer of %s is %T, want *SPM", path, tok)
	}
	return spm
}
