package grammar

// PartialUTF8 is llama_partial_utf8: the bits of a UTF-8 sequence a token
// left unfinished (Value, not yet shifted) and how many continuation bytes
// it still needs (NRemain; -1 marks an invalid sequence).
type PartialUTF8 struct {
	Value   uint32
	NRemain int
}

// decodeUTF8 is llama-grammar.cpp's decode_utf8(src, partial_start): the
// code points of piece continuing partial, and the partial sequence left at
// its end. It reproduces the reference exactly, quirks included: piece ends
// at its first NUL byte (it is read as a C string); continuation bytes of a
// sequence begun in an earlier piece are checked, those of a sequence begun
// in this one are not; a byte 0x80-0xBF where a sequence should start makes
// the whole piece invalid (no code points, NRemain -1); an overlong sequence
// may give code point 0. The reference appends a terminating 0, which is
// not part of the result here.
func decodeUTF8(piece string, partial PartialUTF8, out []uint32) ([]uint32, PartialUTF8) {
	lookup := [16]int{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4}
	pos := 0
	at := func(i int) byte {
		if i < len(piece) {
			return piece[i]
		}
		return 0
	}
	value, nRemain := partial.Value, partial.NRemain
	// continue the previous decode, if any
	for at(pos) != 0 && nRemain > 0 {
		b := at(pos)
		if b>>6 != 2 {
			return out[:0], PartialUTF8{0, -1}
		}
		value = value<<6 + uint32(b&0x3F)
		pos++
		nRemain--
	}
	if partial.NRemain > 0 && nRemain == 0 {
		out = append(out, value)
	}
	// decode the following sequences, the last of which may be incomplete
	for at(pos) != 0 {
		first := at(pos)
		nRemain = lookup[first>>4] - 1
		if nRemain < 0 {
			return out[:0], PartialUTF8{0, nRemain}
		}
		mask := byte(1<<(7-nRemain)) - 1
		value = uint32(first & mask)
		pos++
		for at(pos) != 0 && nRemain > 0 {
			value = value<<6 + uint32(at(pos)&0x3F)
			pos++
			nRemain--
		}
		if nRemain == 0 {
			out = append(out, value)
		}
	}
	return out, PartialUTF8{value, nRemain}
}

// untilZero is the part of cps the reference's candidate checks see: they
// stop at the first code point 0, which they take for the terminator.
func untilZero(cps []uint32) []uint32 {
	for i, c := range cps {
		if c == 0 {
			return cps[:i]
		}
	}
	return cps
}
