// Package stdregex matches regular expressions as the reference's std::regex does (libstdc++'s ECMAScript
// basic_regex and its depth-first executor), as llama.cpp's unicode_regex_split_stl iterates them.
//
// # Design record
//
// Modes: narrow characters (std::regex on llama.cpp's "collapsed" text, one signed char per code point) or wide
// ones (std::wregex, 32-bit wchar_t); flags optimize | nosubs, no icase, no collate.
//
// What: Compile parses a pattern given as characters (code points, or signed chars in Narrow mode); Split returns
// the piece lengths unicode_regex_split_stl produces for one span of text: every match and every gap between
// matches, in order, empty matches included.
//
// Source followed: libstdc++'s <regex> (bits/regex_scanner.tcc, regex_compiler.tcc, regex_executor.tcc,
// regex.tcc's regex_iterator::operator++) for the ECMAScript subset the pre-tokenizers use: alternation, groups
// (capturing groups behave as (?:...), since nosubs), (?=...) and (?!...) (atomic, as libstdc++ runs them in a
// sub-executor), greedy and lazy *, +, ?, {n}, {n,}, {n,m} (expanded into nested optional copies as
// _Compiler::_M_quantifier does), bracket expressions with ranges, negation and the class escapes \d \s \w (and
// their negations), ., ^, $ (not multiline), \b, \B and the character escapes \n \r \t \f \v \0 \xHH \uHHHH \cX.
// The matcher is a backtracking machine that explores alternatives in the same priority order as libstdc++'s DFS
// executor (greedy: one more repetition first; alternation: left first) and returns the first match found, which
// is what the ECMAScript executor returns. Character classes use the "C" locale, as the reference's regex traits
// do: \s is space, \t \n \v \f \r; \d is 0-9; \w is [0-9A-Za-z_]; a narrow character is compared as a signed char.
//
// Deliberate differences: what the pre-tokenizers never use is refused by Compile with an error naming it
// (back-references, POSIX [:classes:] in brackets, a repetition whose body can match the empty string, where
// libstdc++ has its own loop rules); there is no recursion-depth limit (libstdc++'s recursive executor can
// overflow its stack on very long matches; this matcher cannot).
//
// Determinism: a Regexp is immutable and safe for concurrent use.
package stdregex

import (
	"errors"
	"fmt"
	"strconv"
)

// Mode says what a character is.
type Mode int

const (
	// Narrow is std::regex over char: characters are signed bytes (-128..127); classes hold only ASCII.
	Narrow Mode = iota
	// Wide is std::wregex over wchar_t (32-bit): characters are code points.
	Wide
)

type opcode uint8

const (
	opChar opcode = iota
	opClass
	opAny
	opSplit // try x, then y
	opJmp
	opBol
	opEol
	opWordB
	opNotWordB
	opLook
	opMatch
)

type inst struct {
	op   opcode
	neg  bool // opLook: negative lookahead
	c    int32
	x, y int
	cls  *class
	sub  []inst // opLook: the lookahead's program (ends in opMatch)
}

// Regexp is a compiled pattern.
type Regexp struct {
	prog []inst
	mode Mode
}

// class is a bracket expression or a class escape: characters and ranges, "C"-locale classes, and their negation.
type class struct {
	ranges  [][2]int32 // inclusive
	classes []byte     // 'd', 's', 'w' (members)
	negCls  []byte     // 'd', 's', 'w' (non-members count: \D \S \W inside brackets)
	negate  bool
}

func isCtype(k byte, c int32) bool {
	switch k {
	case 'd':
		return c >= '0' && c <= '9'
	case 's':
		return c == ' ' || (c >= '\t' && c <= '\r')
	case 'w':
		return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	return false
}

func (k *class) matches(c int32) bool {
	in := false
	for _, r := range k.ranges {
		if r[0] <= c && c <= r[1] {
			in = true
			break
		}
	}
	if !in {
		for _, n := range k.classes {
			if isCtype(n, c) {
				in = true
				break
			}
		}
	}
	if !in {
		for _, n := range k.negCls {
			if !isCtype(n, c) {
				in = true
				break
			}
		}
	}
	return in != k.negate
}

// ErrUnsupported is wrapped by Compile's errors for valid ECMAScript this package does not implement.
var ErrUnsupported = errors.New("stdregex: unsupported")

// Compile parses pattern (one element per pattern character: a code point in Wide mode, a signed char in Narrow
// mode) with the ECMAScript grammar. A malformed pattern is an error, as std::regex_error would be.
func Compile(pattern []int32, mode Mode) (*Regexp, error) {
	p := &parser{s: pattern}
	n, err := p.alternation()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.s) {
		return nil, fmt.Errorf("stdregex: unexpected %q at %d", rune(p.s[p.i]), p.i)
	}
	prog, err := compileNode(n)
	if err != nil {
		return nil, err
	}
	return &Regexp{prog: append(prog, inst{op: opMatch}), mode: mode}, nil
}

// Chars converts a Go string to pattern or text characters: its bytes as signed chars (Narrow) or its code points
// (Wide; the string must be valid UTF-8).
func Chars(s string, mode Mode) []int32 {
	var out []int32
	if mode == Narrow {
		for i := 0; i < len(s); i++ {
			out = append(out, int32(int8(s[i])))
		}
		return out
	}
	for _, r := range s {
		out = append(out, r)
	}
	return out
}

// ---- parser ----

type nodeKind uint8

const (
	nChar nodeKind = iota
	nClass
	nAny
	nBol
	nEol
	nWordB
	nNotWordB
	nConcat
	nAlt
	nRepeat
	nLook
	nEmpty
)

type node struct {
	kind     nodeKind
	c        int32
	cls      *class
	subs     []*node
	min, max int // nRepeat; max -1 = unbounded
	lazy     bool
	neg      bool // nLook
}

type parser struct {
	s []int32
	i int
}

func (p *parser) more() bool  { return p.i < len(p.s) }
func (p *parser) peek() int32 { return p.s[p.i] }

func (p *parser) alternation() (*node, error) {
	var alts []*node
	for {
		c, err := p.concat()
		if err != nil {
			return nil, err
		}
		alts = append(alts, c)
		if p.more() && p.peek() == '|' {
			p.i++
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &node{kind: nAlt, subs: alts}, nil
}

func (p *parser) concat() (*node, error) {
	var items []*node
	for p.more() && p.peek() != '|' && p.peek() != ')' {
		a, err := p.atom()
		if err != nil {
			return nil, err
		}
		a, err = p.quantifier(a)
		if err != nil {
			return nil, err
		}
		items = append(items, a)
	}
	switch len(items) {
	case 0:
		return &node{kind: nEmpty}, nil
	case 1:
		return items[0], nil
	}
	return &node{kind: nConcat, subs: items}, nil
}

func (p *parser) quantifier(a *node) (*node, error) {
	for p.more() {
		min, max := 0, 0
		switch p.peek() {
		case '*':
			min, max = 0, -1
			p.i++
		case '+':
			min, max = 1, -1
			p.i++
		case '?':
			min, max = 0, 1
			p.i++
		case '{':
			start := p.i
			p.i++
			n, ok := p.number()
			if !ok {
				return nil, fmt.Errorf("stdregex: bad brace at %d", start)
			}
			min, max = n, n
			if p.more() && p.peek() == ',' {
				p.i++
				max = -1
				if m, ok := p.number(); ok {
					max = m
				}
			}
			if !p.more() || p.peek() != '}' {
				return nil, fmt.Errorf("stdregex: bad brace at %d", start)
			}
			p.i++
			if max >= 0 && max < min {
				return nil, fmt.Errorf("stdregex: bad range {%d,%d}", min, max)
			}
		default:
			return a, nil
		}
		switch a.kind {
		case nBol, nEol, nWordB, nNotWordB, nLook:
			return nil, fmt.Errorf("stdregex: nothing to repeat before %d", p.i)
		}
		lazy := false
		if p.more() && p.peek() == '?' {
			lazy = true
			p.i++
		}
		a = &node{kind: nRepeat, subs: []*node{a}, min: min, max: max, lazy: lazy}
	}
	return a, nil
}

func (p *parser) number() (int, bool) {
	start := p.i
	v := 0
	for p.more() && p.peek() >= '0' && p.peek() <= '9' {
		v = v*10 + int(p.peek()-'0')
		if v > 1<<20 {
			return 0, false
		}
		p.i++
	}
	return v, p.i > start
}

func (p *parser) atom() (*node, error) {
	c := p.peek()
	switch c {
	case '(':
		p.i++
		look, neg := false, false
		if p.i+1 < len(p.s) && p.s[p.i] == '?' {
			switch p.s[p.i+1] {
			case ':':
			case '=':
				look = true
			case '!':
				look, neg = true, true
			default:
				return nil, fmt.Errorf("stdregex: bad group (?%c at %d", rune(p.s[p.i+1]), p.i)
			}
			p.i += 2
		}
		n, err := p.alternation()
		if err != nil {
			return nil, err
		}
		if !p.more() || p.peek() != ')' {
			return nil, errors.New("stdregex: unbalanced parenthesis")
		}
		p.i++
		if look {
			return &node{kind: nLook, subs: []*node{n}, neg: neg}, nil
		}
		return n, nil
	case '[':
		p.i++
		return p.bracket()
	case '.':
		p.i++
		return &node{kind: nAny}, nil
	case '^':
		p.i++
		return &node{kind: nBol}, nil
	case '$':
		p.i++
		return &node{kind: nEol}, nil
	case '\\':
		p.i++
		if !p.more() {
			return nil, errors.New("stdregex: trailing backslash")
		}
		e := p.peek()
		switch e {
		case 'b':
			p.i++
			return &node{kind: nWordB}, nil
		case 'B':
			p.i++
			return &node{kind: nNotWordB}, nil
		case 'd', 's', 'w':
			p.i++
			return &node{kind: nClass, cls: &class{classes: []byte{byte(e)}}}, nil
		case 'D', 'S', 'W':
			p.i++
			return &node{kind: nClass, cls: &class{classes: []byte{byte(e + 'a' - 'A')}, negate: true}}, nil
		}
		if e >= '1' && e <= '9' {
			return nil, fmt.Errorf("%w: back-reference \\%c", ErrUnsupported, rune(e))
		}
		v, err := p.charEscape(false)
		if err != nil {
			return nil, err
		}
		return &node{kind: nChar, c: v}, nil
	case '*', '+', '?':
		return nil, fmt.Errorf("stdregex: nothing to repeat at %d", p.i)
	case '{':
		return nil, fmt.Errorf("stdregex: bad brace at %d", p.i)
	case ')':
		return nil, errors.New("stdregex: unbalanced parenthesis")
	}
	p.i++
	return &node{kind: nChar, c: c}, nil
}

// charEscape reads the escape after a backslash (p.i at the escaped character) that stands for one character,
// as _Scanner::_M_eat_escape_ecma does; inBracket makes \b the backspace.
func (p *parser) charEscape(inBracket bool) (int32, error) {
	e := p.peek()
	p.i++
	switch e {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'f':
		return '\f', nil
	case 'v':
		return '\v', nil
	case '0':
		return 0, nil
	case 'b':
		if inBracket {
			return '\b', nil
		}
	case 'c':
		if !p.more() {
			return 0, errors.New("stdregex: bad \\c escape")
		}
		v := p.peek() % 32
		p.i++
		return v, nil
	case 'x', 'u':
		n := 2
		if e == 'u' {
			n = 4
		}
		if p.i+n > len(p.s) {
			return 0, fmt.Errorf("stdregex: bad \\%c escape", rune(e))
		}
		var digits []byte
		for k := range n {
			d := p.s[p.i+k]
			if !(d >= '0' && d <= '9' || d >= 'a' && d <= 'f' || d >= 'A' && d <= 'F') {
				return 0, fmt.Errorf("stdregex: bad \\%c escape", rune(e))
			}
			digits = append(digits, byte(d))
		}
		p.i += n
		v, _ := strconv.ParseUint(string(digits), 16, 32)
		return int32(v), nil
	}
	return e, nil
}

// bracket parses a bracket expression after '['.
func (p *parser) bracket() (*node, error) {
	k := &class{}
	if p.more() && p.peek() == '^' {
		k.negate = true
		p.i++
	}
	first := true
	// item reads one bracket item: a character (ok) or a class escape (class != 0).
	item := func() (c int32, cls byte, neg bool, err error) {
		ch := p.peek()
		if ch == '[' && p.i+1 < len(p.s) && (p.s[p.i+1] == ':' || p.s[p.i+1] == '.' || p.s[p.i+1] == '=') {
			return 0, 0, false, fmt.Errorf("%w: POSIX bracket class at %d", ErrUnsupported, p.i)
		}
		if ch != '\\' {
			p.i++
			return ch, 0, false, nil
		}
		p.i++
		if !p.more() {
			return 0, 0, false, errors.New("stdregex: trailing backslash")
		}
		switch e := p.peek(); e {
		case 'd', 's', 'w':
			p.i++
			return 0, byte(e), false, nil
		case 'D', 'S', 'W':
			p.i++
			return 0, byte(e + 'a' - 'A'), true, nil
		}
		v, err := p.charEscape(true)
		return v, 0, false, err
	}
	for {
		if !p.more() {
			return nil, errors.New("stdregex: unbalanced bracket")
		}
		if p.peek() == ']' && !first {
			p.i++
			break
		}
		if p.peek() == ']' && first {
			// ECMAScript: "[]" is an empty class and "[^]" matches anything.
			p.i++
			break
		}
		first = false
		lo, cls, neg, err := item()
		if err != nil {
			return nil, err
		}
		if cls != 0 {
			if neg {
				k.negCls = append(k.negCls, cls)
			} else {
				k.classes = append(k.classes, cls)
			}
			continue
		}
		// A range lo-hi, unless '-' is last.
		if p.i+1 < len(p.s) && p.peek() == '-' && p.s[p.i+1] != ']' {
			p.i++
			hi, hcls, _, err := item()
			if err != nil {
				return nil, err
			}
			if hcls != 0 {
				return nil, errors.New("stdregex: class escape as a range end")
			}
			if lo > hi {
				return nil, fmt.Errorf("stdregex: bad range %d-%d", lo, hi)
			}
			k.ranges = append(k.ranges, [2]int32{lo, hi})
			continue
		}
		k.ranges = append(k.ranges, [2]int32{lo, lo})
	}
	return &node{kind: nClass, cls: k}, nil
}

// ---- compiler ----

// nullable reports whether n can match the empty string.
func nullable(n *node) bool {
	switch n.kind {
	case nChar, nClass, nAny:
		return false
	case nConcat:
		for _, s := range n.subs {
			if !nullable(s) {
				return false
			}
		}
		return true
	case nAlt:
		for _, s := range n.subs {
			if nullable(s) {
				return true
			}
		}
		return false
	case nRepeat:
		return n.min == 0 || nullable(n.subs[0])
	}
	return true
}

func compileNode(n *node) ([]inst, error) {
	var out []inst
	var emit func(n *node) error
	emit = func(n *node) error {
		switch n.kind {
		case nEmpty:
		case nChar:
			out = append(out, inst{op: opChar, c: n.c})
		case nClass:
			out = append(out, inst{op: opClass, cls: n.cls})
		case nAny:
			out = append(out, inst{op: opAny})
		case nBol:
			out = append(out, inst{op: opBol})
		case nEol:
			out = append(out, inst{op: opEol})
		case nWordB:
			out = append(out, inst{op: opWordB})
		case nNotWordB:
			out = append(out, inst{op: opNotWordB})
		case nConcat:
			for _, s := range n.subs {
				if err := emit(s); err != nil {
					return err
				}
			}
		case nAlt:
			// split L1, next; L1: a; jmp end; next: split L2, ... ; last alternative plain.
			var jumps []int
			for i, s := range n.subs {
				if i < len(n.subs)-1 {
					sp := len(out)
					out = append(out, inst{op: opSplit})
					out[sp].x = len(out)
					if err := emit(s); err != nil {
						return err
					}
					jumps = append(jumps, len(out))
					out = append(out, inst{op: opJmp})
					out[sp].y = len(out)
				} else if err := emit(s); err != nil {
					return err
				}
			}
			for _, j := range jumps {
				out[j].x = len(out)
			}
		case nLook:
			sub, err := compileNode(n.subs[0])
			if err != nil {
				return err
			}
			out = append(out, inst{op: opLook, neg: n.neg, sub: append(sub, inst{op: opMatch})})
		case nRepeat:
			body := n.subs[0]
			if n.max != 0 && nullable(body) && (n.max < 0 || n.max > n.min) {
				return fmt.Errorf("%w: repetition of a sub-pattern that can match the empty string", ErrUnsupported)
			}
			for range n.min {
				if err := emit(body); err != nil {
					return err
				}
			}
			split := func(more, less int) inst {
				if n.lazy {
					return inst{op: opSplit, x: less, y: more}
				}
				return inst{op: opSplit, x: more, y: less}
			}
			if n.max < 0 {
				// L: split body, end; body; jmp L; end:
				l := len(out)
				out = append(out, inst{})
				if err := emit(body); err != nil {
					return err
				}
				out = append(out, inst{op: opJmp, x: l})
				out[l] = split(l+1, len(out))
				return nil
			}
			// Nested optional copies: split(body, end) body split(body, end) body ... end.
			var splits []int
			for range n.max - n.min {
				splits = append(splits, len(out))
				out = append(out, inst{})
				if err := emit(body); err != nil {
					return err
				}
			}
			for _, s := range splits {
				out[s] = split(s+1, len(out))
			}
		}
		return nil
	}
	if err := emit(n); err != nil {
		return nil, err
	}
	return out, nil
}

// ---- matcher ----

type thread struct{ pc, pos int }

// machine runs programs over one text span [begin, end) of text.
type machine struct {
	text       []int32
	begin, end int
	prevAvail  bool // match_prev_avail: text[begin-1] may be looked at (it is the span's, from earlier searches)
	spanStart  int  // first index that belongs to the span (for ^ and \b when prevAvail)
	stack      []thread
}

func (m *machine) isWord(i int) bool {
	return i >= m.spanStart && i < m.end && isCtype('w', m.text[i])
}

func (m *machine) atWordBoundary(p int) bool {
	// _M_word_boundary: no previous character at the very start unless match_prev_avail.
	left := p > m.begin || (m.prevAvail && p > m.spanStart)
	l := left && m.isWord(p-1)
	r := p < m.end && m.isWord(p)
	return l != r
}

// run returns the end of the first match of prog anchored at pos, or -1. notNull rejects an empty match.
func (m *machine) run(prog []inst, pos int, notNull bool) int {
	base := len(m.stack)
	m.stack = append(m.stack, thread{0, pos})
	defer func() { m.stack = m.stack[:base] }()
	for len(m.stack) > base {
		t := m.stack[len(m.stack)-1]
		m.stack = m.stack[:len(m.stack)-1]
		pc, p := t.pc, t.pos
	step:
		for {
			in := &prog[pc]
			switch in.op {
			case opChar:
				if p >= m.end || m.text[p] != in.c {
					break step
				}
				p++
				pc++
			case opClass:
				if p >= m.end || !in.cls.matches(m.text[p]) {
					break step
				}
				p++
				pc++
			case opAny:
				if p >= m.end || m.text[p] == '\n' || m.text[p] == '\r' {
					break step
				}
				p++
				pc++
			case opSplit:
				m.stack = append(m.stack, thread{in.y, p})
				pc = in.x
			case opJmp:
				pc = in.x
			case opBol:
				if p != m.begin || m.prevAvail {
					break step
				}
				pc++
			case opEol:
				if p != m.end {
					break step
				}
				pc++
			case opWordB:
				if !m.atWordBoundary(p) {
					break step
				}
				pc++
			case opNotWordB:
				if m.atWordBoundary(p) {
					break step
				}
				pc++
			case opLook:
				ok := m.run(in.sub, p, false) >= 0
				if ok == in.neg {
					break step
				}
				pc++
			case opMatch:
				if notNull && p == pos {
					break step
				}
				return p
			}
		}
	}
	return -1
}

// search is regex_search over [from, end) with match_prev_avail set to prevAvail: the first start position with a
// match, and the match's end. As libstdc++'s _Executor::_M_search does, every start after the first is tried with
// match_prev_avail.
func (m *machine) search(re *Regexp, from int, prevAvail, notNull, continuous bool) (start, end int, ok bool) {
	m.prevAvail = prevAvail
	for s := from; s <= m.end; s++ {
		m.begin = s
		if e := m.run(re.prog, s, notNull); e >= 0 {
			return s, e, true
		}
		if continuous {
			break
		}
		m.prevAvail = true
	}
	return 0, 0, false
}

// Split appends to dst the lengths unicode_regex_split_stl emits for the span text[off:off+n]: the gap before
// each match (when not empty), each match (even empty), and the rest after the last match (when not empty). It
// iterates matches as std::regex_iterator::operator++ does: after an empty match, a non-empty match at the same
// place is tried first (match_not_null | match_continuous), else the search moves on one character; every search
// after the first has match_prev_avail.
func (re *Regexp) Split(text []int32, off, n int, dst []int) []int {
	m := &machine{text: text, end: off + n, spanStart: off}
	last := off // start_idx
	iterPrevAvail := false
	s, e, ok := m.search(re, off, iterPrevAvail, false, false)
	for ok {
		if s > last {
			dst = append(dst, s-last)
		}
		dst = append(dst, e-s)
		last = e
		from := e
		if s == e {
			if e == m.end {
				break
			}
			if s2, e2, ok2 := m.search(re, e, iterPrevAvail, true, true); ok2 {
				s, e = s2, e2
				continue
			}
			from = e + 1
		}
		iterPrevAvail = true
		s, e, ok = m.search(re, from, iterPrevAvail, false, false)
	}
	if last < off+n {
		dst = append(dst, off+n-last)
	}
	return dst
}
