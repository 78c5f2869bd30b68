// Package ucd holds the Unicode character data the reference's tokenizers use, as llama.cpp v0.5.0 defines it in
// src/unicode-data.cpp and reads it in src/unicode.cpp: the code point flags (\p{N}, \p{L}, \p{P}, ..., white space,
// lower/upper case), the lower-case map and the one-code-point NFD map.
//
// # Design record
//
// What: Flags, ToLower and NFD for every code point, and the UTF-8 decoding and encoding rules of unicode.cpp
// (DecodeUTF8 accepts what unicode_cpt_from_utf8 accepts, overlong forms and surrogates included).
//
// Source: tables.go is generated (go generate; the program is ./gen) from the reference's own
// src/unicode-data.cpp, copied entry by entry from the source bundle shipped with the reference
// (node-llama-cpp@3.22.1 llama/gitRelease.bundle), not from Go's unicode package: llama.cpp's tables were made by
// its scripts/gen-unicode-data.py from one Python's unicodedata (a Unicode version Go's tables do not share), with
// its own white-space set and a simplified NFD that keeps only the first code point of a decomposition, which no
// Go library reproduces. The lookups follow unicode.cpp: the flags array built by unicode_cpt_flags_array (range
// flags, then white space, then the is_lowercase / is_uppercase / is_nfd marks set on the *targets* of the maps),
// unicode_tolower's std::lower_bound and unicode_cpts_normalize_nfd's std::upper_bound.
//
// Proof: ucd_test.go compares Flags, ToLower and NFD for all 0x110000 code points with the compiled reference's
// unicode_cpt_flags_from_cpt, unicode_tolower and unicode_cpts_normalize_nfd.
//
// Determinism: the flags array is built once on first use and never changes; everything is safe for concurrent
// use.
package ucd

//go:generate go run ./gen -o tables.go

import "sync"

// Flags is llama.cpp's struct unicode_cpt_flags as a 16-bit value (its as_uint()).
type Flags uint16

// The flag bits, with llama.cpp's values.
const (
	Undefined   Flags = 0x0001
	Number      Flags = 0x0002 // \p{N}
	Letter      Flags = 0x0004 // \p{L}
	Separator   Flags = 0x0008 // \p{Z}
	AccentMark  Flags = 0x0010 // \p{M}
	Punctuation Flags = 0x0020 // \p{P}
	Symbol      Flags = 0x0040 // \p{S}
	Control     Flags = 0x0080 // \p{C}
	// Categories masks the category bits (category_flag()).
	Categories Flags = 0x00FF
	Whitespace Flags = 0x0100 // \s as llama.cpp's splitters test it
	Lowercase  Flags = 0x0200
	Uppercase  Flags = 0x0400
	NFDFlag    Flags = 0x0800
)

// MaxCodepoints is MAX_CODEPOINTS: the flags table covers [0, MaxCodepoints).
const MaxCodepoints = 0x110000

var flagsTable = sync.OnceValue(func() []Flags {
	t := make([]Flags, MaxCodepoints)
	for i := range t {
		t[i] = Undefined
	}
	for i := 1; i < len(rangeStarts); i++ {
		f := Flags(rangeFlags[i-1])
		for c := rangeStarts[i-1]; c < rangeStarts[i] && c < MaxCodepoints; c++ {
			t[c] = f
		}
	}
	for _, c := range whitespace {
		t[c] |= Whitespace
	}
	for _, p := range lowercase {
		t[p[1]] |= Lowercase
	}
	for _, p := range uppercase {
		t[p[1]] |= Uppercase
	}
	for _, r := range nfdRanges {
		t[r[2]] |= NFDFlag
	}
	return t
})

// Table returns the flags of every code point below MaxCodepoints, indexed by code point. The slice is shared and
// must not be modified; callers on a hot path keep it instead of calling Of.
func Table() []Flags { return flagsTable() }

// Of returns unicode_cpt_flags_from_cpt(c): Undefined for c >= MaxCodepoints.
func Of(c uint32) Flags {
	if c >= MaxCodepoints {
		return Undefined
	}
	return flagsTable()[c]
}

// Category returns f's category bits (category_flag()).
func (f Flags) Category() Flags { return f & Categories }

// ToLower returns unicode_tolower(c): the entry found by std::lower_bound on unicode_map_lowercase, else c.
func ToLower(c uint32) uint32 {
	lo, n := 0, len(lowercase)
	for n > 0 { // std::lower_bound: first entry whose code point is not below c
		half := n / 2
		if lowercase[lo+half][0] < c {
			lo += half + 1
			n -= half + 1
		} else {
			n = half
		}
	}
	if lo < len(lowercase) && lowercase[lo][0] == c {
		return lowercase[lo][1]
	}
	return c
}

// NFD returns unicode_cpts_normalize_nfd of one code point: the range found by std::upper_bound on
// unicode_ranges_nfd (by first), minus one; its nfd when c lies in [first, last], else c. The first range is
// {0, 0, 0}, so every c has a range before it.
func NFD(c uint32) uint32 {
	lo, n := 0, len(nfdRanges)
	for n > 0 { // std::upper_bound: first range whose first is above c
		half := n / 2
		if c < nfdRanges[lo+half][0] {
			n = half
		} else {
			lo += half + 1
			n -= half + 1
		}
	}
	r := nfdRanges[lo-1]
	if r[0] <= c && c <= r[1] {
		return r[2]
	}
	return c
}

// IsHan is unicode_cpt_is_han: the CJK ideograph blocks that unicode.cpp lists.
func IsHan(c uint32) bool {
	switch {
	case c >= 0x4E00 && c <= 0x9FFF, c >= 0x3400 && c <= 0x4DBF, c >= 0x20000 && c <= 0x2A6DF,
		c >= 0x2A700 && c <= 0x2B73F, c >= 0x2B740 && c <= 0x2B81F, c >= 0x2B820 && c <= 0x2CEAF,
		c >= 0x2CEB0 && c <= 0x2EBEF, c >= 0xF900 && c <= 0xFAFF, c >= 0x2F800 && c <= 0x2FA1F:
		return true
	}
	return false
}

// Replacement is U+FFFD, which DecodeUTF8 puts for every byte it cannot decode.
const Replacement = 0xFFFD

// DecodeUTF8 is unicode_cpts_from_utf8: the code points of s as llama.cpp decodes them. A lead byte with its
// continuation bytes present (checked only for their 10xxxxxx form) gives the code point its bits spell, so
// overlong forms and surrogates decode, and F5-F7 lead bytes give values above U+10FFFF; any other byte (a stray
// continuation byte, a truncated sequence, F8-FF) gives one U+FFFD and decoding resumes at the next byte. A
// value above U+10FFFF, which EncodeUTF8 (like unicode_cpt_to_utf8) cannot write back, is left for the caller.
func DecodeUTF8(s string, dst []uint32) []uint32 {
	for i := 0; i < len(s); {
		c, n := decodeOne(s, i)
		dst = append(dst, c)
		i += n
	}
	return dst
}

// decodeOne is unicode_cpt_from_utf8 at offset i, with the exception turned into (U+FFFD, 1).
func decodeOne(s string, i int) (uint32, int) {
	b0 := s[i]
	cont := func(k int) bool { return i+k < len(s) && s[i+k]&0xC0 == 0x80 }
	switch {
	case b0&0x80 == 0:
		return uint32(b0), 1
	case b0&0x40 == 0:
		return Replacement, 1
	case b0&0x20 == 0:
		if !cont(1) {
			return Replacement, 1
		}
		return uint32(b0&0x1F)<<6 | uint32(s[i+1]&0x3F), 2
	case b0&0x10 == 0:
		if !cont(1) || !cont(2) {
			return Replacement, 1
		}
		return uint32(b0&0x0F)<<12 | uint32(s[i+1]&0x3F)<<6 | uint32(s[i+2]&0x3F), 3
	case b0&0x08 == 0:
		if !cont(1) || !cont(2) || !cont(3) {
			return Replacement, 1
		}
		return uint32(b0&0x07)<<18 | uint32(s[i+1]&0x3F)<<12 | uint32(s[i+2]&0x3F)<<6 | uint32(s[i+3]&0x3F), 4
	}
	return Replacement, 1
}

// AppendUTF8 is unicode_cpt_to_utf8: the 1- to 4-byte form of c (surrogates included). ok is false for c above
// U+10FFFF, where llama.cpp throws std::invalid_argument.
func AppendUTF8(dst []byte, c uint32) (out []byte, ok bool) {
	switch {
	case c <= 0x7F:
		return append(dst, byte(c)), true
	case c <= 0x7FF:
		return append(dst, 0xC0|byte(c>>6&0x1F), 0x80|byte(c&0x3F)), true
	case c <= 0xFFFF:
		return append(dst, 0xE0|byte(c>>12&0x0F), 0x80|byte(c>>6&0x3F), 0x80|byte(c&0x3F)), true
	case c <= 0x10FFFF:
		return append(dst, 0xF0|byte(c>>18&0x07), 0x80|byte(c>>12&0x3F), 0x80|byte(c>>6&0x3F), 0x80|byte(c&0x3F)), true
	}
	return dst, false
}
