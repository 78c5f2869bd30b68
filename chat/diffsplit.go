package chat

import "strings"

// The text helpers of llama.cpp's template analysis (common/chat-auto-parser-helpers.cpp).

// trimLeadingWhitespace is trim_leading_whitespace.
func trimLeadingWhitespace(s string) string {
	i := 0
	for i < len(s) && cIsSpace(s[i]) {
		i++
	}
	return s[i:]
}

// segType is a segment's type: a marker (text between < and >, or [ and ]) or the text around markers.
type segType uint8

const (
	segText segType = iota
	segMarker
)

type segment struct {
	typ   segType
	value string
}

// segmentizeMarkers is segmentize_markers: the text cut into markers and the text between them.
func segmentizeMarkers(text string) []segment {
	var out []segment
	inMarker := false
	var opener byte
	last := 0
	for pos := 0; pos < len(text); pos++ {
		c := text[pos]
		switch {
		case !inMarker && (c == '<' || c == '['):
			if last < pos {
				out = append(out, segment{segText, text[last:pos]})
			}
			last, inMarker, opener = pos, true, c
		case inMarker && ((opener == '<' && c == '>') || (opener == '[' && c == ']')):
			out = append(out, segment{segMarker, text[last : pos+1]})
			last, inMarker, opener = pos+1, false, 0
		}
	}
	if last < len(text) {
		out = append(out, segment{segText, text[last:]})
	}
	return out
}

// pruneWhitespaceSegments drops the segments that are only white space.
func pruneWhitespaceSegments(segs []segment) []segment {
	var out []segment
	for _, s := range segs {
		if trimWhitespace(s.value) != "" {
			out = append(out, s)
		}
	}
	return out
}

// diffSplit is a comparison of two renders: the common prefix and suffix (aligned to markers) and what differs.
type diffSplit struct {
	prefix, suffix, left, right string
}

func commonPrefixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func commonSuffixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}

// calculateDiffSplit is calculate_diff_split: the longest common prefix and suffix of left and right taken by
// whole segments, then by bytes inside text segments, and the differing middles.
func calculateDiffSplit(left, right string) diffSplit {
	var r diffSplit
	ls, rs := segmentizeMarkers(left), segmentizeMarkers(right)
	if len(ls) == 0 {
		r.right = right
		return r
	}
	if len(rs) == 0 {
		r.left = left
		return r
	}
	lStart, lEnd := 0, len(ls)-1
	rStart, rEnd := 0, len(rs)-1
	lDone, rDone := false, false
	for lStart != lEnd && rStart != rEnd {
		advanced := false
		if ls[lStart] == rs[rStart] {
			r.prefix += ls[lStart].value
			lStart++
			rStart++
			advanced = true
		}
		if ls[lEnd] == rs[rEnd] {
			r.suffix = ls[lEnd].value + r.suffix
			if lStart != lEnd {
				lEnd--
			} else {
				lDone = true
			}
			if rStart != rEnd {
				rEnd--
			} else {
				rDone = true
			}
			advanced = true
		}
		if !advanced {
			break
		}
	}
	switch {
	case lStart == lEnd && rStart != rEnd:
		if ls[lStart] == rs[rEnd] {
			r.suffix = rs[rEnd].value + r.suffix
			rEnd--
			lDone = true
		} else if ls[lStart] == rs[rStart] {
			r.prefix += rs[rStart].value
			rStart++
			lDone = true
		}
	case rStart == rEnd && lStart != lEnd:
		if ls[lEnd] == rs[rStart] {
			r.suffix = ls[lEnd].value + r.suffix
			lEnd--
			rDone = true
		} else if ls[lStart] == rs[rStart] {
			r.prefix += ls[lStart].value
			lStart++
			rDone = true
		}
	case lStart == lEnd && rStart == rEnd && ls[lStart] == rs[rStart] && ls[lStart].typ == segMarker:
		r.prefix += rs[rStart].value
		lDone, rDone = true, true
	}
	textSuffix := ls[lEnd].typ == segText && rs[rEnd].typ == segText
	textPrefix := rs[rStart].typ == segText && ls[lStart].typ == segText
	join := func(segs []segment, from, to int, done bool) string {
		if !done {
			to++
		}
		var b strings.Builder
		for i := from; i < to; i++ {
			b.WriteString(segs[i].value)
		}
		return b.String()
	}
	remL := join(ls, lStart, lEnd, lDone)
	remR := join(rs, rStart, rEnd, rDone)
	suf := 0
	if textSuffix {
		suf = commonSuffixLen(remL, remR)
	}
	pre := 0
	if textPrefix {
		pre = commonPrefixLen(remL[:len(remL)-suf], remR[:len(remR)-suf])
	}
	r.prefix += remL[:pre]
	r.suffix = remL[len(remL)-suf:] + r.suffix
	r.left = remL[pre : len(remL)-suf]
	r.right = remR[pre : len(remR)-suf]
	if r.left == "" && r.right == "" {
		r.prefix, r.suffix = left, ""
	}
	if r.left == "" && r.right != "" && len(left) <= len(right) && right[:len(left)] == left {
		r.prefix, r.suffix, r.right = left, "", right[len(left):]
	}
	return r
}

// untilCommonPrefix is until_common_prefix: full up to the first occurrence of the common prefix of left and
// right ("" when they share none or full lacks it).
func untilCommonPrefix(full, left, right string) string {
	n := commonPrefixLen(left, right)
	if n == 0 {
		return ""
	}
	pos := strings.Index(full, left[:n])
	if pos < 0 {
		return ""
	}
	return full[:pos]
}

// afterCommonSuffix is after_common_suffix: full after the last occurrence of the common suffix of left and right.
func afterCommonSuffix(full, left, right string) string {
	n := commonSuffixLen(left, right)
	if n == 0 {
		return ""
	}
	pos := strings.LastIndex(full, left[len(left)-n:])
	if pos < 0 {
		return ""
	}
	return full[pos+n:]
}
