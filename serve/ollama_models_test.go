package serve

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// TestGGUFJSONWritesEveryValue: /api/show's model_info is always valid JSON:
// f32 values print as float32 (as Ollama prints them), non-finite floats
// become strings, integers keep their width, arrays appear only in verbose.
func TestGGUFJSONWritesEveryValue(t *testing.T) {
	arr := gguf.ArrayValue(gguf.StringArray([]string{"a", "b"}))
	for _, c := range []struct {
		v       gguf.Value
		verbose bool
		want    string
	}{
		{gguf.Float32Value(1e-6), false, `0.000001`},
		{gguf.Float32Value(float32(math.NaN())), false, `"NaN"`},
		{gguf.Float64Value(math.Inf(1)), false, `"+Inf"`},
		{gguf.Float32Value(float32(math.Inf(-1))), false, `"-Inf"`},
		{gguf.Float64Value(0.1), false, `0.1`},
		{gguf.Uint32Value(4294967295), false, `4294967295`},
		{gguf.Int64Value(-9007199254740993), false, `-9007199254740993`},
		{gguf.BoolValue(true), false, `true`},
		{gguf.StringValue("llama"), false, `"llama"`},
		{arr, false, `null`},
		{arr, true, `["a","b"]`},
	} {
		b, err := json.Marshal(ggufJSON(c.v, c.verbose))
		if err != nil || string(b) != c.want {
			t.Errorf("%v (verbose %v): %s, %v; want %s", c.v.Type, c.verbose, b, err, c.want)
		}
	}
}
