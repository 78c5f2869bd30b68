package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

// TestChatShowInfoQuantization: run --chat's /show info ends its Model table with Ollama's quantization row
// (cmd/cmd.go showInfo: architecture, parameters, context length, embedding length, quantization), the file's
// general.file_type by the name serve's /api/show gives it, "unknown" for a file without one.
func TestChatShowInfoQuantization(t *testing.T) {
	for _, c := range []struct {
		name  string
		model string
		want  string // the Model table, as standard error holds it
	}{
		{name: "a file without general.file_type shows its quantization as unknown", model: "stories260K.gguf",
			want: "  Model\n    architecture        llama\n    parameters          293K\n    context length      2048\n" +
				"    embedding length    64\n    quantization        unknown\n\n"},
		{name: "a Q8_0 file shows Q8_0 after the embedding length", model: "derived/stories260K-Q8_0.gguf",
			want: "    embedding length    64\n    quantization        Q8_0\n\n"},
		{name: "an F16 file shows F16", model: "derived/stories260K-F16.gguf",
			want: "    quantization        F16\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var o, e bytes.Buffer
			code := run([]string{"run", testdata.Model(t, c.model), "--chat", "-t", "1", "-n", "4"}, strings.NewReader("/show info\n"), &o, &e)
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, e.String())
			}
			if !strings.Contains(e.String(), c.want) {
				t.Errorf("stderr does not hold %q:\n%s", c.want, e.String())
			}
		})
	}
}
