package tokenizer

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// ggufKV is one metadata entry for buildGGUF: val is a string, uint32, int32, bool,
// []string, []float32 or []int32 (an array of i32), or u32s for an array of u32.
type ggufKV struct {
	key string
	val any
}

type u32s []uint32

// buildGGUF encodes a GGUF v3 file holding only metadata.
func buildGGUF(t *testing.T, kvs ...ggufKV) *gguf.File {
	t.Helper()
	var b []byte
	u32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	u64 := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	str := func(s string) { u64(uint64(len(s))); b = append(b, s...) }
	b = append(b, "GGUF"...)
	u32(3)
	u64(0)
	u64(uint64(len(kvs)))
	for _, kv := range kvs {
		str(kv.key)
		switch v := kv.val.(type) {
		case string:
			u32(uint32(gguf.String))
			str(v)
		case uint32:
			u32(uint32(gguf.Uint32))
			u32(v)
		case int32:
			u32(uint32(gguf.Int32))
			u32(uint32(v))
		case bool:
			u32(uint32(gguf.Bool))
			if v {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case []string:
			u32(uint32(gguf.TypeArray))
			u32(uint32(gguf.String))
			u64(uint64(len(v)))
			for _, s := range v {
				str(s)
			}
		case []float32:
			u32(uint32(gguf.TypeArray))
			u32(uint32(gguf.Float32))
			u64(uint64(len(v)))
			for _, f := range v {
				u32(math.Float32bits(f))
			}
		case []int32:
			u32(uint32(gguf.TypeArray))
			u32(uint32(gguf.Int32))
			u64(uint64(len(v)))
			for _, x := range v {
				u32(uint32(x))
			}
		case u32s:
			u32(uint32(gguf.TypeArray))
			u32(uint32(gguf.Uint32))
			u64(uint64(len(v)))
			for _, x := range v {
				u32(x)
			}
		default:
			t.Fatalf("buildGGUF: unsupported value %T", v)
		}
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatalf("buildGGUF: %v", err)
	}
	return f
}

var testTokens = []string{"<unk>", "<s>", "</s>", "▁", "a", "<0x0A>"}

func baseKVs(extra ...ggufKV) []ggufKV {
	return append([]ggufKV{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", testTokens},
		{"tokenizer.ggml.scores", []float32{0, 0, 0, -1, -2, 0}},
		{"tokenizer.ggml.token_type", []int32{2, 3, 3, 1, 1, 6}},
	}, extra...)
}

func TestFromGGUFMetadata(t *testing.T) {
	t.Run("defaults when keys are absent", func(t *testing.T) {
		tok, err := FromGGUF(buildGGUF(t, baseKVs()...))
		if err != nil {
			t.Fatal(err)
		}
		s := tok.(*SPM)
		if s.BOS() != 1 || s.EOS() != 2 || s.UNK() != 0 || s.PAD() != None || !s.AddBOS() || s.AddEOS() || !s.AddSpacePrefix() || s.NL() != 5 {
			t.Fatalf("bos %d eos %d unk %d pad %d add_bos %v add_eos %v prefix %v nl %d",
				s.BOS(), s.EOS(), s.UNK(), s.PAD(), s.AddBOS(), s.AddEOS(), s.AddSpacePrefix(), s.NL())
		}
	})
	t.Run("keys override, out-of-range ids keep the default", func(t *testing.T) {
		tok, err := FromGGUF(buildGGUF(t, baseKVs(
			ggufKV{"tokenizer.ggml.bos_token_id", uint32(2)},
			ggufKV{"tokenizer.ggml.eos_token_id", uint32(0xFFFFFFFF)},
			ggufKV{"tokenizer.ggml.padding_token_id", uint32(4)},
			ggufKV{"tokenizer.ggml.add_bos_token", false},
			ggufKV{"tokenizer.ggml.add_eos_token", true},
			ggufKV{"tokenizer.ggml.add_space_prefix", false},
		)...))
		if err != nil {
			t.Fatal(err)
		}
		s := tok.(*SPM)
		if s.BOS() != 2 || s.EOS() != 2 || s.PAD() != 4 || s.AddBOS() || !s.AddEOS() || s.AddSpacePrefix() {
			t.Fatalf("bos %d eos %d pad %d add_bos %v add_eos %v prefix %v",
				s.BOS(), s.EOS(), s.PAD(), s.AddBOS(), s.AddEOS(), s.AddSpacePrefix())
		}
		if got := s.Tokenize("a", true, false); !slices.Equal(got, []int32{4, 2}) {
			t.Fatalf("Tokenize(a) = %v, want [4 2] (no prefix space, EOS added)", got)
		}
	})
	t.Run("integer scores", func(t *testing.T) {
		kvs := baseKVs()
		kvs[2] = ggufKV{"tokenizer.ggml.scores", []int32{0, 0, 0, -1, 7, 0}}
		tok, err := FromGGUF(buildGGUF(t, kvs...))
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.(*SPM).TokenScore(4); got != 7 {
			t.Fatalf("score of token 4 = %v, want 7", got)
		}
	})
	t.Run("texts stop at NUL like the reference's C strings", func(t *testing.T) {
		kvs := baseKVs()
		kvs[1] = ggufKV{"tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>", "▁", "a\x00junk", "<0x0A>"}}
		tok, err := FromGGUF(buildGGUF(t, kvs...))
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.TokenText(4); got != "a" {
			t.Fatalf("token 4 text %q, want %q", got, "a")
		}
	})

	errCases := []struct {
		name string
		kvs  []ggufKV
		want string
	}{
		{"no model key", []ggufKV{{"tokenizer.ggml.tokens", testTokens}}, "no tokenizer.ggml.model"},
		{"bpe without merges", []ggufKV{{"tokenizer.ggml.model", "gpt2"}, {"tokenizer.ggml.tokens", testTokens}}, "cannot find tokenizer merges"},
		{"bpe merges of wrong type", []ggufKV{{"tokenizer.ggml.model", "gpt2"}, {"tokenizer.ggml.merges", []int32{1}}}, "merges is not an array of str"},
		{"unknown pre-tokenizer", []ggufKV{{"tokenizer.ggml.model", "gpt2"}, {"tokenizer.ggml.pre", "no-such-pre"}}, `unknown pre-tokenizer type "no-such-pre"`},
		{"unimplemented pre-tokenizer", []ggufKV{{"tokenizer.ggml.model", "gpt2"}, {"tokenizer.ggml.pre", "gemma4"}}, `pre-tokenizer "gemma4" not supported`},
		{"t5 model", []ggufKV{{"tokenizer.ggml.model", "t5"}}, `tokenizer: model "t5" not supported yet`},
		{"unknown model", []ggufKV{{"tokenizer.ggml.model", "sentencepiece2"}}, `unknown tokenizer model "sentencepiece2"`},
		{"bert without sep", []ggufKV{{"tokenizer.ggml.model", "bert"}, {"tokenizer.ggml.tokens", testTokens}, {"tokenizer.ggml.bos_token_id", uint32(1)}}, "needs a BOS ([CLS]) and a SEP"},
		{"no tokens", []ggufKV{{"tokenizer.ggml.model", "llama"}}, "cannot find tokenizer vocab"},
		{"model of wrong type", []ggufKV{{"tokenizer.ggml.model", uint32(1)}}, "want str"},
		{"id of wrong type", baseKVs(ggufKV{"tokenizer.ggml.bos_token_id", int32(1)}), "bos_token_id has type i32, want u32"},
		{"flag of wrong type", baseKVs(ggufKV{"tokenizer.ggml.add_bos_token", uint32(1)}), "want bool"},
		{"too few scores", append(baseKVs()[:2], ggufKV{"tokenizer.ggml.scores", []float32{0}}), "1 scores for 6 tokens"},
		{"token types of u32", append(baseKVs()[:3], ggufKV{"tokenizer.ggml.token_type", u32s{2, 3, 3, 1, 1, 6}}), "want i32"},
		{"duplicate tokens", []ggufKV{{"tokenizer.ggml.model", "llama"}, {"tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>", "x", "x"}}}, "same text"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromGGUF(buildGGUF(t, c.kvs...))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
