package tokenizer

import "fmt"

// TokenType is a token's type as stored in the GGUF key tokenizer.ggml.token_type
// (llama.cpp's enum llama_token_type).
type TokenType = int32

// Token types of tokenizer.ggml.token_type.
const (
	TypeUndefined   TokenType = 0 // no type given; decodes to nothing
	TypeNormal      TokenType = 1 // an ordinary piece of text (U+2581 stands for a space)
	TypeUnknown     TokenType = 2 // the unknown token, <unk>
	TypeControl     TokenType = 3 // a control token such as <s> or </s>
	TypeUserDefined TokenType = 4 // a user-defined token, always split out of the text
	TypeUnused      TokenType = 5 // a token the vocabulary marks unused
	TypeByte        TokenType = 6 // a byte-fallback token <0xNN>
)

// Attr is the set of attributes llama.cpp derives for a token (enum llama_token_attr): the
// token type as a bit, plus the bits set by llama.cpp's load-time rules (control-looking
// texts, "unused" tokens, lstrip/rstrip for some named models).
type Attr uint32

// Token attribute bits, with llama.cpp's values.
const (
	AttrUndefined   Attr = 0
	AttrUnknown     Attr = 1 << 0
	AttrUnused      Attr = 1 << 1
	AttrNormal      Attr = 1 << 2
	AttrControl     Attr = 1 << 3
	AttrUserDefined Attr = 1 << 4
	AttrByte        Attr = 1 << 5
	AttrNormalized  Attr = 1 << 6
	AttrLStrip      Attr = 1 << 7
	AttrRStrip      Attr = 1 << 8
	AttrSingleWord  Attr = 1 << 9
)

// attrOfType maps a token type to its attribute the way llama_vocab::impl::load does;
// any value outside the enum becomes AttrUndefined.
func attrOfType(t TokenType) Attr {
	switch t {
	case TypeUnknown:
		return AttrUnknown
	case TypeUnused:
		return AttrUnused
	case TypeNormal:
		return AttrNormal
	case TypeControl:
		return AttrControl
	case TypeUserDefined:
		return AttrUserDefined
	case TypeByte:
		return AttrByte
	default:
		return AttrUndefined
	}
}

// None is the id that stands for "no such token" (llama.cpp's LLAMA_TOKEN_NULL).
const None int32 = -1

// Vocab is a vocabulary as plain data: what NewSPM, NewBPE and NewWPM build a tokenizer from.
// FromGGUF fills it from a GGUF file's metadata with llama.cpp's defaults; a caller that
// builds one by hand should start from NewVocab or NewVocabFor, since a zero id field means
// token 0.
//
// Every id field is a token id in [0, len(Tokens)) or None (-1). EOT, EOM and the FIM ids
// set to None are looked up by text, as llama.cpp does (for example "<|end|>" or "<EOT>").
type Vocab struct {
	// Model is tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (byte-level BPE) or
	// "bert" (WordPiece); "" reads as "llama".
	Model string
	// Tokens holds the text of every token, indexed by id (tokenizer.ggml.tokens).
	Tokens []string
	// Scores holds each token's merge score (tokenizer.ggml.scores); nil means all 0.
	Scores []float32
	// Types holds each token's TokenType (tokenizer.ggml.token_type); nil means all normal.
	Types []int32
	// Merges holds a BPE vocabulary's merge rules by rank, "left right"
	// (tokenizer.ggml.merges).
	Merges []string

	BOS  int32 // beginning of sequence (tokenizer.ggml.bos_token_id)
	EOS  int32 // end of sequence (tokenizer.ggml.eos_token_id)
	EOT  int32 // end of turn (tokenizer.ggml.eot_token_id); None: found by text
	EOM  int32 // end of message (tokenizer.ggml.eom_token_id); None: found by text
	UNK  int32 // unknown (tokenizer.ggml.unknown_token_id)
	SEP  int32 // separator (tokenizer.ggml.seperator_token_id)
	PAD  int32 // padding (tokenizer.ggml.padding_token_id)
	MASK int32 // mask (tokenizer.ggml.mask_token_id)

	FIMPre int32 // fill-in-the-middle prefix; None: found by text
	FIMSuf int32 // fill-in-the-middle suffix; None: found by text
	FIMMid int32 // fill-in-the-middle middle; None: found by text
	FIMPad int32 // fill-in-the-middle pad; None: found by text
	FIMRep int32 // fill-in-the-middle repository; None: found by text
	FIMSep int32 // fill-in-the-middle file separator; None: found by text

	// AddBOS and AddEOS say whether Tokenize with addSpecial adds BOS / EOS
	// (tokenizer.ggml.add_bos_token / add_eos_token; llama.cpp's SPM defaults: true, false).
	AddBOS, AddEOS bool
	// AddSpacePrefix says whether a space is put before the text and after every special
	// token (tokenizer.ggml.add_space_prefix; SPM default true).
	AddSpacePrefix bool

	// Lowercase and StripAccents are the WordPiece normalizer's options
	// (tokenizer.ggml.normalizer.lowercase, default true; .strip_accents, default Lowercase).
	Lowercase, StripAccents bool

	// Name, Pre and Arch are general.name, tokenizer.ggml.pre and general.architecture.
	// llama.cpp sets some token attributes by these names (Phi-3's rstrip tokens, the
	// lstrip <mask> of jina-v2 and nomic-bert-moe, the lstrip [MASK] of modern-bert).
	Name, Pre, Arch string
}

// NewVocab returns a Vocab holding tokens with llama.cpp's defaults for a SentencePiece
// ("llama") vocabulary: BOS 1, EOS 2, UNK 0, every other id None, AddBOS and AddSpacePrefix
// true, AddEOS false (Lowercase and StripAccents on, llama.cpp's normalizer defaults). Ids that fall outside the vocabulary are set to None, as llama.cpp
// disables a default that is out of range.
func NewVocab(tokens []string) Vocab {
	v := Vocab{
		Tokens: tokens,
		BOS:    1, EOS: 2, UNK: 0,
		EOT: None, EOM: None, SEP: None, PAD: None, MASK: None,
		FIMPre: None, FIMSuf: None, FIMMid: None, FIMPad: None, FIMRep: None, FIMSep: None,
		AddBOS: true, AddEOS: false, AddSpacePrefix: true,
		Lowercase: true, StripAccents: true,
	}
	n := int32(len(tokens))
	for _, p := range []*int32{&v.BOS, &v.EOS, &v.UNK} {
		if *p >= n {
			*p = None
		}
	}
	return v
}

// NewVocabFor returns a Vocab holding tokens with llama.cpp's defaults for tokenizer model
// model and pre-tokenizer pre (llama_vocab::impl::load): "llama" as NewVocab; "gpt2" BOS and
// EOS 11, no UNK, add_space_prefix off, AddBOS as the pre-tokenizer sets it (on for llama-bpe,
// tekken, chameleon; glm4 disables the default BOS); "bert" BOS 101, UNK 100, SEP 102, PAD 0,
// MASK 103, AddBOS on, Lowercase and StripAccents on. Ids that fall outside the vocabulary are
// None. An unknown model, or for "gpt2" an unknown pre-tokenizer, is an error.
func NewVocabFor(model, pre string, tokens []string) (Vocab, error) {
	v := NewVocab(tokens)
	v.Model, v.Pre = model, pre
	switch model {
	case "", "llama":
		v.Model = "llama"
		return v, nil
	case "gpt2":
		p, err := lookupPre(pre)
		if err != nil {
			return v, err
		}
		v.BOS, v.EOS, v.UNK = 11, 11, None
		if p.noBOS {
			v.BOS = None
		}
		v.AddBOS, v.AddEOS, v.AddSpacePrefix = p.addBOS, false, false
	case "bert":
		v.BOS, v.EOS, v.UNK, v.SEP, v.PAD, v.MASK = 101, None, 100, 102, 0, 103
		v.AddBOS, v.AddEOS, v.AddSpacePrefix = true, false, false
		v.Lowercase, v.StripAccents = true, true
	default:
		return v, fmt.Errorf("tokenizer: model %q not supported", model)
	}
	n := int32(len(tokens))
	for _, p := range []*int32{&v.BOS, &v.EOS, &v.UNK, &v.SEP, &v.PAD, &v.MASK} {
		if *p >= n {
			*p = None
		}
	}
	return v, nil
}

// New builds the tokenizer v.Model names: NewSPM, NewBPE or NewWPM.
func New(v Vocab) (Tokenizer, error) {
	switch v.Model {
	case "", "llama":
		return NewSPM(v)
	case "gpt2":
		return NewBPE(v)
	case "bert":
		return NewWPM(v)
	}
	return nil, fmt.Errorf("tokenizer: model %q not supported", v.Model)
}
