package sample

import (
	"fmt"

	"github.com/bankml/bankml/gguf"
)

// KeySuppressTokens is the GGUF key of the tokens a model never emits.
const KeySuppressTokens = "tokenizer.ggml.suppress_tokens"

// SuppressTokens reads a model's tokenizer.ggml.suppress_tokens as llama.cpp's
// vocabulary loader does: absent gives none; an array of int32 gives its ids
// in [0, nVocab) in order (out-of-range ids dropped); any other type is an
// error (llama.cpp refuses the model: "invalid gguf type for ...").
func SuppressTokens(f *gguf.File, nVocab int) ([]int32, error) {
	if _, ok := f.Get(KeySuppressTokens); !ok {
		return nil, nil
	}
	a, ok := f.GetArray(KeySuppressTokens)
	if !ok || a.ElemType != gguf.Int32 {
		return nil, fmt.Errorf("sample: invalid gguf type for %s", KeySuppressTokens)
	}
	ids, err := a.Int32s()
	if err != nil {
		return nil, fmt.Errorf("sample: %s: %w", KeySuppressTokens, err)
	}
	var out []int32
	for _, id := range ids {
		if id >= 0 && int(id) < nVocab {
			out = append(out, id)
		}
	}
	return out, nil
}
