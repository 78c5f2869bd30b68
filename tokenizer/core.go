package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bankml/bankml/internal/stdcpp"
)

// vocabKind is llama.cpp's llama_vocab_type for the kinds bankml implements.
type vocabKind int

const (
	kindSPM vocabKind = iota // LLAMA_VOCAB_TYPE_SPM, tokenizer.ggml.model "llama"
	kindBPE                  // LLAMA_VOCAB_TYPE_BPE, "gpt2"
	kindWPM                  // LLAMA_VOCAB_TYPE_WPM, "bert"
)

// core is what every vocabulary kind shares, built as llama_vocab::impl::load builds it: token texts and
// attributes, the special ids, the end-of-generation set, the special-token cache (longest first) and the piece
// cache. It is immutable once built.
type core struct {
	kind  vocabKind
	text  []string
	score []float32
	attr  []Attr
	ids   map[string]int32

	bos, eos, eot, eom, unk, sep, pad, mask, nl    int32
	fimPre, fimSuf, fimMid, fimPad, fimRep, fimSep int32

	addBOS, addEOS, addSpacePrefix bool
	cleanSpaces                    bool // clean_up_tokenization_spaces in Detokenize
	maxTokenLen                    int  // bytes of the longest token text

	eog     []bool  // eog[id]: the token ends generation
	eogIDs  []int32 // the same set, ascending
	special []int32 // cache_special_tokens: control / user-defined / unknown ids, longest first
	pieces  []string
}

// Texts llama.cpp recognises, in llama_vocab::impl::load, as the EOT, EOM and FIM tokens
// when the metadata does not name them, and as end-of-generation tokens.
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
		"▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
		"▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
		"▁<MID>", "<|code_middle|>", "<|middle|>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepTexts = []string{"<|file_sep|>"}
	eogTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
		"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
		"[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
		"<｜end▁of▁sentence｜>", "[e~["}
	alwaysUserDefined = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}
)

// newCore validates v and builds the shared part of a tokenizer of the given kind, up to (not including) the
// piece cache and the attributes set by name, which need the kind's own rules (finish does them).
func newCore(v Vocab, kind vocabKind) (*core, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, errors.New("tokenizer: empty vocabulary")
	}
	if n >= 1<<31-1 {
		return nil, fmt.Errorf("tokenizer: vocabulary of %d tokens is too large", n)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}
	s := &core{
		kind:  kind,
		text:  make([]string, n),
		score: make([]float32, n),
		attr:  make([]Attr, n),
		ids:   make(map[string]int32, n),

		bos: v.BOS, eos: v.EOS, eot: v.EOT, eom: v.EOM, unk: v.UNK, sep: v.SEP, pad: v.PAD, mask: v.MASK,
		fimPre: v.FIMPre, fimSuf: v.FIMSuf, fimMid: v.FIMMid, fimPad: v.FIMPad, fimRep: v.FIMRep, fimSep: v.FIMSep,

		addBOS: v.AddBOS, addEOS: v.AddEOS, addSpacePrefix: v.AddSpacePrefix,
	}
	for _, c := range []struct {
		name string
		id   int32
	}{
		{"bos", s.bos}, {"eos", s.eos}, {"eot", s.eot}, {"eom", s.eom}, {"unk", s.unk}, {"sep", s.sep},
		{"pad", s.pad}, {"mask", s.mask}, {"fim_pre", s.fimPre}, {"fim_suf", s.fimSuf}, {"fim_mid", s.fimMid},
		{"fim_pad", s.fimPad}, {"fim_rep", s.fimRep}, {"fim_sep", s.fimSep},
	} {
		if c.id < None || c.id >= int32(n) {
			return nil, fmt.Errorf("tokenizer: %s token id %d out of range [0, %d)", c.name, c.id, n)
		}
	}
	if s.addBOS && s.bos == None {
		return nil, errors.New("tokenizer: add_bos_token is set but the vocabulary has no BOS token")
	}
	if s.addEOS && s.eos == None {
		return nil, errors.New("tokenizer: add_eos_token is set but the vocabulary has no EOS token")
	}

	for i, w := range v.Tokens {
		if w == "" {
			w = "[EMPTY_" + strconv.Itoa(i) + "]"
		}
		if j, dup := s.ids[w]; dup {
			return nil, fmt.Errorf("tokenizer: tokens %d and %d have the same text %q", j, i, w)
		}
		s.ids[w] = int32(i)
		s.text[i] = w
		s.maxTokenLen = max(s.maxTokenLen, len(w))
		if v.Scores != nil {
			s.score[i] = v.Scores[i]
		}
		s.attr[i] = AttrNormal
		if v.Types != nil {
			s.attr[i] = attrOfType(v.Types[i])
		}
	}
	return s, nil
}

// finish does the rest of llama_vocab::impl::load: the EOT / EOM / FIM tokens found by text, unused control
// tokens, the end-of-generation set and its workarounds, the special-token cache, the piece cache (computed by
// piece, the kind's llama_token_to_piece with special = true) and the attributes set by model name.
func (s *core) finish(v Vocab, piece func(id int32) (string, error)) error {
	n := len(s.text)
	// Find the EOT, EOM and FIM tokens by text where the metadata gave none, and mark a
	// found token as control.
	var rank []int32
	for _, d := range []struct {
		id    *int32
		texts []string
	}{
		{&s.eot, eotTexts}, {&s.eom, eomTexts}, {&s.fimPre, fimPreTexts}, {&s.fimSuf, fimSufTexts},
		{&s.fimMid, fimMidTexts}, {&s.fimPad, fimPadTexts}, {&s.fimRep, fimRepTexts}, {&s.fimSep, fimSepTexts},
	} {
		if *d.id != None {
			continue
		}
		if id := s.firstOf(d.texts, &rank); id != None {
			*d.id = id
			s.attr[id] |= AttrControl
		}
	}

	// Control tokens whose text contains "unused" are unused.
	for i, w := range s.text {
		if j := strings.IndexByte(w, 0); j >= 0 {
			w = w[:j] // llama.cpp searches the C string
		}
		if s.attr[i]&AttrControl != 0 && strings.Contains(w, "unused") {
			s.attr[i] |= AttrUnused
		}
	}

	// The end-of-generation set.
	s.eog = make([]bool, n)
	for _, id := range []int32{s.fimPad, s.fimRep, s.fimSep} {
		if id != None {
			s.eog[id] = true
		}
	}
	for _, w := range eogTexts {
		if id, ok := s.ids[w]; ok {
			s.eog[id] = true
			s.attr[id] |= AttrControl
		}
	}
	for _, w := range alwaysUserDefined {
		if id, ok := s.ids[w]; ok {
			s.attr[id] = AttrUserDefined
		}
	}
	for _, id := range []int32{s.eos, s.eot, s.eom} {
		if id != None {
			s.eog[id] = true
		}
	}
	// o200k_harmony and solar-open: "<|end|>" is not EOG when the set also has "<|return|>"
	// and "<|call|>", or "<|calls|>" and "<|flush|>".
	has := func(w string) (int32, bool) {
		id, ok := s.ids[w]
		return id, ok && s.eog[id]
	}
	_, hasReturn := has("<|return|>")
	_, hasCall := has("<|call|>")
	_, hasCalls := has("<|calls|>")
	_, hasFlush := has("<|flush|>")
	if endID, hasEnd := has("<|end|>"); hasEnd && ((hasReturn && (hasCall || hasCalls)) || ((hasCall || hasCalls) && hasFlush)) {
		s.eog[endID] = false
		s.attr[endID] = AttrUserDefined
	}
	// gemma4 and paddleocr: "</s>" is not EOG when "<|tool_response>" is.
	if _, hasTR := has("<|tool_response>"); hasTR {
		if sID, hasS := has("</s>"); hasS {
			s.eog[sID] = false
			s.attr[sID] = AttrNormal
		}
	}
	for id, e := range s.eog {
		if e {
			s.eogIDs = append(s.eogIDs, int32(id))
		}
	}

	// The special tokens split out of the text, longest first, in std::sort's order.
	for id := range n {
		if s.attr[id]&(AttrControl|AttrUserDefined|AttrUnknown) != 0 {
			s.special = append(s.special, int32(id))
		}
	}
	stdcpp.Sort(s.special, func(a, b int32) bool { return len(s.text[a]) > len(s.text[b]) })

	// The piece of every token as llama_token_to_piece(special = true) gives it.
	s.pieces = make([]string, n)
	for id := range n {
		p, err := piece(int32(id))
		if err != nil {
			return err
		}
		s.pieces[id] = p
	}

	// Attributes set by model / tokenizer / architecture name.
	return s.applyNamedAttrs(v.Name, v.Pre, v.Arch)
}

// firstOf returns, of the tokens whose text is in texts, the one llama.cpp meets first
// while iterating its token_to_id hash map (see stdMapOrder), or None. rank caches the
// iteration position of every token; it is computed only when two candidates compete.
func (s *core) firstOf(texts []string, rank *[]int32) int32 {
	var found []int32
	for _, w := range texts {
		if id, ok := s.ids[w]; ok {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return None
	case 1:
		return found[0]
	}
	if *rank == nil {
		*rank = make([]int32, len(s.text))
		for pos, id := range stdMapOrder(s.text) {
			(*rank)[id] = int32(pos)
		}
	}
	best := found[0]
	for _, id := range found[1:] {
		if (*rank)[id] < (*rank)[best] {
			best = id
		}
	}
	return best
}

// tokenByte is llama_vocab::token_to_byte for SPM and BPE: strtol(text.substr(3, 2), 16), kept to
// its low 8 bits.
func tokenByte(w string) (byte, error) {
	if len(w) < 3 {
		return 0, fmt.Errorf("text %q is too short for <0xNN>", w)
	}
	h := w[3:]
	if len(h) > 2 {
		h = h[:2]
	}
	return byte(strtol16(h)), nil
}

// strtol16 is C's strtol(s, NULL, 16) in the C locale.
func strtol16(s string) int64 {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && hexVal(s[i+2]) >= 0 {
		i += 2
	}
	var v int64
	for ; i < len(s) && hexVal(s[i]) >= 0; i++ {
		v = v*16 + int64(hexVal(s[i]))
	}
	if neg {
		v = -v
	}
	return v
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// applyNamedAttrs sets the lstrip / rstrip attributes llama.cpp gives some models by name.
func (s *core) applyNamedAttrs(name, pre, arch string) error {
	lname := asciiLower(name)
	set := func(w string, a Attr, on bool) error {
		id, ok := s.ids[w]
		if !ok {
			return fmt.Errorf("tokenizer: model %q needs token %q, which the vocabulary lacks", name, w)
		}
		if on {
			s.attr[id] |= a
		} else {
			s.attr[id] &^= a
		}
		return nil
	}
	containsAny := func(x string, subs ...string) bool {
		for _, sub := range subs {
			if strings.Contains(x, sub) {
				return true
			}
		}
		return false
	}
	switch {
	case containsAny(pre, "jina-v2-de", "jina-v2-es", "jina-v2-code") || containsAny(arch, "nomic-bert-moe", "jina-bert-v3"):
		if _, ok := s.ids["<mask>"]; ok {
			return set("<mask>", AttrLStrip, true)
		}
	case containsAny(lname, "phi-3", "phi3"):
		for _, id := range s.special {
			s.attr[id] |= AttrRStrip
		}
		if err := set("</s>", AttrRStrip, true); err != nil {
			return err
		}
		for _, w := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if err := set(w, AttrRStrip, false); err != nil {
				return err
			}
		}
	case containsAny(lname, "modern-bert"):
		if _, ok := s.ids["[MASK]"]; ok {
			return set("[MASK]", AttrLStrip, true)
		}
	}
	return nil
}

func asciiLower(x string) string {
	b := []byte(x)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// NVocab returns the number of tokens.
func (s *core) NVocab() int { return len(s.text) }

// BOS returns the beginning-of-sequence token, or None.
func (s *core) BOS() int32 { return s.bos }

// EOS returns the end-of-sequence token, or None.
func (s *core) EOS() int32 { return s.eos }

// EOT returns the end-of-turn token, or None.
func (s *core) EOT() int32 { return s.eot }

// EOM returns the end-of-message token, or None.
func (s *core) EOM() int32 { return s.eom }

// UNK returns the unknown token, or None.
func (s *core) UNK() int32 { return s.unk }

// SEP returns the separator token, or None.
func (s *core) SEP() int32 { return s.sep }

// PAD returns the padding token, or None.
func (s *core) PAD() int32 { return s.pad }

// MASK returns the mask token, or None.
func (s *core) MASK() int32 { return s.mask }

// NL returns the newline token (llama_vocab_nl): for SPM the byte token of '\n', for BPE the first token of
// "\n", else (and for WPM) the padding token; None when there is none.
func (s *core) NL() int32 { return s.nl }

// FIM returns the fill-in-the-middle tokens prefix, suffix, middle, pad, repository and
// file separator; each may be None.
func (s *core) FIM() (pre, suf, mid, pad, rep, sep int32) {
	return s.fimPre, s.fimSuf, s.fimMid, s.fimPad, s.fimRep, s.fimSep
}

// AddBOS reports whether Tokenize with addSpecial puts BOS first.
func (s *core) AddBOS() bool { return s.addBOS }

// AddEOS reports whether Tokenize with addSpecial puts EOS last.
func (s *core) AddEOS() bool { return s.addEOS }

// AddSpacePrefix reports tokenizer.ggml.add_space_prefix: for SPM a space is put before the text and after
// special tokens; for every kind Detokenize drops one leading space of the first piece.
func (s *core) AddSpacePrefix() bool { return s.addSpacePrefix }

// IsEOG reports whether id ends generation (EOS, EOT, EOM, the FIM pad / repository /
// separator tokens and the tokens llama.cpp recognises by text, such as "</s>" or "<|end|>").
func (s *core) IsEOG(id int32) bool { return id >= 0 && int(id) < len(s.eog) && s.eog[id] }

// EOGs returns the end-of-generation tokens in ascending order.
func (s *core) EOGs() []int32 { return slices.Clone(s.eogIDs) }

// TokenText returns the token's text as stored in the vocabulary ("" for an id out of
// range; an empty stored text reads "[EMPTY_<id>]", as in llama.cpp).
func (s *core) TokenText(id int32) string {
	if id < 0 || int(id) >= len(s.text) {
		return ""
	}
	return s.text[id]
}

// TokenScore returns the token's score (0 for an id out of range).
func (s *core) TokenScore(id int32) float32 {
	if id < 0 || int(id) >= len(s.score) {
		return 0
	}
	return s.score[id]
}

// TokenAttr returns the token's attributes (AttrUndefined for an id out of range).
func (s *core) TokenAttr(id int32) Attr {
	if id < 0 || int(id) >= len(s.attr) {
		return AttrUndefined
	}
	return s.attr[id]
}

// TextToToken returns the id of the token whose text is exactly w, or None.
func (s *core) TextToToken(w string) int32 {
	if id, ok := s.ids[w]; ok {
		return id
	}
	return None
}
