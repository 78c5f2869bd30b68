package tokenizer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bankml/bankml/tokenizer/internal/ucd"
)

// WPM is llama.cpp's WordPiece tokenizer (tokenizer.ggml.model "bert", LLAMA_VOCAB_TYPE_WPM) over one
// vocabulary. It is immutable after NewWPM and safe for concurrent use.
type WPM struct {
	core
	lowercase, stripAccents bool
}

// NewWPM builds the WordPiece tokenizer of v as llama_vocab::impl::load does for a "bert" vocabulary (the newline
// token is the padding token; clean_spaces is on; v.Lowercase and v.StripAccents are the BertNormalizer options).
// Tokenize with addSpecial always puts BOS ([CLS]) first and SEP last, so a vocabulary without either is an error
// here (the reference aborts when it tokenizes with add_special); so is a byte-type token, on which the
// reference's token_to_byte aborts while it builds its piece cache.
func NewWPM(v Vocab) (*WPM, error) {
	c, err := newCore(v, kindWPM)
	if err != nil {
		return nil, err
	}
	if c.bos == None || c.sep == None {
		return nil, errors.New("tokenizer: a WordPiece vocabulary needs a BOS ([CLS]) and a SEP token")
	}
	w := &WPM{core: *c, lowercase: v.Lowercase, stripAccents: v.StripAccents}
	w.cleanSpaces = true
	w.nl = w.pad
	if err := w.finish(v, w.computePiece); err != nil {
		return nil, err
	}
	return w, nil
}

// computePiece is llama_token_to_piece(id, special = true, lstrip = 0) for WPM: control, unknown and user-defined
// tokens give their text, normal tokens their text with U+2581 as a space.
func (w *WPM) computePiece(id int32) (string, error) {
	a, t := w.attr[id], w.text[id]
	switch {
	case a&(AttrUnknown|AttrControl|AttrUserDefined) != 0:
		return t, nil
	case a&AttrNormal != 0:
		return strings.ReplaceAll(t, "\u2581", " "), nil
	case a&AttrByte != 0:
		return "", fmt.Errorf("tokenizer: token %d %q is a byte token, which a WordPiece vocabulary cannot have", id, t)
	}
	return "", nil
}

// Tokenize converts text to token ids as llama_tokenize does for a WordPiece vocabulary: special tokens are split
// out first; each remaining fragment is normalized and cut into words (llm_tokenizer_wpm_session::preprocess:
// white space separates, control characters, U+0000 and U+FFFD are dropped, accents are stripped after the
// one-code-point NFD and letters lower-cased when the vocabulary says so, punctuation, ASCII symbols and CJK
// ideographs stand alone), and every word, with U+2581 put before it, is covered greedily by the longest tokens
// from the left; a word that cannot be covered becomes the unknown token (None, -1, when the vocabulary has none,
// as in the reference). With addSpecial, BOS comes first and SEP last.
func (w *WPM) Tokenize(text string, addSpecial, parseSpecial bool) []int32 {
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial {
		out = append(out, w.bos)
	}
	var words []string
	var cpts []uint32
	out = w.tokenizeFragments(text, parseSpecial, out, func(raw string, _ bool, out []int32) []int32 {
		cpts = decodeCpts(raw, cpts)
		words = w.preprocess(cpts, words[:0])
		for _, word := range words {
			out = w.tokenizeWord(word, out)
		}
		return out
	})
	if addSpecial {
		out = append(out, w.sep)
	}
	return out
}

// preprocess is llm_tokenizer_wpm_session::preprocess.
func (w *WPM) preprocess(cpts []uint32, words []string) []string {
	tab := ucd.Table()
	var cur strings.Builder
	var u8 [4]byte
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, c := range cpts {
		if w.stripAccents {
			c = ucd.NFD(c)
		}
		f := tab[c]
		if f&ucd.Whitespace != 0 {
			flush()
			continue
		}
		if c == 0 || c == ucd.Replacement || f&ucd.Control != 0 {
			continue
		}
		if w.stripAccents && f&ucd.AccentMark != 0 {
			continue
		}
		lc := c
		if w.lowercase {
			lc = ucd.ToLower(c)
		}
		enc, _ := ucd.AppendUTF8(u8[:0], lc)
		if f&ucd.Punctuation != 0 || (c < 0x7F && f&ucd.Symbol != 0) || isChineseChar(c) {
			flush()
			words = append(words, string(enc))
			continue
		}
		cur.Write(enc)
	}
	flush()
	return words
}

// isChineseChar is llm_tokenizer_wpm_session::is_chinese_char (0x2B920 where the Unicode block starts at 0x2B820,
// as in Hugging Face's code).
func isChineseChar(c uint32) bool {
	return (c >= 0x04E00 && c <= 0x09FFF) || (c >= 0x03400 && c <= 0x04DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
		(c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
		(c >= 0x0F900 && c <= 0x0FAFF) || (c >= 0x2F800 && c <= 0x2FA1F)
}

// tokenizeWord is the greedy longest-match of llm_tokenizer_wpm_session::tokenize for one word.
func (w *WPM) tokenizeWord(word string, out []int32) []int32 {
	word1 := "\u2581" + word
	n := len(word1)
	start := len(out)
	for i := 0; i < n; i++ {
		match := false
		for j := min(n, i+w.maxTokenLen+1); j > i; j-- {
			if id, ok := w.ids[word1[i:j]]; ok {
				out = append(out, id)
				match = true
				i = j - 1
				break
			}
		}
		if !match {
			out = out[:start]
			break
		}
	}
	if len(out) == start {
		out = append(out, w.unk)
	}
	return out
}
