package serve

import (
	"encoding/json"
	"fmt"

	"github.com/bankml/bankml/sample"
)

// CheckModelfileParameters checks a Modelfile's PARAMETERs (Ollama option names, typed as api.FormatParams
// types them: package store) as an Ollama request's "options" are checked (parseOllamaOptions over
// llama-server's defaults): an option bankml refuses, or one of the wrong type or range, is an error naming
// it; the options bankml accepts but does not apply (num_gpu, num_thread, ...) are returned as "name (why)",
// so that `bankml create` can say so.
func CheckModelfileParameters(params map[string]any) (ignored []string, err error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	var opts map[string]any // as a request's options arrive: numbers float64, lists []any
	if err := json.Unmarshal(b, &opts); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	s, err := parseOllamaOptions(opts, sample.DefaultParams())
	if err != nil {
		return nil, err
	}
	return s.Ignored, nil
}
