package tokenizer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bankml/bankml/gguf"
)

// FromGGUF builds the tokenizer a GGUF file's metadata describes, reading the keys
// llama.cpp's llama_vocab::impl::load reads, with its defaults and checks: a key of the
// wrong type is an error (the reference refuses the file too), a special-token id out of
// range (such as 0xFFFFFFFF) is ignored and the default kept. tokenizer.ggml.model "llama"
// gives an *SPM, "gpt2" a *BPE (an unknown or unimplemented tokenizer.ggml.pre is an error
// naming it), "bert" a *WPM; any other model is an error naming it.
func FromGGUF(f *gguf.File) (Tokenizer, error) {
	v, err := VocabFromGGUF(f)
	if err != nil {
		return nil, err
	}
	return New(v)
}

// VocabFromGGUF reads the vocabulary of a GGUF file as FromGGUF does, without building the
// tokenizer.
func VocabFromGGUF(f *gguf.File) (Vocab, error) {
	var v Vocab
	model, ok, err := ggufString(f, "tokenizer.ggml.model")
	if err != nil {
		return v, err
	}
	if !ok {
		return v, errors.New("tokenizer: the file has no tokenizer.ggml.model key")
	}
	pre, _, err := ggufString(f, "tokenizer.ggml.pre")
	if err != nil {
		return v, err
	}
	switch model {
	case "llama", "gpt2", "bert":
	case "no_vocab", "none", "t5", "rwkv", "plamo2", "gemma4", "hybriddna", "whitespace", "test":
		return v, fmt.Errorf("tokenizer: model %q not supported yet", model)
	default:
		return v, fmt.Errorf("tokenizer: unknown tokenizer model %q", model)
	}
	var merges []string
	if model == "gpt2" {
		if _, err := lookupPre(pre); err != nil {
			return v, err
		}
		val, present := f.Get("tokenizer.ggml.merges")
		if !present {
			return v, errors.New("tokenizer: cannot find tokenizer merges (tokenizer.ggml.merges) in the file")
		}
		a, isArr := val.Array()
		if !isArr || a.ElemType != gguf.String {
			return v, errors.New("tokenizer: tokenizer.ggml.merges is not an array of str")
		}
		if merges, err = a.Strings(); err != nil {
			return v, fmt.Errorf("tokenizer: tokenizer.ggml.merges: %w", err)
		}
		for i, m := range merges {
			merges[i] = cString(m)
		}
	}
	arr, ok := f.GetArray("tokenizer.ggml.tokens")
	if !ok {
		if _, present := f.Get("tokenizer.ggml.tokens"); present {
			return v, errors.New("tokenizer: tokenizer.ggml.tokens is not an array")
		}
		return v, errors.New("tokenizer: cannot find tokenizer vocab (tokenizer.ggml.tokens) in the file")
	}
	tokens, err := arr.Strings()
	if err != nil {
		return v, fmt.Errorf("tokenizer: tokenizer.ggml.tokens: %w", err)
	}
	for i, w := range tokens {
		tokens[i] = cString(w)
	}
	n := len(tokens)
	if v, err = NewVocabFor(model, pre, tokens); err != nil {
		return v, err
	}
	v.Merges = merges

	for _, k := range []struct {
		key string
		dst *bool
	}{
		{"tokenizer.ggml.add_space_prefix", &v.AddSpacePrefix},
		{"tokenizer.ggml.remove_extra_whitespaces", nil},
	} {
		b, present, err := ggufBool(f, k.key)
		if err != nil {
			return v, err
		}
		if present && k.dst != nil {
			*k.dst = b
		}
	}

	if a, ok := f.GetArray("tokenizer.ggml.scores"); ok {
		if a.Len < n {
			return v, fmt.Errorf("tokenizer: %d scores for %d tokens", a.Len, n)
		}
		switch a.ElemType {
		case gguf.Float32:
			sc, err := a.Float32s()
			if err != nil {
				return v, fmt.Errorf("tokenizer: tokenizer.ggml.scores: %w", err)
			}
			v.Scores = sc[:n]
		case gguf.Int32:
			is, err := a.Int32s()
			if err != nil {
				return v, fmt.Errorf("tokenizer: tokenizer.ggml.scores: %w", err)
			}
			v.Scores = make([]float32, n)
			for i := range v.Scores {
				v.Scores[i] = float32(is[i])
			}
		default:
			return v, fmt.Errorf("tokenizer: tokenizer.ggml.scores is an array of %s, want f32 or i32", a.ElemType)
		}
	} else if _, present := f.Get("tokenizer.ggml.scores"); present {
		return v, errors.New("tokenizer: tokenizer.ggml.scores is not an array")
	}

	if a, ok := f.GetArray("tokenizer.ggml.token_type"); ok {
		if a.ElemType != gguf.Int32 {
			return v, fmt.Errorf("tokenizer: tokenizer.ggml.token_type is an array of %s, want i32", a.ElemType)
		}
		if a.Len < n {
			return v, fmt.Errorf("tokenizer: %d token types for %d tokens", a.Len, n)
		}
		ts, err := a.Int32s()
		if err != nil {
			return v, fmt.Errorf("tokenizer: tokenizer.ggml.token_type: %w", err)
		}
		v.Types = ts[:n]
	} else if _, present := f.Get("tokenizer.ggml.token_type"); present {
		return v, errors.New("tokenizer: tokenizer.ggml.token_type is not an array")
	}

	// Special tokens: a default out of range is disabled; a key out of range keeps the
	// default (the deprecated prefix/suffix/middle keys override the fim_* ones).
	for _, k := range []struct {
		key string
		id  *int32
	}{
		{"tokenizer.ggml.bos_token_id", &v.BOS},
		{"tokenizer.ggml.eos_token_id", &v.EOS},
		{"tokenizer.ggml.eot_token_id", &v.EOT},
		{"tokenizer.ggml.eom_token_id", &v.EOM},
		{"tokenizer.ggml.unknown_token_id", &v.UNK},
		{"tokenizer.ggml.seperator_token_id", &v.SEP},
		{"tokenizer.ggml.padding_token_id", &v.PAD},
		{"tokenizer.ggml.mask_token_id", &v.MASK},
		{"tokenizer.ggml.fim_pre_token_id", &v.FIMPre},
		{"tokenizer.ggml.fim_suf_token_id", &v.FIMSuf},
		{"tokenizer.ggml.fim_mid_token_id", &v.FIMMid},
		{"tokenizer.ggml.fim_pad_token_id", &v.FIMPad},
		{"tokenizer.ggml.fim_rep_token_id", &v.FIMRep},
		{"tokenizer.ggml.fim_sep_token_id", &v.FIMSep},
		{"tokenizer.ggml.prefix_token_id", &v.FIMPre},
		{"tokenizer.ggml.suffix_token_id", &v.FIMSuf},
		{"tokenizer.ggml.middle_token_id", &v.FIMMid},
	} {
		if *k.id >= int32(n) {
			*k.id = None
		}
		id, present, err := ggufU32(f, k.key)
		if err != nil {
			return v, err
		}
		if present && uint64(id) < uint64(n) {
			*k.id = int32(id)
		}
	}

	for _, k := range []struct {
		key string
		dst *bool
	}{
		{"tokenizer.ggml.add_bos_token", &v.AddBOS},
		{"tokenizer.ggml.add_eos_token", &v.AddEOS},
		{"tokenizer.ggml.add_sep_token", nil},
		{"tokenizer.ggml.normalizer.lowercase", &v.Lowercase},
	} {
		b, present, err := ggufBool(f, k.key)
		if err != nil {
			return v, err
		}
		if present && k.dst != nil {
			*k.dst = b
		}
	}
	// strip_accents defaults to lowercase, as the key read after it sets it.
	v.StripAccents = v.Lowercase
	if b, present, err := ggufBool(f, "tokenizer.ggml.normalizer.strip_accents"); err != nil {
		return v, err
	} else if present {
		v.StripAccents = b
	}

	// Keys llama.cpp reads for other vocabulary types, type-checked all the same.
	if _, _, err := ggufU32(f, "tokenizer.ggml.token_type_count"); err != nil {
		return v, err
	}
	if val, ok := f.Get("tokenizer.ggml.suppress_tokens"); ok {
		if a, isArr := val.Array(); !isArr || a.ElemType != gguf.Int32 {
			return v, errors.New("tokenizer: tokenizer.ggml.suppress_tokens is not an array of i32")
		}
	}

	for _, k := range []struct {
		key string
		dst *string
	}{
		{"general.name", &v.Name},
		{"tokenizer.ggml.pre", &v.Pre},
		{"general.architecture", &v.Arch},
	} {
		s, _, err := ggufString(f, k.key)
		if err != nil {
			return v, err
		}
		*k.dst = s
	}
	v.Model = model
	return v, nil
}

// ggufU32 reads a u32 key; another type is an error, as in llama.cpp's get_key<uint32_t>.
func ggufU32(f *gguf.File, key string) (uint32, bool, error) {
	val, ok := f.Get(key)
	if !ok {
		return 0, false, nil
	}
	if val.Type != gguf.Uint32 {
		return 0, false, fmt.Errorf("tokenizer: key %s has type %s, want u32", key, val.Type)
	}
	u, _ := val.Uint64()
	return uint32(u), true, nil
}

// ggufBool reads a bool key; another type is an error.
func ggufBool(f *gguf.File, key string) (bool, bool, error) {
	val, ok := f.Get(key)
	if !ok {
		return false, false, nil
	}
	b, isBool := val.Bool()
	if !isBool {
		return false, false, fmt.Errorf("tokenizer: key %s has type %s, want bool", key, val.Type)
	}
	return b, true, nil
}

// ggufString reads a string key; another type is an error.
func ggufString(f *gguf.File, key string) (string, bool, error) {
	val, ok := f.Get(key)
	if !ok {
		return "", false, nil
	}
	s, isStr := val.String()
	if !isStr {
		return "", false, fmt.Errorf("tokenizer: key %s has type %s, want str", key, val.Type)
	}
	return cString(s), true, nil
}

// cString cuts s at its first NUL byte: llama.cpp reads GGUF strings through their C
// string (gguf_get_arr_str, gguf_get_val_str), so a token text stops there.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}
