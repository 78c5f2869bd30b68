package grammar

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// This file is a small backtracking matcher for the regular expressions of
// lazy grammars' trigger patterns, read as libstdc++'s std::regex reads
// them with its default ECMAScript syntax on std::string: the pattern and
// the text are bytes (a class or '.' matches one byte), '.' is any byte but
// '\n' and '\r', \d \s \w are the C locale's classes, '^' and '$' anchor at
// the ends of the text only, alternatives are tried left to right and
// quantifiers greedy first unless followed by '?', an iteration past the
// minimum that matches nothing stops the loop, and lookaheads and
// back-references work as ECMAScript defines them.

// reNode is a compiled regular expression node.
type reNode struct {
	op       reOp
	byteset  *[256]bool // reClass
	sub      []*reNode  // reConcat, reAlt: the items; reGroup, reRepeat, reLook: sub[0]
	group    int        // reGroup (capturing: >= 1), reBackref
	min, max int        // reRepeat; max -1: no bound
	lazy     bool       // reRepeat
	negate   bool       // reLook: (?!...); reWordB: \B
}

type reOp uint8

const (
	reEmpty reOp = iota
	reClass
	reConcat
	reAlt
	reGroup
	reRepeat
	reBOL
	reEOL
	reLook
	reWordB
	reBackref
)

// regex is a compiled pattern.
type regex struct {
	root    *reNode
	ngroups int
}

type reParser struct {
	s       string
	i       int
	ngroups int
}

var errRegex = errors.New("invalid regular expression")

func (p *reParser) fail(format string, args ...any) {
	panic(fmt.Errorf("%w: %s", errRegex, fmt.Sprintf(format, args...)))
}

// compileRegex parses pattern as ECMAScript (std::regex's default syntax).
func compileRegex(pattern string) (re *regex, err error) {
	p := &reParser{s: pattern}
	defer func() {
		if v := recover(); v != nil {
			e, ok := v.(error)
			if !ok || !errors.Is(e, errRegex) {
				panic(v)
			}
			re, err = nil, e
		}
	}()
	n := p.disjunction()
	if p.i < len(p.s) {
		p.fail("unexpected %q at %d", p.s[p.i], p.i)
	}
	return &regex{root: n, ngroups: p.ngroups}, nil
}

func (p *reParser) more() bool { return p.i < len(p.s) }
func (p *reParser) peek() byte { return p.s[p.i] }

func (p *reParser) disjunction() *reNode {
	alts := []*reNode{p.alternative()}
	for p.more() && p.peek() == '|' {
		p.i++
		alts = append(alts, p.alternative())
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return &reNode{op: reAlt, sub: alts}
}

func (p *reParser) alternative() *reNode {
	var items []*reNode
	for p.more() && p.peek() != '|' && p.peek() != ')' {
		items = append(items, p.term())
	}
	return &reNode{op: reConcat, sub: items}
}

func (p *reParser) term() *reNode {
	c := p.peek()
	switch c {
	case '^':
		p.i++
		return &reNode{op: reBOL}
	case '$':
		p.i++
		return &reNode{op: reEOL}
	case '\\':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == 'b' || p.s[p.i+1] == 'B') {
			p.i += 2
			return &reNode{op: reWordB, negate: p.s[p.i-1] == 'B'}
		}
	case '(':
		if p.i+2 < len(p.s) && p.s[p.i+1] == '?' && (p.s[p.i+2] == '=' || p.s[p.i+2] == '!') {
			neg := p.s[p.i+2] == '!'
			p.i += 3
			sub := p.disjunction()
			p.expect(')')
			return &reNode{op: reLook, sub: []*reNode{sub}, negate: neg}
		}
	}
	atom := p.atom()
	return p.quantifier(atom)
}

func (p *reParser) expect(c byte) {
	if !p.more() || p.peek() != c {
		p.fail("expecting %q at %d", c, p.i)
	}
	p.i++
}

func (p *reParser) quantifier(atom *reNode) *reNode {
	if !p.more() {
		return atom
	}
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
		j := p.i + 1
		m, ok := p.number(&j)
		if !ok {
			p.fail("unexpected '{' at %d", p.i)
		}
		min, max = m, m
		if j < len(p.s) && p.s[j] == ',' {
			j++
			max = -1
			if n, ok := p.number(&j); ok {
				max = n
			}
		}
		if j >= len(p.s) || p.s[j] != '}' {
			p.fail("unterminated '{' at %d", p.i)
		}
		if max >= 0 && max < min {
			p.fail("bad repetition range at %d", p.i)
		}
		p.i = j + 1
	default:
		return atom
	}
	lazy := false
	if p.more() && p.peek() == '?' {
		lazy = true
		p.i++
	}
	return &reNode{op: reRepeat, sub: []*reNode{atom}, min: min, max: max, lazy: lazy}
}

func (p *reParser) number(j *int) (int, bool) {
	start := *j
	for *j < len(p.s) && isDigit(p.s[*j]) {
		*j++
	}
	if *j == start {
		return 0, false
	}
	n, err := strconv.Atoi(p.s[start:*j])
	if err != nil {
		p.fail("repetition count %s out of range", p.s[start:*j])
	}
	return n, true
}

func classOf(f func(c byte) bool) *[256]bool {
	var s [256]bool
	for i := range s {
		s[i] = f(byte(i))
	}
	return &s
}

func isSpaceC(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func isWordC(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

func (p *reParser) atom() *reNode {
	c := p.peek()
	switch c {
	case '.':
		p.i++
		return &reNode{op: reClass, byteset: classOf(func(b byte) bool { return b != '\n' && b != '\r' })}
	case '(':
		p.i++
		group := 0
		if p.i+1 < len(p.s) && p.s[p.i] == '?' && p.s[p.i+1] == ':' {
			p.i += 2
		} else if p.more() && p.peek() == '?' {
			p.fail("unsupported group syntax at %d", p.i)
		} else {
			p.ngroups++
			group = p.ngroups
		}
		sub := p.disjunction()
		p.expect(')')
		return &reNode{op: reGroup, sub: []*reNode{sub}, group: group}
	case '[':
		return p.class()
	case '\\':
		p.i++
		if !p.more() {
			p.fail("trailing backslash")
		}
		e := p.peek()
		if '1' <= e && e <= '9' {
			j := p.i
			n, _ := p.number(&j)
			p.i = j
			return &reNode{op: reBackref, group: n}
		}
		if set := p.classEscape(); set != nil {
			return &reNode{op: reClass, byteset: set}
		}
		b := p.charEscape()
		return litNode(b)
	case '*', '+', '?', '{':
		p.fail("nothing to repeat at %d", p.i)
	case ')':
		p.fail("unbalanced ')' at %d", p.i)
	}
	p.i++
	return litNode(c)
}

func litNode(b byte) *reNode {
	var s [256]bool
	s[b] = true
	return &reNode{op: reClass, byteset: &s}
}

// classEscape reads \d \D \s \S \w \W (p.i at the letter), or returns nil.
func (p *reParser) classEscape() *[256]bool {
	var f func(byte) bool
	switch p.peek() {
	case 'd', 'D':
		f = isDigit
	case 's', 'S':
		f = isSpaceC
	case 'w', 'W':
		f = isWordC
	default:
		return nil
	}
	neg := p.peek() >= 'A' && p.peek() <= 'Z'
	p.i++
	return classOf(func(b byte) bool { return f(b) != neg })
}

// charEscape reads the escape after a backslash (p.i at its letter) as one
// byte.
func (p *reParser) charEscape() byte {
	e := p.peek()
	p.i++
	switch e {
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'v':
		return '\v'
	case '0':
		return 0
	case 'c':
		if !p.more() || !('a' <= p.peek()|0x20 && p.peek()|0x20 <= 'z') {
			p.fail("bad \\c escape at %d", p.i)
		}
		p.i++
		return p.s[p.i-1] % 32
	case 'x', 'u':
		n := 2
		if e == 'u' {
			n = 4
		}
		if p.i+n > len(p.s) {
			p.fail("bad \\%c escape at %d", e, p.i)
		}
		v, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
		if err != nil {
			p.fail("bad \\%c escape at %d", e, p.i)
		}
		p.i += n
		return byte(v)
	}
	if isWordC(e) {
		p.fail("unknown escape \\%c at %d", e, p.i-1)
	}
	return e
}

func (p *reParser) class() *reNode {
	p.i++ // '['
	neg := false
	if p.more() && p.peek() == '^' {
		neg = true
		p.i++
	}
	var set [256]bool
	first := true
	for {
		if !p.more() {
			p.fail("unterminated character class")
		}
		c := p.peek()
		if c == ']' && !first {
			p.i++
			break
		}
		if c == ']' {
			// "[]" matches nothing and "[^]" anything in ECMAScript
			p.i++
			break
		}
		first = false
		lo, isSet := p.classAtom(&set)
		if isSet {
			continue
		}
		if p.i+1 < len(p.s) && p.peek() == '-' && p.s[p.i+1] != ']' {
			p.i++
			hi, hiSet := p.classAtom(&set)
			if hiSet {
				p.fail("bad character range")
			}
			if hi < lo {
				p.fail("bad character range %q-%q", lo, hi)
			}
			for b := int(lo); b <= int(hi); b++ {
				set[b] = true
			}
			continue
		}
		set[lo] = true
	}
	if neg {
		for i := range set {
			set[i] = !set[i]
		}
	}
	return &reNode{op: reClass, byteset: &set}
}

// classAtom reads one member of a class: a byte, or a class escape added to
// set (isSet true).
func (p *reParser) classAtom(set *[256]bool) (byte, bool) {
	c := p.peek()
	if c != '\\' {
		p.i++
		return c, false
	}
	p.i++
	if !p.more() {
		p.fail("trailing backslash")
	}
	if s := p.classEscape(); s != nil {
		for i := range s {
			set[i] = set[i] || s[i]
		}
		return 0, true
	}
	if p.peek() == 'b' {
		p.i++
		return '\b', false
	}
	return p.charEscape(), false
}

// matchLimit bounds the steps of one match attempt (a pattern that
// backtracks without end is refused rather than hanging).
const matchLimit = 10_000_000

var errMatchLimit = errors.New("regular expression: too many backtracking steps")

type reMatcher struct {
	s     string
	caps  []int // 2 per group: start, end (-1 unset)
	steps int
}

// exec reports whether re matches s starting at start, with end ending at
// len(s) when full; caps receives the groups.
func (re *regex) exec(s string, start int, full bool) ([]int, bool, error) {
	m := &reMatcher{s: s, caps: make([]int, 2*(re.ngroups+1))}
	for i := range m.caps {
		m.caps[i] = -1
	}
	var err error
	ok := func() bool {
		defer func() {
			if v := recover(); v != nil {
				if v != errMatchLimit {
					panic(v)
				}
				err = errMatchLimit
			}
		}()
		return m.match(re.root, start, func(end int) bool {
			if full && end != len(s) {
				return false
			}
			m.caps[0], m.caps[1] = start, end
			return true
		})
	}()
	if err != nil {
		return nil, false, err
	}
	return m.caps, ok, nil
}

// search is std::regex_search: the first start position with a match.
func (re *regex) search(s string) ([]int, bool, error) {
	for start := 0; start <= len(s); start++ {
		caps, ok, err := re.exec(s, start, false)
		if err != nil || ok {
			return caps, ok, err
		}
	}
	return nil, false, nil
}

func (m *reMatcher) match(n *reNode, i int, k func(int) bool) bool {
	m.steps++
	if m.steps > matchLimit {
		panic(errMatchLimit)
	}
	switch n.op {
	case reEmpty:
		return k(i)
	case reClass:
		if i < len(m.s) && n.byteset[m.s[i]] {
			return k(i + 1)
		}
		return false
	case reConcat:
		return m.seq(n.sub, i, k)
	case reAlt:
		for _, a := range n.sub {
			if m.match(a, i, k) {
				return true
			}
		}
		return false
	case reGroup:
		if n.group == 0 {
			return m.match(n.sub[0], i, k)
		}
		g := n.group
		os, oe := m.caps[2*g], m.caps[2*g+1]
		if m.match(n.sub[0], i, func(j int) bool {
			ps, pe := m.caps[2*g], m.caps[2*g+1]
			m.caps[2*g], m.caps[2*g+1] = i, j
			if k(j) {
				return true
			}
			m.caps[2*g], m.caps[2*g+1] = ps, pe
			return false
		}) {
			return true
		}
		m.caps[2*g], m.caps[2*g+1] = os, oe
		return false
	case reRepeat:
		return m.repeat(n, i, 0, k)
	case reBOL:
		return i == 0 && k(i)
	case reEOL:
		return i == len(m.s) && k(i)
	case reWordB:
		a := i > 0 && isWordC(m.s[i-1])
		b := i < len(m.s) && isWordC(m.s[i])
		return (a != b) != n.negate && k(i)
	case reLook:
		saved := append([]int(nil), m.caps...)
		ok := m.match(n.sub[0], i, func(int) bool { return true })
		if n.negate {
			copy(m.caps, saved)
			return !ok && k(i)
		}
		if !ok {
			copy(m.caps, saved)
			return false
		}
		if k(i) {
			return true
		}
		copy(m.caps, saved)
		return false
	case reBackref:
		g := n.group
		if 2*g+1 >= len(m.caps) || m.caps[2*g] < 0 {
			return k(i)
		}
		ref := m.s[m.caps[2*g]:m.caps[2*g+1]]
		if len(m.s)-i >= len(ref) && m.s[i:i+len(ref)] == ref {
			return k(i + len(ref))
		}
		return false
	}
	return false
}

func (m *reMatcher) seq(items []*reNode, i int, k func(int) bool) bool {
	if len(items) == 0 {
		return k(i)
	}
	return m.match(items[0], i, func(j int) bool { return m.seq(items[1:], j, k) })
}

// repeat matches n.sub[0] count more times and then continues: greedy loops
// try one more iteration first, lazy ones stopping first; an iteration past
// the minimum that matches the empty string fails (ECMAScript's
// RepeatMatcher).
func (m *reMatcher) repeat(n *reNode, i, count int, k func(int) bool) bool {
	more := func() bool {
		if n.max >= 0 && count >= n.max {
			return false
		}
		return m.match(n.sub[0], i, func(j int) bool {
			if j == i && count >= n.min {
				return false
			}
			return m.repeat(n, j, count+1, k)
		})
	}
	if count < n.min {
		return more()
	}
	if n.lazy {
		return k(i) || more()
	}
	return more() || k(i)
}

// triggerPattern is llama_grammar_trigger_pattern.
type triggerPattern struct {
	pattern string
	re      *regex
}

func newTriggerPattern(pattern string) (*triggerPattern, error) {
	re, err := compileRegex(pattern)
	if err != nil {
		return nil, fmt.Errorf("grammar: trigger pattern %q: %w", pattern, err)
	}
	return &triggerPattern{pattern: pattern, re: re}, nil
}

// find is llama_grammar_trigger_pattern::find: the position in input from
// which the grammar takes over: the start of the first non-empty capture
// group of the match, else of the match. A pattern written ^...$ is first
// matched against the whole input (std::regex_match), then searched for
// like any other (std::regex_search).
func (tp *triggerPattern) find(input string) (int, bool) {
	startPos := func(caps []int) int {
		for g := 1; 2*g < len(caps); g++ {
			if caps[2*g] >= 0 && caps[2*g+1] > caps[2*g] {
				return caps[2*g]
			}
		}
		return caps[0]
	}
	p := tp.pattern
	if p != "" && p[0] == '^' && p[len(p)-1] == '$' {
		if caps, ok, err := tp.re.exec(input, 0, true); err == nil && ok {
			return startPos(caps), true
		}
	}
	if caps, ok, err := tp.re.search(input); err == nil && ok {
		return startPos(caps), true
	}
	return 0, false
}

// RegexEscape is common/common.cpp's regex_escape: every character of
// .^$|()*+?[]{}\ preceded by a backslash, so that s matches itself
// (llama-server turns a trigger word into a pattern with it).
func RegexEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`.^$|()*+?[]{}\`, s[i]) >= 0 {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
