package tokenizer

// TokenToPiece returns the bytes token id stands for, as llama_token_to_piece(vocab, id,
// buf, len, lstrip = 0, special) gives them from llama.cpp's piece cache: user-defined tokens
// give their text, control and unknown tokens their text only when special is true (else
// nothing), normal tokens their decoded text (SPM and WPM: U+2581 becomes a space; BPE: each
// character of GPT-2's byte alphabet becomes its byte), byte tokens <0xNN> their raw byte (so a
// piece may be part of a UTF-8 sequence), other types nothing. An id out of range gives nil.
func (s *core) TokenToPiece(id int32, special bool) []byte {
	p := s.piece(id, special)
	if p == "" {
		return nil
	}
	return []byte(p)
}

func (s *core) piece(id int32, special bool) string {
	if id < 0 || int(id) >= len(s.pieces) {
		return ""
	}
	if !special && s.attr[id]&(AttrUnknown|AttrControl) != 0 {
		return ""
	}
	return s.pieces[id]
}

// Detokenize converts ids back to text as llama_detokenize(vocab, ids, ..., removeSpecial,
// unparseSpecial) does: the pieces are concatenated (control and unknown tokens only with
// unparseSpecial), one leading space of the first piece is dropped when the vocabulary has
// add_space_prefix, and with removeSpecial a leading BOS (when the vocabulary adds BOS; the
// first piece then keeps its space) and a trailing EOS (when it adds EOS) are left out. Where
// llama.cpp sets clean_up_tokenization_spaces (BPE except the pre-tokenizers that clear it,
// WPM), its three passes follow: " ?", " !", " .", " ," lose the space, a lone "'" between
// spaces loses both, and " 's", " 'm", " 're", " 've" lose the space. Ids out of range
// contribute nothing.
func (s *core) Detokenize(ids []int32, removeSpecial, unparseSpecial bool) []byte {
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
	if s.cleanSpaces {
		out = cleanSpaces(out)
	}
	return out
}

// cleanSpaces is the clean_spaces part of llama_vocab::impl::detokenize, pass for pass, in place.
func cleanSpaces(text []byte) []byte {
	total := len(text)
	// First pass: " ?", " !", " .", " ," lose the space.
	total1 := total
	total = min(total, 1)
	for i := 1; i < total1; i++ {
		x := text[i]
		if text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			total--
		}
		text[total] = x
		total++
	}
	// Second pass: a single apostrophe between spaces loses both spaces.
	total2 := total
	total = min(total, 1)
	for i := 1; i < total2; i++ {
		x := text[i]
		if x == '\'' && i+1 < total2 && text[i-1] == ' ' && text[i+1] == ' ' {
			total--
			i++
			text[i] = 0
		}
		text[total] = x
		total++
	}
	// Third pass: " 's", " 'm", " 're", " 've" lose the space (" 't", " 'd", " 'll" keep it).
	total3 := total
	total = min(total, 1)
	for i := 1; i < total3; i++ {
		x := text[i]
		if text[i-1] == ' ' && x == '\'' && i+1 < total3 {
			x1 := text[i+1]
			switch {
			case x1 == 't' || x1 == 'd':
			case x1 == 's' || x1 == 'm':
				total--
			case i+2 < total3:
				x2 := text[i+2]
				if (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e') {
					total--
				}
			}
		}
		text[total] = x
		total++
	}
	return text[:total]
}
