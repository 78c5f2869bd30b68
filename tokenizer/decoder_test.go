package tokenizer

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// byteVocab is a small vocabulary with all 256 byte tokens, "▁" and a few words, so
// that any character outside ASCII letters falls back to byte tokens.
func byteVocab(t *testing.T) *SPM {
	t.Helper()
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{TypeUnknown, TypeControl, TypeControl}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, TypeByte)
	}
	for _, w := range []string{"▁", "a", "b", "h", "i", "▁hi", "hi"} {
		tokens = append(tokens, w)
		types = append(types, TypeNormal)
	}
	v := NewVocab(tokens)
	v.Types = types
	s, err := NewSPM(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDecoderNeverSplitsACharacter feeds a character's bytes token by token: nothing
// comes out until the character is complete, and then all of it at once.
func TestDecoderNeverSplitsACharacter(t *testing.T) {
	s := byteVocab(t)
	cases := []struct {
		name string
		text string
	}{
		{"two-byte", "é"},
		{"three-byte", "語"},
		{"four-byte", "🦙"},
		{"zwj sequence", "👨‍👩‍👧"},
		{"mixed", "hi é語 🦙a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids := s.Tokenize(c.text, false, false)
			d := NewDecoder(s, false)
			var all []byte
			for _, id := range ids {
				chunk := d.Write(id)
				if !utf8.Valid(chunk) {
					t.Fatalf("chunk %q after token %d is not valid UTF-8", chunk, id)
				}
				all = append(all, chunk...)
			}
			if rest := d.Close(); len(rest) != 0 {
				t.Fatalf("Close returned %q for a complete text", rest)
			}
			if want := " " + c.text; string(all) != want {
				t.Fatalf("decoded %q, want %q", all, want)
			}
		})
	}
}

// TestDecoderHoldsBackAndFlushes checks the hold-back rule byte by byte, including
// bytes that can never complete a character (passed through) and an incomplete tail
// (returned by Close).
func TestDecoderHoldsBackAndFlushes(t *testing.T) {
	s := byteVocab(t)
	byteID := func(b byte) int32 { return s.byteTok[b] }
	cases := []struct {
		name    string
		in      []byte
		chunks  []string // what each Write returns
		closing string   // what Close returns
	}{
		{"ascii", []byte("ab"), []string{"a", "b"}, ""},
		{"euro", []byte("€"), []string{"", "", "€"}, ""},
		{"incomplete tail", []byte{'a', 0xE2, 0x82}, []string{"a", "", ""}, "\xe2\x82"},
		{"stray continuation", []byte{0x80, 'a'}, []string{"\x80", "a"}, ""},
		{"bad second byte", []byte{0xE0, 0x80}, []string{"", "\xe0\x80"}, ""},
		{"lead then ascii", []byte{0xC3, 'a'}, []string{"", "\xc3a"}, ""},
		{"invalid lead", []byte{0xFF}, []string{"\xff"}, ""},
		{"surrogate", []byte{0xED, 0xA0, 0x80}, []string{"", "\xed\xa0", "\x80"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(s, false)
			for i, b := range c.in {
				if got := d.Write(byteID(b)); string(got) != c.chunks[i] {
					t.Fatalf("write %d (0x%02X): got %q, want %q", i, b, got, c.chunks[i])
				}
			}
			if got := d.Close(); string(got) != c.closing {
				t.Fatalf("close: got %q, want %q", got, c.closing)
			}
			if d.Pending() != 0 {
				t.Fatalf("%d bytes still pending after Close", d.Pending())
			}
		})
	}
}

// TestDecoderStreamsRealVocabulary streams every test vector through the Llama-2
// vocabulary: each chunk is valid UTF-8 and the chunks add up to the pieces.
func TestDecoderStreamsRealVocabulary(t *testing.T) {
	path := modelFile(t, filepath.Join("vocab", "ggml-vocab-llama-spm.gguf"))
	s := loadGGUFTokenizer(t, path)
	texts := oracleTexts(200)
	n := 0
	for _, text := range texts {
		if !utf8.ValidString(text) {
			continue
		}
		ids := s.Tokenize(text, true, true)
		for _, special := range []bool{false, true} {
			d := NewDecoder(s, special)
			var all, want []byte
			for _, id := range ids {
				want = append(want, s.TokenToPiece(id, special)...)
				chunk := d.Write(id)
				if !utf8.Valid(chunk) {
					t.Fatalf("%q: chunk %q is not valid UTF-8", text, chunk)
				}
				all = append(all, chunk...)
			}
			all = append(all, d.Close()...)
			if !bytes.Equal(all, want) {
				t.Fatalf("%q: streamed %q, pieces %q", text, all, want)
			}
		}
		n++
	}
	t.Logf("%d texts streamed without a broken character", n)
}
