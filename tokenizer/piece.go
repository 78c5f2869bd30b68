package tokenizer

// TokenToPiece returns the bytes token id stands for, as llama_token_to_piece(vocab, id,
// buf, len, lstrip = 0, special) gives them: U+2581 becomes a space, a byte token <0xNN>
// its raw byte (so a piece may be part of a UTF-8 sequence), user-defined tokens their
// text, and control and unknown tokens their text only when special is true (else nothing).
// An id out of range gives nil.
func (s *SPM) TokenToPiece(id int32, special bool) []byte {
	p := s.piece(id, special)
	if p == "" {
		return nil
	}
	return []byte(p)
}

func (s *SPM) piece(id int32, special bool) string {
	if id < 0 || int(id) >= len(s.pieces) {
		return ""
	}
	if !special && s.attr[id]&(AttrUnknown|AttrControl) != 0 {
		return ""
	}
	return s.pieces[id]
}

// Detokenize converts ids back to text as llama_detokenize(vocab, ids, ..., removeSpecial,
// unparseSpecial) does for a SentencePiece vocabulary: the pieces are concatenated (control
// and unknown tokens only with unparseSpecial), one leading space of the first piece is
// dropped when the vocabulary adds a space prefix, and with removeSpecial a leading BOS
// (when the vocabulary adds BOS; the first piece then keeps its space) and a trailing EOS
// (when it adds EOS) are left out. Ids out of range contribute nothing.
func (s *SPM) Detokenize(ids []int32, removeSpecial, unparseSpecial bool) []byte {
	removeSpace := s.addSpacePrefix
	if removeSpecial && s.addBOS && len(ids) > 0 && ids[0] == s.bos {
		removeSpace = false
		ids = ids[1:]
	}
	if removeSpecial && s.addEOS && len(ids) > 0 && ids[len(ids)-1] == s.eos {
		ids = ids[:len(ids)-1]
	}
	var out []byte
	for _, id := range ids {
		p := s.piece(id, unparseSpecial)
		if removeSpace && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		removeSpace = false
		out = append(out, p...)
	}
	return out
}
