package engine

import "strings"

// stopper is the text side of llama-server's process_token: the generated
// text, how much of it was released, and the stop-string search.
type stopper struct {
	stops   []string
	text    []byte // generated_text
	sent    int    // n_sent_text
	word    string // stopping_word
	stopped bool   // STOP_TYPE_WORD
}

// add appends a token's piece and returns the text released with it
// (text_to_send) and whether the generated text now ends inside a UTF-8
// sequence (then nothing is released and nothing is searched). eog says
// whether the token ends generation (no partial-stop hold-back then).
func (s *stopper) add(piece string, eog bool) (send string, pending bool) {
	s.text = append(s.text, piece...)
	if validUTF8Prefix(s.text) < len(s.text) {
		return "", true
	}
	pos := min(s.sent, len(s.text))
	test := string(s.text[pos:])
	release := true
	if at := s.findFull(test, len(piece)); at >= 0 {
		s.text = s.text[:pos+at]
		pos = min(s.sent, len(s.text))
	} else if !eog {
		release = findPartialStops(test, s.stops) < 0
	}
	if !release {
		return "", false
	}
	out := string(s.text[pos:])
	s.sent += len(out)
	return out, false
}

// findFull is find_stopping_strings(text, last_token_size, true): the
// earliest occurrence of a stop string starting no earlier than its length
// plus the last piece's length from the end (the first stop string listed
// wins a tie); it records the word. -1 when none.
func (s *stopper) findFull(text string, lastPiece int) int {
	best := -1
	for _, w := range s.stops {
		from := 0
		if n := len(w) + lastPiece; len(text) > n {
			from = len(text) - n
		}
		i := strings.Index(text[from:], w)
		if i < 0 {
			continue
		}
		if i += from; best < 0 || i < best {
			best, s.word, s.stopped = i, w, true
		}
	}
	return best
}

// findPartialStops is find_stopping_strings(text, _, false): the earliest
// position at which a suffix of text is a prefix of some stop string
// (string_find_partial_stop for each), or -1.
func findPartialStops(text string, stops []string) int {
	best := -1
	for _, w := range stops {
		if i := findPartialStop(text, w); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}

// findPartialStop is common.h's string_find_partial_stop: the start of the
// longest suffix of str (at most len(stop) bytes) that is a prefix of stop,
// or -1.
func findPartialStop(str, stop string) int {
	if str == "" || stop == "" {
		return -1
	}
	last := str[len(str)-1]
	for n := min(len(str), len(stop)); n > 0; n-- {
		if stop[n-1] == last && strings.HasSuffix(str, stop[:n]) {
			return len(str) - n
		}
	}
	return -1
}

// validUTF8Prefix is llama-server's validate_utf8 (server-common.cpp): the
// length of text without a multi-byte sequence cut off at its end, judged
// from the lead bytes among the last four bytes only.
func validUTF8Prefix(text []byte) int {
	n := len(text)
	for i := 1; i <= 4 && i <= n; i++ {
		c := text[n-i]
		switch {
		case c&0xE0 == 0xC0:
			if i < 2 {
				return n - i
			}
		case c&0xF0 == 0xE0:
			if i < 3 {
				return n - i
			}
		case c&0xF8 == 0xF0:
			if i < 4 {
				return n - i
			}
		}
	}
	return n
}
