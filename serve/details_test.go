package serve

import (
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/testdata"
)

// TestQuantizationLevelNamesTheFileType: QuantizationLevel (/api/show's details.quantization_level and run
// --chat's /show info quantization row) names general.file_type as Ollama does, "unknown" when there is none.
func TestQuantizationLevelNamesTheFileType(t *testing.T) {
	for _, c := range []struct {
		name  string
		model string // "" for no file
		want  string
	}{
		{name: "no file is unknown", want: "unknown"},
		{name: "a file without general.file_type is unknown", model: "stories260K.gguf", want: "unknown"},
		{name: "file type 2 is Q4_0", model: "derived/stories260K-Q4_0.gguf", want: "Q4_0"},
		{name: "file type 1 is F16", model: "derived/stories260K-F16.gguf", want: "F16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f *gguf.File
			if c.model != "" {
				var err error
				if f, err = gguf.Open(testdata.Model(t, c.model)); err != nil {
					t.Fatal(err)
				}
				defer f.Close()
			}
			if got := QuantizationLevel(f); got != c.want {
				t.Errorf("QuantizationLevel = %q, want %q", got, c.want)
			}
			if c.model != "" {
				if got := (ollamaModel{File: f}).details().QuantizationLevel; got != c.want {
					t.Errorf("details().QuantizationLevel = %q, want %q", got, c.want)
				}
			}
		})
	}
}
