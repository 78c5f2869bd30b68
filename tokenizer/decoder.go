package tokenizer

import "unicode/utf8"

// Decoder turns a stream of token ids into text without ever splitting a UTF-8 sequence:
// a piece that ends inside a multi-byte character (byte-fallback tokens carry one byte
// each) is held back until the character is complete. Bytes that can never form a valid
// character are passed through unchanged, so the concatenation of everything Write and
// Close return is exactly the concatenation of the pieces. A Decoder is not safe for
// concurrent use.
type Decoder struct {
	tok     Tokenizer
	special bool
	pending []byte
}

// NewDecoder returns a Decoder over t's pieces; special says whether control tokens
// render as their text (as TokenToPiece's special).
func NewDecoder(t Tokenizer, special bool) *Decoder {
	return &Decoder{tok: t, special: special}
}

// Write adds one token and returns the text that is now complete; it may be empty.
// The returned slice is the caller's.
func (d *Decoder) Write(id int32) []byte {
	d.pending = append(d.pending, d.tok.TokenToPiece(id, d.special)...)
	cut := completePrefix(d.pending)
	if cut == 0 {
		return nil
	}
	out := make([]byte, cut)
	copy(out, d.pending[:cut])
	d.pending = append(d.pending[:0], d.pending[cut:]...)
	return out
}

// Pending returns how many bytes are held back waiting for the rest of a character.
func (d *Decoder) Pending() int { return len(d.pending) }

// Close returns whatever is still held back (an incomplete sequence, as raw bytes) and
// resets the Decoder for a new stream.
func (d *Decoder) Close() []byte {
	if len(d.pending) == 0 {
		return nil
	}
	out := d.pending
	d.pending = nil
	return out
}

// completePrefix returns the length of the longest prefix of b that does not end inside
// a UTF-8 sequence that could still be completed.
func completePrefix(b []byte) int {
	// A sequence is at most 4 bytes: its start lies in the last 3 bytes if it is incomplete.
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}
