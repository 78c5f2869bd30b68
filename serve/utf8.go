package serve

import (
	"strings"
	"unicode/utf8"
)

// The text of an answer is bytes the model generated, which need not be UTF-8: an answer cut by max_tokens
// inside a character ends in part of one, and byte tokens can make any sequence. JSON strings are UTF-8,
// so every server replaces the bad bytes; these functions give the bytes llama-server's JSON carries, so
// that a client decodes the same text from bankml and from llama-server and the receipt's response_sha256
// (of the text as decoded) is the same.

// jsonText is s as llama-server's JSON carries it (safe_json_to_str: nlohmann's dump with
// error_handler_t::replace, vendor/nlohmann/json.hpp serializer::dump_escaped): valid UTF-8 is kept and each
// maximal ill-formed subsequence becomes one U+FFFD — a byte that cannot start a sequence is one; a lead
// byte with the continuation bytes that fit it, up to the first byte that does not (which is read again),
// is one; a sequence cut by the end of s is one. (Unicode's "maximal subpart" practice, §3.9 U+FFFD
// substitution; the bytes nlohmann's UTF-8 automaton accepts are exactly well-formed UTF-8.) Go's
// encoding/json instead writes one U+FFFD per bad byte: three for the first three bytes of a 4-byte
// character, where llama-server writes one.
func jsonText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			b.WriteByte(s[i])
			i++
			continue
		}
		if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		i += maximalSubpart(s[i:])
		b.WriteString("\uFFFD")
	}
	return b.String()
}

// maximalSubpart is the length (at least 1) of the ill-formed sequence at the start of s: its lead byte
// and the bytes after it that could still continue a well-formed sequence (RFC 3629's table: E0 takes
// A0..BF next, ED 80..9F, F0 90..BF, F4 80..8F, the other leads 80..BF; later bytes 80..BF).
func maximalSubpart(s string) int {
	c := s[0]
	var n int            // the sequence's length
	lo, hi := 0x80, 0xBF // the range of the byte after the lead
	switch {
	case c >= 0xC2 && c <= 0xDF:
		n = 2
	case c == 0xE0:
		n, lo = 3, 0xA0
	case c == 0xED:
		n, hi = 3, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		n = 3
	case c == 0xF0:
		n, lo = 4, 0x90
	case c == 0xF4:
		n, hi = 4, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		n = 4
	default: // 80..C1, F5..FF: never a lead byte
		return 1
	}
	k := 1
	for ; k < n && k < len(s); k++ {
		if int(s[k]) < lo || int(s[k]) > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return k
}

// chatText is the content llama-server's /v1/chat/completions sends for generated text s (without reasoning
// or tool-call markup: bankml sends the whole text as content), as its chat parser makes it
// (common_chat_parse: the content parser's until-loop over common_parse_utf8_codepoint, common/peg-parser.cpp,
// with the lenient flag it always sets) and its JSON then carries it (jsonText): a sequence cut by the end
// of the text is dropped (the parser waits for more input that never comes), and each sequence
// common_parse_utf8_codepoint calls invalid becomes one U+FFFD (common_peg_ast_node::sanitized_text); what
// that lax decoder lets through (an overlong or surrogate form, a lead byte past F4) is replaced by
// jsonText.
func chatText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		n, ok := parseCodepoint(s[i:])
		switch {
		case n == 0: // cut by the end: the parser stops before it
			return jsonText(b.String())
		case !ok:
			b.WriteString("\uFFFD")
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return jsonText(b.String())
}

// parseCodepoint is common_parse_utf8_codepoint (common/unicode.cpp) on the start of s: the bytes of one
// code point and true; the bytes consumed by an invalid one (a continuation byte, or a lead byte and the
// continuation bytes before the first byte that is not one) and false; or 0 when s ends inside a sequence.
// It checks only the bit patterns (110xxxxx 10xxxxxx, ...), not overlong or surrogate forms; a byte
// 11111xxx is invalid alone.
func parseCodepoint(s string) (int, bool) {
	c := s[0]
	var n int
	switch {
	case c < 0x80:
		return 1, true
	case c&0x40 == 0: // 10xxxxxx: a continuation byte first
		return 1, false
	case c&0x20 == 0:
		n = 2
	case c&0x10 == 0:
		n = 3
	case c&0x08 == 0:
		n = 4
	default:
		return 1, false
	}
	for k := 1; k < n; k++ {
		if k >= len(s) {
			return 0, false
		}
		if s[k]&0xC0 != 0x80 {
			return k, false
		}
	}
	return n, true
}
