package tokenizer

import (
	"fmt"
	"strings"
)

// SPM is llama.cpp's SentencePiece tokenizer (tokenizer.ggml.model "llama",
// LLAMA_VOCAB_TYPE_SPM) over one vocabulary. It is immutable after NewSPM and safe for
// concurrent use.
type SPM struct {
	core
	byteTok [256]int32 // byte_to_token for every byte; None where the vocabulary has none
}

// NewSPM builds the SentencePiece tokenizer of v, deriving token attributes, the
// end-of-generation set, the special-token order and the piece cache as llama.cpp's
// llama_vocab::impl::load does. A malformed vocabulary (arrays of different lengths, an id
// out of range, a duplicate token text, BOS/EOS required but absent) is an error.
func NewSPM(v Vocab) (*SPM, error) {
	c, err := newCore(v, kindSPM)
	if err != nil {
		return nil, err
	}
	s := &SPM{core: *c}
	for b := range 256 {
		s.byteTok[b] = s.lookupByte(byte(b))
	}
	// The newline token: "<0x0A>" (or "\n"), else the padding token.
	s.nl = s.byteTok['\n']
	if s.nl == None {
		s.nl = s.pad
	}
	if err := s.finish(v, s.computePiece); err != nil {
		return nil, err
	}
	return s, nil
}

// lookupByte is llama_vocab::byte_to_token for SPM: "<0xNN>" with upper-case hex digits,
// else the one-byte text; None where llama.cpp would throw.
func (s *SPM) lookupByte(b byte) int32 {
	const hex = "0123456789ABCDEF"
	if id, ok := s.ids[string([]byte{'<', '0', 'x', hex[b>>4], hex[b&15], '>'})]; ok {
		return id
	}
	if id, ok := s.ids[string([]byte{b})]; ok {
		return id
	}
	return None
}

// computePiece is llama_token_to_piece(id, special = true, lstrip = 0) for SPM with the
// attributes as they stand when llama.cpp builds its piece cache.
func (s *SPM) computePiece(id int32) (string, error) {
	a, w := s.attr[id], s.text[id]
	switch {
	case a&(AttrUnknown|AttrControl|AttrUserDefined) != 0:
		return w, nil
	case a&AttrNormal != 0:
		return strings.ReplaceAll(w, "\u2581", " "), nil
	case a&AttrByte != 0:
		b, err := tokenByte(w)
		if err != nil {
			return "", fmt.Errorf("tokenizer: byte token %d: %w", id, err)
		}
		return string([]byte{b}), nil
	}
	return "", nil
}
