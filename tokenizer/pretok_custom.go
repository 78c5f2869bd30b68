package tokenizer

import "github.com/bankml/bankml/tokenizer/internal/ucd"

// The hand-written splitters of llama.cpp's src/unicode.cpp (unicode_regex_split_custom_*), which llama.cpp uses
// instead of std::regex for the regular expressions they stand for. Each is written after the C++ function of the
// same name, test for test, including where it differs from what its regular expression would match (the "llama3"
// and "qwen2" splitters test the current character's flags, not the next one's, before a punctuation run); the
// oracle tests compare the resulting tokens with the reference.

// outOfRange is the value _get_cpt gives outside the span (OUT_OF_RANGE).
const outOfRange = 0xFFFFFFFF

// span is one offset range [ini, end) of the code points being split, with the _get_cpt / _get_flags /
// _add_token helpers of the C++ splitters.
type span struct {
	cpts     []uint32
	tab      []ucd.Flags
	ini, end int
	prevEnd  int
	out      []int
}

func (s *span) cpt(p int) uint32 {
	if p >= s.ini && p < s.end {
		return s.cpts[p]
	}
	return outOfRange
}

func (s *span) flags(p int) ucd.Flags {
	if p >= s.ini && p < s.end {
		if c := s.cpts[p]; c < ucd.MaxCodepoints {
			return s.tab[c]
		}
		return ucd.Undefined
	}
	return 0
}

// add is _add_token: emit [prevEnd, end) when not empty; return its length.
func (s *span) add(end int) int {
	n := end - s.prevEnd
	if n > 0 {
		s.out = append(s.out, n)
	}
	s.prevEnd = end
	return n
}

func isContraction1(c uint32) bool { return c == 's' || c == 't' || c == 'm' || c == 'd' }

func isContraction2(c, d uint32) bool {
	return (c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')
}

const wsLN = ucd.Whitespace | ucd.Letter | ucd.Number

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at pos (within the span, as the C++ bounds it): the length, or 0.
// lower applies unicode_tolower to the letters first (the (?i:...) splitters).
func (s *span) contraction(pos int, lower bool) int {
	if s.cpt(pos) != '\'' || pos+1 >= s.end {
		return 0
	}
	low := func(c uint32) uint32 {
		if lower {
			return ucd.ToLower(c)
		}
		return c
	}
	next := low(s.cpt(pos + 1))
	if isContraction1(next) {
		return 2
	}
	if pos+2 < s.end && isContraction2(next, low(s.cpt(pos+2))) {
		return 3
	}
	return 0
}

// run extends a run from pos while the flags have one of in: the end of the run.
func (s *span) run(pos int, in ucd.Flags) int {
	for s.flags(pos)&in != 0 {
		pos++
	}
	return pos
}

// digitGroups is \p{N}{1,n} repeated from pos: it emits a token every n digits and one for the rest; the end.
func (s *span) digitGroups(pos, n int) int {
	ini := pos
	for s.flags(pos)&ucd.Number != 0 {
		pos++
		if pos-ini >= n {
			s.add(pos)
			ini = pos
		}
	}
	s.add(pos)
	return pos
}

// punctRun is " ?[^\s...]+" from pos, where the caller has decided it matches: a space c is taken, then every
// character whose flags are non-zero and outside out; crlf then takes [\r\n]*. It emits the token; the end.
func (s *span) punctRun(pos int, c uint32, f2, out ucd.Flags, crlf bool) int {
	if c == ' ' {
		pos++
	}
	for f2&out == 0 && f2 != 0 {
		pos++
		f2 = s.flags(pos)
	}
	if crlf {
		for c2 := s.cpt(pos); c2 == '\r' || c2 == '\n'; c2 = s.cpt(pos) {
			pos++
		}
	}
	s.add(pos)
	return pos
}

// whitespace is the splitters' tail at pos: \s*[\r\n]+ (with crlf), then \s+(?!\S), then \s+, else one
// character alone. It emits the token; the end.
func (s *span) whitespace(pos int, crlf bool) int {
	nws, lastRN := 0, 0
	for s.flags(pos+nws)&ucd.Whitespace != 0 {
		if c2 := s.cpt(pos + nws); crlf && (c2 == '\r' || c2 == '\n') {
			lastRN = pos + nws + 1
		}
		nws++
	}
	switch {
	case lastRN > 0:
		pos = lastRN
	case nws > 1 && s.cpt(pos+nws) != outOfRange:
		pos += nws - 1
	case nws > 0:
		pos += nws
	default:
		pos++
	}
	s.add(pos)
	return pos
}

// splitGPT2 is unicode_regex_split_custom_gpt2:
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(s *span) {
	for pos := s.ini; pos < s.end; {
		if n := s.contraction(pos, false); n > 0 {
			pos += s.add(pos + n)
			continue
		}
		c := s.cpt(pos)
		f2 := s.flags(pos)
		if c == ' ' {
			f2 = s.flags(pos + 1)
		}
		skip := 0
		if c == ' ' {
			skip = 1
		}
		switch {
		case f2&ucd.Letter != 0:
			pos = s.run(pos+skip, ucd.Letter)
			s.add(pos)
		case f2&ucd.Number != 0:
			pos = s.run(pos+skip, ucd.Number)
			s.add(pos)
		case f2&wsLN == 0 && f2 != 0:
			pos = s.punctRun(pos, c, f2, wsLN, false)
		default:
			pos = s.whitespace(pos, false)
		}
	}
}

// splitLlama3Like is unicode_regex_split_custom_llama3 (digits = 3: \p{N}{1,3}), _qwen2 (digits = 1: \p{N}) and
// _qwen35 (marks: letter runs also take \p{M}, and the punctuation run excludes it):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Before the punctuation run it tests the current character's flags for being non-zero, not the next one's, as
// the C++ does.
func splitLlama3Like(s *span, digits int, marks bool) {
	letter, punctOut := ucd.Letter, wsLN
	if marks {
		letter |= ucd.AccentMark
		punctOut |= ucd.AccentMark
	}
	for pos := s.ini; pos < s.end; {
		if n := s.contraction(pos, true); n > 0 {
			pos += s.add(pos + n)
			continue
		}
		c := s.cpt(pos)
		f := s.flags(pos)
		if !(c == '\r' || c == '\n' || f&ucd.Number != 0) && (f&letter != 0 || s.flags(pos+1)&letter != 0) {
			pos = s.run(pos+1, letter)
			s.add(pos)
			continue
		}
		if f&ucd.Number != 0 {
			pos = s.digitGroups(pos, digits)
			continue
		}
		f2 := f
		if c == ' ' {
			f2 = s.flags(pos + 1)
		}
		if f2&punctOut == 0 && f != 0 {
			pos = s.punctRun(pos, c, f2, punctOut, true)
			continue
		}
		pos = s.whitespace(pos, true)
	}
}

// splitKimiK2 is unicode_regex_split_custom_kimi_k2 (the K2 pattern with Han runs split first).
func splitKimiK2(s *span) {
	han := func(p int) bool { return ucd.IsHan(s.cpt(p)) }
	letterNotHan := func(p int) bool { return s.flags(p)&ucd.Letter != 0 && !han(p) }
	for pos := s.ini; pos < s.end; {
		c := s.cpt(pos)
		f := s.flags(pos)
		if ucd.IsHan(c) {
			for han(pos) {
				pos++
			}
			s.add(pos)
			continue
		}
		leadable := !(c == '\r' || c == '\n' || f&ucd.Letter != 0 || f&ucd.Number != 0)
		if (f&ucd.Letter != 0 && !ucd.IsHan(c)) || (leadable && letterNotHan(pos+1)) {
			if leadable {
				pos++
			}
			letters := false
			for letterNotHan(pos) {
				letters = true
				pos++
			}
			if letters || (!leadable && letterNotHan(pos)) {
				if !letters {
					pos++
				}
				for letterNotHan(pos) {
					pos++
				}
				if s.cpt(pos) == '\'' && pos+1 < s.end {
					pos += s.contraction(pos, true)
				}
				s.add(pos)
				continue
			} else if leadable {
				pos--
			}
		}
		if f&ucd.Number != 0 {
			pos = s.digitGroups(pos, 3)
			continue
		}
		f2 := f
		if c == ' ' {
			f2 = s.flags(pos + 1)
		}
		if f2&wsLN == 0 && f2 != 0 {
			pos = s.punctRun(pos, c, f2, wsLN, true)
			continue
		}
		pos = s.whitespace(pos, true)
	}
}

// splitAFMoE is unicode_regex_split_custom_afmoe: runs of digits are cut into a leading group of (length mod 3)
// digits, then groups of 3; everything between digit runs is left joined.
func splitAFMoE(s *span) {
	for pos := s.ini; pos < s.end; {
		if s.flags(pos)&ucd.Number == 0 {
			pos++
			continue
		}
		start, n := pos, 0
		for s.flags(pos)&ucd.Number != 0 && pos < s.end {
			n++
			pos++
		}
		cur := start
		if r := n % 3; r > 0 {
			s.add(cur + r)
			cur += r
		}
		for cur < start+n {
			s.add(cur + 3)
			cur += 3
		}
	}
	if s.prevEnd < s.end {
		s.add(s.end)
	}
}

// splitNewlines is unicode_regex_split_custom_newlines: [^\n]+|[\n]+.
func splitNewlines(s *span) {
	for pos := s.ini; pos < s.end; {
		nl := s.cpts[pos] == '\n'
		start := pos
		for pos < s.end && (s.cpts[pos] == '\n') == nl {
			pos++
		}
		s.out = append(s.out, pos-start)
	}
}
