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

// splitGPT2 is unicode_regex_split_custom_gpt2:
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(s *span) {
	for pos := s.ini; pos < s.end; {
		c := s.cpt(pos)
		f := s.flags(pos)
		if c == '\'' && pos+1 < s.end {
			next := s.cpt(pos + 1)
			if isContraction1(next) {
				pos += s.add(pos + 2)
				continue
			}
			if pos+2 < s.end && isContraction2(next, s.cpt(pos+2)) {
				pos += s.add(pos + 3)
				continue
			}
		}
		f2 := f
		if c == ' ' {
			f2 = s.flags(pos + 1)
		}
		if f2&ucd.Letter != 0 {
			if c == ' ' {
				pos++
			}
			for f2&ucd.Letter != 0 {
				pos++
				f2 = s.flags(pos)
			}
			s.add(pos)
			continue
		}
		if f2&ucd.Number != 0 {
			if c == ' ' {
				pos++
			}
			for f2&ucd.Number != 0 {
				pos++
				f2 = s.flags(pos)
			}
			s.add(pos)
			continue
		}
		if f2&wsLN == 0 && f2 != 0 {
			if c == ' ' {
				pos++
			}
			for f2&wsLN == 0 && f2 != 0 {
				pos++
				f2 = s.flags(pos)
			}
			s.add(pos)
			continue
		}
		nws := 0
		for s.flags(pos+nws)&ucd.Whitespace != 0 {
			nws++
		}
		if nws > 1 && s.cpt(pos+nws) != outOfRange {
			pos += nws - 1
			s.add(pos)
			continue
		}
		if nws > 0 {
			pos += nws
			s.add(pos)
			continue
		}
		pos++
		s.add(pos)
	}
}

// splitLlama3Like is unicode_regex_split_custom_llama3 (digits = 3: \p{N}{1,3}), _qwen2 (digits = 1: \p{N}) and
// _qwen35 (marks: letter runs also take \p{M}, and the punctuation run excludes it):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitLlama3Like(s *span, digits int, marks bool) {
	letter := ucd.Letter
	if marks {
		letter |= ucd.AccentMark
	}
	punctOut := wsLN
	if marks {
		punctOut |= ucd.AccentMark
	}
	for pos := s.ini; pos < s.end; {
		c := s.cpt(pos)
		f := s.flags(pos)
		if c == '\'' && pos+1 < s.end {
			next := ucd.ToLower(s.cpt(pos + 1))
			if isContraction1(next) {
				pos += s.add(pos + 2)
				continue
			}
			if pos+2 < s.end && isContraction2(next, ucd.ToLower(s.cpt(pos+2))) {
				pos += s.add(pos + 3)
				continue
			}
		}
		if !(c == '\r' || c == '\n' || f&ucd.Number != 0) {
			if f&letter != 0 || s.flags(pos+1)&letter != 0 {
				pos++
				for s.flags(pos)&letter != 0 {
					pos++
				}
				s.add(pos)
				continue
			}
		}
		if f&ucd.Number != 0 {
			if digits == 1 {
				pos++
				s.add(pos)
				continue
			}
			ini := pos
			for s.flags(pos)&ucd.Number != 0 {
				pos++
				if pos-ini >= digits {
					s.add(pos)
					ini = pos
				}
			}
			s.add(pos)
			continue
		}
		f2 := f
		if c == ' ' {
			f2 = s.flags(pos + 1)
		}
		if f2&punctOut == 0 && f != 0 {
			if c == ' ' {
				pos++
			}
			for f2&punctOut == 0 && f2 != 0 {
				pos++
				f2 = s.flags(pos)
			}
			for c2 := s.cpt(pos); c2 == '\r' || c2 == '\n'; c2 = s.cpt(pos) {
				pos++
			}
			s.add(pos)
			continue
		}
		nws, lastRN := 0, 0
		for s.flags(pos+nws)&ucd.Whitespace != 0 {
			if c2 := s.cpt(pos + nws); c2 == '\r' || c2 == '\n' {
				lastRN = pos + nws + 1
			}
			nws++
		}
		if lastRN > 0 {
			pos = lastRN
			s.add(pos)
			continue
		}
		if nws > 1 && s.cpt(pos+nws) != outOfRange {
			pos += nws - 1
			s.add(pos)
			continue
		}
		if nws > 0 {
			pos += nws
			s.add(pos)
			continue
		}
		pos++
		s.add(pos)
	}
}

// splitKimiK2 is unicode_regex_split_custom_kimi_k2 (the K2 pattern with Han runs split first).
func splitKimiK2(s *span) {
	han := func(p int) bool { return ucd.IsHan(s.cpt(p)) }
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
		isLetterPattern := (f&ucd.Letter != 0 && !ucd.IsHan(c)) ||
			(!(c == '\r' || c == '\n' || f&ucd.Letter != 0 || f&ucd.Number != 0) &&
				s.flags(pos+1)&ucd.Letter != 0 && !han(pos+1))
		if isLetterPattern {
			leading := false
			if !(c == '\r' || c == '\n' || f&ucd.Letter != 0 || f&ucd.Number != 0) {
				leading = true
				pos++
			}
			letters := false
			for s.flags(pos)&ucd.Letter != 0 && !han(pos) {
				letters = true
				pos++
			}
			if letters || (!leading && s.flags(pos)&ucd.Letter != 0 && !han(pos)) {
				if !letters {
					pos++
				}
				for s.flags(pos)&ucd.Letter != 0 && !han(pos) {
					pos++
				}
				if s.cpt(pos) == '\'' && pos+1 < s.end {
					next := ucd.ToLower(s.cpt(pos + 1))
					if isContraction1(next) {
						pos += 2
					} else if pos+2 < s.end && isContraction2(next, ucd.ToLower(s.cpt(pos+2))) {
						pos += 3
					}
				}
				s.add(pos)
				continue
			} else if leading {
				pos--
			}
		}
		if f&ucd.Number != 0 {
			ini := pos
			for s.flags(pos)&ucd.Number != 0 {
				pos++
				if pos-ini >= 3 {
					s.add(pos)
					ini = pos
				}
			}
			s.add(pos)
			continue
		}
		f2 := f
		if c == ' ' {
			f2 = s.flags(pos + 1)
		}
		if f2&wsLN == 0 && f2 != 0 {
			if c == ' ' {
				pos++
			}
			for f2&wsLN == 0 && f2 != 0 {
				pos++
				f2 = s.flags(pos)
			}
			for c2 := s.cpt(pos); c2 == '\r' || c2 == '\n'; c2 = s.cpt(pos) {
				pos++
			}
			s.add(pos)
			continue
		}
		nws, lastRN := 0, 0
		for s.flags(pos+nws)&ucd.Whitespace != 0 {
			if c2 := s.cpt(pos + nws); c2 == '\r' || c2 == '\n' {
				lastRN = pos + nws + 1
			}
			nws++
		}
		if lastRN > 0 {
			pos = lastRN
			s.add(pos)
			continue
		}
		if nws > 1 && s.cpt(pos+nws) != outOfRange {
			pos += nws - 1
			s.add(pos)
			continue
		}
		if nws > 0 {
			pos += nws
			s.add(pos)
			continue
		}
		pos++
		s.add(pos)
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
