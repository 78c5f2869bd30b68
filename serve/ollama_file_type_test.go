package serve

import (
	"path/filepath"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/testdata"
)

// TestFileTypeZeroIsUnknownAsOllamaReadsIt: a file whose general.file_type is 0 (llama.cpp's ALL_F32) and
// a file without the key both get Ollama's details.quantization_level "unknown" (its KV.FileType takes only
// values above 0), not "F32".
func TestFileTypeZeroIsUnknownAsOllamaReadsIt(t *testing.T) {
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	f32 := filepath.Join(t.TempDir(), "f32.gguf")
	if _, err := synth.WriteFile(f32, synth.Config{Arch: "llama", Shape: shape}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		path     string
		fileType int64 // -1: the key is absent
	}{
		{name: "a file whose general.file_type is 0 is unknown, not F32", path: f32, fileType: 0},
		{name: "a file without general.file_type is unknown", path: testdata.Model(t, "stories260K.gguf"), fileType: -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := gguf.Open(c.path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ft, ok := f.GetUint64("general.file_type")
			if c.fileType < 0 && ok || c.fileType >= 0 && (!ok || ft != uint64(c.fileType)) {
				t.Fatalf("the test file's general.file_type is %d (present %v); want %d", ft, ok, c.fileType)
			}
			if got := Details(f).QuantizationLevel; got != "unknown" {
				t.Errorf("Details(f).QuantizationLevel = %q, want %q", got, "unknown")
			}
			if got := QuantizationLevel(f); got != "unknown" {
				t.Errorf("QuantizationLevel = %q, want %q", got, "unknown")
			}
		})
	}
}
