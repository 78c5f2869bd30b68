package synth

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/bankml/bankml/gguf"
)

// Token types: the values of tokenizer.ggml.token_type (llama_token_type in llama.cpp's include/llama.h, gguf-py's
// TokenType).
const (
	TokenNormal      int32 = 1
	TokenUnknown     int32 = 2
	TokenControl     int32 = 3
	TokenUserDefined int32 = 4
	TokenUnused      int32 = 5
	TokenByte        int32 = 6
)

// Vocab is a BPE vocabulary as a GGUF file stores it (tokenizer.ggml.*).
type Vocab struct {
	Model  string   // tokenizer.ggml.model, "gpt2" (byte-level BPE)
	Pre    string   // tokenizer.ggml.pre, the pre-tokenizer name, e.g. "qwen2"
	Tokens []string // tokenizer.ggml.tokens, indexed by id
	Types  []int32  // tokenizer.ggml.token_type, one Token* constant per token
	Merges []string // tokenizer.ggml.merges, "left right" by rank

	BOS, EOS, PAD int32 // token ids of bos_token_id, eos_token_id, padding_token_id; -1 leaves the key out
	AddBOS        bool  // tokenizer.ggml.add_bos_token

	ChatTemplate string // tokenizer.chat_template (Jinja); empty leaves the key out

	// Raw, when set (VocabFromGGUF), holds every tokenizer.* key of a converted model, written as they are in
	// place of the keys built from the fields above (which then only describe it).
	Raw []gguf.KV
}

// raw returns the value of key among v.Raw.
func (v *Vocab) raw(key string) (gguf.Value, bool) {
	for _, kv := range v.Raw {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return gguf.Value{}, false
}

// VocabFromGGUF reads the vocabulary of a GGUF file (such as llama.cpp's models/ggml-vocab-*.gguf): every
// tokenizer.* key, copied as it is, so that a synthetic model carries the file's tokenizer exactly (its
// SentencePiece scores, WordPiece model, merges, special ids and flags included). Errors name the file and what
// is missing.
func VocabFromGGUF(path string) (*Vocab, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("synth: vocabulary: %w", err)
	}
	defer f.Close()
	v := &Vocab{BOS: -1, EOS: -1, PAD: -1}
	for _, kv := range f.KVs {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			v.Raw = append(v.Raw, kv)
		}
	}
	v.Model, _ = f.GetString("tokenizer.ggml.model")
	v.Pre, _ = f.GetString("tokenizer.ggml.pre")
	v.ChatTemplate, _ = f.GetString("tokenizer.chat_template")
	v.AddBOS, _ = f.GetBool("tokenizer.ggml.add_bos_token")
	toks, ok := f.GetArray("tokenizer.ggml.tokens")
	if !ok {
		return nil, fmt.Errorf("synth: vocabulary %s: tokenizer.ggml.tokens missing", path)
	}
	if v.Tokens, err = toks.Strings(); err != nil {
		return nil, fmt.Errorf("synth: vocabulary %s: tokenizer.ggml.tokens: %w", path, err)
	}
	v.Types = make([]int32, len(v.Tokens))
	if tt, ok := f.GetArray("tokenizer.ggml.token_type"); ok {
		if v.Types, err = tt.Int32s(); err != nil {
			return nil, fmt.Errorf("synth: vocabulary %s: tokenizer.ggml.token_type: %w", path, err)
		}
	} else {
		for i := range v.Types {
			v.Types[i] = TokenNormal
		}
	}
	for _, id := range []struct {
		key string
		dst *int32
	}{{"tokenizer.ggml.bos_token_id", &v.BOS}, {"tokenizer.ggml.eos_token_id", &v.EOS}, {"tokenizer.ggml.padding_token_id", &v.PAD}} {
		if u, ok := f.GetUint64(id.key); ok && u < uint64(len(v.Tokens)) {
			*id.dst = int32(u)
		}
	}
	return v, nil
}

// byteLevel returns GPT-2's byte-level alphabet (bytes_to_unicode): the printable character standing for each byte,
// indexed by byte. Printable Latin-1 bytes stand for themselves; the others map to U+0100 upwards in byte order.
func byteLevel() [256]string {
	var out [256]string
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			out[b] = string(rune(b))
		} else {
			out[b] = string(rune(256 + n))
			n++
		}
	}
	return out
}

// chatMLTemplate is the chat template of synthetic vocabularies: plain ChatML, the format of Qwen3's template
// without its tool and reasoning branches.
const chatMLTemplate = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + " +
	"'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// The special tokens of synthetic vocabularies, which end the vocabulary in this order (Qwen's first three).
var syntheticSpecials = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}

// Synthetic returns a byte-level BPE vocabulary of n tokens (n >= 259) that llama.cpp loads as tokenizer model
// "gpt2" with the "qwen2" pre-tokenizer: ids 0-255 are the 256 byte tokens of GPT-2's byte-level alphabet (in byte
// order), then n-259 merged tokens, each the concatenation of two earlier tokens with its merge rule (ranked in id
// order, so every merged token is reachable), then "<|endoftext|>" (bos and padding), "<|im_start|>" and
// "<|im_end|>" (eos) as control tokens. add_bos is false and the chat template is plain ChatML, as for Qwen3. The
// vocabulary depends on n only. An n below 259 gives an error wrapping [ErrConfig].
func Synthetic(n int) (*Vocab, error) {
	nSpecial := len(syntheticSpecials)
	if n < 256+nSpecial || n > 1<<30 {
		return nil, fmt.Errorf("%w: a synthetic vocabulary needs %d to 2^30 tokens, not %d", ErrConfig, 256+nSpecial, n)
	}
	v := &Vocab{Model: "gpt2", Pre: "qwen2", Tokens: make([]string, 0, n), Types: make([]int32, 0, n),
		ChatTemplate: chatMLTemplate}
	seen := make(map[string]bool, n)
	for _, s := range byteLevel() {
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, TokenNormal)
		seen[s] = true
	}
	// Merged tokens: pairs drawn from a fixed PCG stream, the left part from all tokens so far, the right part from
	// the first 1024, so that tokens grow longer without running into the length cap.
	// Only the source's raw output is used (PCG-DXSM, fixed by its definition), not Rand's derived methods.
	r := rand.NewPCG(0x5eed, 0xb0c4b)
	for len(v.Tokens) < n-nSpecial {
		k := uint64(len(v.Tokens))
		a := v.Tokens[r.Uint64()%k]
		b := v.Tokens[r.Uint64()%min(k, 1024)]
		s := a + b
		if seen[s] || len(s) > 48 {
			continue
		}
		seen[s] = true
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, TokenNormal)
		v.Merges = append(v.Merges, a+" "+b)
	}
	base := int32(len(v.Tokens))
	for _, s := range syntheticSpecials {
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, TokenControl)
	}
	v.BOS, v.PAD, v.EOS = base, base, base+2
	return v, nil
}

// Qwen3NVocab is the vocabulary size of the Qwen3 models (config.json vocab_size), larger than the tokenizer's
// 151669 tokens; the ids in between are padding.
const Qwen3NVocab = 151936

// qwen3BOS is the bos token of Qwen3: config.json's bos_token_id 151643, which is this token.
const qwen3BOS = "<|endoftext|>"

// hfTokenizer is the part of a Hugging Face tokenizer.json that the conversion reads.
type hfTokenizer struct {
	Model struct {
		Type   string            `json:"type"`
		Vocab  map[string]int    `json:"vocab"`
		Merges []json.RawMessage `json:"merges"`
	} `json:"model"`
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
}

// hfTokenizerConfig is the part of tokenizer_config.json that the conversion reads. Token fields are either a
// string or an object with "content".
type hfTokenizerConfig struct {
	AddBOS       *bool           `json:"add_bos_token"`
	BOS          json.RawMessage `json:"bos_token"`
	EOS          json.RawMessage `json:"eos_token"`
	PAD          json.RawMessage `json:"pad_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

// Qwen3Vocab converts the Qwen3 tokenizer in dir (tokenizer.json or tokenizer.json.gz, and tokenizer_config.json)
// to a vocabulary of size tokens (use Qwen3NVocab), as llama.cpp's converter does for Qwen3ForCausalLM
// (conversion/base.py get_vocab_base and _set_vocab_gpt2, gguf-py SpecialVocab):
//   - model "gpt2", pre-tokenizer "qwen2";
//   - token i is the vocabulary's or added token's text for id i, else "[PADi]" of type unused;
//   - added tokens are control tokens when marked special or when they look special ("<|...|>"), user-defined
//     otherwise (e.g. "<think>"); all others are normal;
//   - merges are written "left right", spaces inside a part encoded as U+0120 (both merge formats are read);
//   - eos and padding ids come from tokenizer_config.json's eos_token and pad_token, looked up among the added
//     tokens; bos is config.json's bos_token_id, which for Qwen3 is "<|endoftext|>" (config.json is not needed);
//   - add_bos_token and chat_template are copied from tokenizer_config.json.
//
// Errors name the file and wrap the I/O or JSON error, or [ErrConfig] for a size below the tokenizer's.
func Qwen3Vocab(dir string, size int) (*Vocab, error) {
	tok, err := readTokenizer(dir)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	cfgData, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("synth: qwen3 vocabulary: %w", err)
	}
	var cfg hfTokenizerConfig
	if err := json.Unmarshal(cfgData, &cfg); err != nil {
		return nil, fmt.Errorf("synth: qwen3 vocabulary: %s: %w", cfgPath, err)
	}
	if tok.Model.Type != "BPE" {
		return nil, fmt.Errorf("synth: qwen3 vocabulary: model type %q, want BPE", tok.Model.Type)
	}

	byID := make(map[int]string, len(tok.Model.Vocab)+len(tok.AddedTokens))
	for s, id := range tok.Model.Vocab {
		byID[id] = s
	}
	added := make(map[int]bool, len(tok.AddedTokens))
	special := make(map[int]bool, len(tok.AddedTokens))
	addedID := make(map[string]int32, len(tok.AddedTokens))
	for _, a := range tok.AddedTokens {
		byID[a.ID] = a.Content
		added[a.ID], special[a.ID] = true, a.Special
		if _, dup := addedID[a.Content]; !dup {
			addedID[a.Content] = int32(a.ID)
		}
	}
	maxID := -1
	for id := range byID {
		if id < 0 {
			return nil, fmt.Errorf("synth: qwen3 vocabulary: negative token id %d", id)
		}
		maxID = max(maxID, id)
	}
	if size <= maxID || size > 1<<30 {
		return nil, fmt.Errorf("%w: vocabulary size %d, the tokenizer has ids up to %d", ErrConfig, size, maxID)
	}

	v := &Vocab{Model: "gpt2", Pre: "qwen2", Tokens: make([]string, size), Types: make([]int32, size), BOS: -1, EOS: -1, PAD: -1}
	for i := range size {
		s, ok := byID[i]
		switch {
		case !ok:
			v.Tokens[i], v.Types[i] = fmt.Sprintf("[PAD%d]", i), TokenUnused
		case added[i] && (special[i] || looksSpecial(s)):
			v.Tokens[i], v.Types[i] = s, TokenControl
		case added[i]:
			v.Tokens[i], v.Types[i] = s, TokenUserDefined
		default:
			v.Tokens[i], v.Types[i] = s, TokenNormal
		}
	}
	if v.Merges, err = convertMerges(tok.Model.Merges); err != nil {
		return nil, fmt.Errorf("synth: qwen3 vocabulary: %w", err)
	}
	for _, f := range []struct {
		raw json.RawMessage
		id  *int32
	}{{cfg.EOS, &v.EOS}, {cfg.PAD, &v.PAD}} {
		if content, ok := tokenContent(f.raw); ok {
			if id, ok := addedID[content]; ok {
				*f.id = id
			}
		}
	}
	if content, ok := tokenContent(cfg.BOS); ok {
		if id, ok := addedID[content]; ok {
			v.BOS = id
		}
	}
	if id, ok := addedID[qwen3BOS]; ok && v.BOS < 0 {
		v.BOS = id
	}
	if cfg.AddBOS != nil {
		v.AddBOS = *cfg.AddBOS
	}
	if len(cfg.ChatTemplate) > 0 && !bytes.Equal(cfg.ChatTemplate, []byte("null")) {
		if err := json.Unmarshal(cfg.ChatTemplate, &v.ChatTemplate); err != nil {
			return nil, fmt.Errorf("synth: qwen3 vocabulary: %s: chat_template is not a string: %w", cfgPath, err)
		}
	}
	return v, nil
}

// readTokenizer reads dir/tokenizer.json, or dir/tokenizer.json.gz when that is absent.
func readTokenizer(dir string) (*hfTokenizer, error) {
	path := filepath.Join(dir, "tokenizer.json")
	var r io.Reader
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		path += ".gz"
		if f, err = os.Open(path); err == nil {
			gz, gzErr := gzip.NewReader(f)
			if gzErr != nil {
				f.Close()
				return nil, fmt.Errorf("synth: qwen3 vocabulary: %s: %w", path, gzErr)
			}
			r = gz
		}
	} else if err == nil {
		r = f
	}
	if err != nil {
		return nil, fmt.Errorf("synth: qwen3 vocabulary: %w", err)
	}
	defer f.Close()
	var tok hfTokenizer
	if err := json.NewDecoder(r).Decode(&tok); err != nil {
		return nil, fmt.Errorf("synth: qwen3 vocabulary: %s: %w", path, err)
	}
	return &tok, nil
}

// looksSpecial is the converter's does_token_look_special.
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return (strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>")) ||
		(strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>")) ||
		(strings.HasPrefix(s, "<unused") && strings.HasSuffix(s, ">"))
}

// convertMerges turns tokenizer.json merges into GGUF merges: strings are kept; pairs are joined by a space, a
// space inside a part becoming U+0120 (gguf-py SpecialVocab).
func convertMerges(raw []json.RawMessage) ([]string, error) {
	out := make([]string, len(raw))
	for i, m := range raw {
		var s string
		if err := json.Unmarshal(m, &s); err == nil {
			out[i] = s
			continue
		}
		var pair []string
		if err := json.Unmarshal(m, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("merge %d: %s is neither a string nor a pair of strings", i, m)
		}
		out[i] = strings.ReplaceAll(pair[0], " ", "\u0120") + " " + strings.ReplaceAll(pair[1], " ", "\u0120")
	}
	return out, nil
}

// tokenContent reads a tokenizer_config.json token field: a string, or an object with a string "content".
func tokenContent(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, true
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != "" {
		return obj.Content, true
	}
	return "", false
}
