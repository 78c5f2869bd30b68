package peg

import (
	"slices"
)

type utf8Status uint8

const (
	utf8Success utf8Status = iota
	utf8Incomplete
	utf8Invalid
)

type utf8Result struct {
	status utf8Status
	cp     uint32
	n      int
}

// decodeUTF8 is common_parse_utf8_codepoint (common/unicode.cpp): one code point at off, or why not. It checks
// structure only (no overlong or surrogate checks), and reports a bad byte before a short input.
func decodeUTF8(s string, off int) utf8Result {
	if off >= len(s) {
		return utf8Result{status: utf8Incomplete}
	}
	c := s[off]
	if c&0x80 == 0 {
		return utf8Result{utf8Success, uint32(c), 1}
	}
	if c&0x40 == 0 {
		return utf8Result{utf8Invalid, 0, 1}
	}
	var n int
	switch {
	case c&0x20 == 0:
		n = 2
	case c&0x10 == 0:
		n = 3
	case c&0x08 == 0:
		n = 4
	default:
		return utf8Result{utf8Invalid, 0, 1}
	}
	if n == 2 {
		if off+1 >= len(s) {
			return utf8Result{utf8Incomplete, 0, 1}
		}
		if s[off+1]&0xc0 != 0x80 {
			return utf8Result{utf8Invalid, 0, 1}
		}
		return utf8Result{utf8Success, uint32(c&0x1f)<<6 | uint32(s[off+1]&0x3f), 2}
	}
	for i := 1; i < n; i++ {
		if off+i >= len(s) {
			return utf8Result{utf8Incomplete, 0, i}
		}
		if s[off+i]&0xc0 != 0x80 {
			return utf8Result{utf8Invalid, 0, i}
		}
	}
	if n == 3 {
		return utf8Result{utf8Success, uint32(c&0x0f)<<12 | uint32(s[off+1]&0x3f)<<6 | uint32(s[off+2]&0x3f), 3}
	}
	return utf8Result{utf8Success, uint32(c&0x07)<<18 | uint32(s[off+1]&0x3f)<<12 | uint32(s[off+2]&0x3f)<<6 |
		uint32(s[off+3]&0x3f), 4}
}

// codepoints splits s into code points, stopping at the first that does not decode (common_trie::insert).
func codepoints(s string) []uint32 {
	var out []uint32
	for pos := 0; pos < len(s); {
		u := decodeUTF8(s, pos)
		if u.status != utf8Success {
			break
		}
		out = append(out, u.cp)
		pos += u.n
	}
	return out
}

// trieNode has its children by code point (a std::map: iterated in code point order).
type trieNode struct {
	keys    []uint32 // sorted
	next    []int    // parallel to keys
	pattern int      // index of the pattern ending here, -1 if none
}

func (n *trieNode) child(cp uint32) (int, bool) {
	i, ok := slices.BinarySearch(n.keys, cp)
	if !ok {
		return 0, false
	}
	return n.next[i], true
}

// trie is common_trie over code points.
type trie struct {
	nodes     []trieNode
	nPatterns int
}

func newTrie(words []string) *trie {
	t := &trie{nodes: []trieNode{{pattern: -1}}}
	for _, w := range words {
		t.insert(codepoints(w))
	}
	return t
}

func (t *trie) insert(symbols []uint32) int {
	cur := 0
	for _, cp := range symbols {
		if nx, ok := t.nodes[cur].child(cp); ok {
			cur = nx
			continue
		}
		t.nodes = append(t.nodes, trieNode{pattern: -1})
		nx := len(t.nodes) - 1
		n := &t.nodes[cur]
		i, _ := slices.BinarySearch(n.keys, cp)
		n.keys = slices.Insert(n.keys, i, cp)
		n.next = slices.Insert(n.next, i, nx)
		cur = nx
	}
	if t.nodes[cur].pattern < 0 {
		t.nodes[cur].pattern = t.nPatterns
		t.nPatterns++
	}
	return t.nodes[cur].pattern
}

type matchResult uint8

const (
	noMatch matchResult = iota
	partialMatch
	completeMatch
)

// checkAt is common_trie::check_at: whether a word starts at pos (complete), or a word's prefix runs to the end of
// the input (partial).
func (t *trie) checkAt(s string, pos int) matchResult {
	cur := 0
	for pos < len(s) {
		u := decodeUTF8(s, pos)
		if u.status != utf8Success {
			break
		}
		nx, ok := t.nodes[cur].child(u.cp)
		if !ok {
			return noMatch
		}
		cur = nx
		pos += u.n
		if t.nodes[cur].pattern >= 0 {
			return completeMatch
		}
	}
	if cur != 0 {
		return partialMatch
	}
	return noMatch
}

// ahoCorasick is common_aho_corasick: the trie's states with failure links, the longest pattern ending at each
// state, and the alphabet in code point order.
type ahoCorasick struct {
	t        *trie
	fail     []int
	match    []int
	alphabet []uint32
}

func newAhoCorasick(words []string) *ahoCorasick {
	t := newTrie(words)
	n := len(t.nodes)
	ac := &ahoCorasick{t: t, fail: make([]int, n), match: make([]int, n)}
	order := make([]int, 0, n)
	queue := []int{0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		order = append(order, u)
		for i, ch := range t.nodes[u].keys {
			v := t.nodes[u].next[i]
			if u != 0 {
				f := ac.fail[u]
				for f != 0 {
					if _, ok := t.nodes[f].child(ch); ok {
						break
					}
					f = ac.fail[f]
				}
				if nx, ok := t.nodes[f].child(ch); ok && nx != v {
					ac.fail[v] = nx
				} else {
					ac.fail[v] = 0
				}
			}
			queue = append(queue, v)
		}
	}
	for _, u := range order {
		switch {
		case t.nodes[u].pattern >= 0:
			ac.match[u] = t.nodes[u].pattern
		case u != 0:
			ac.match[u] = ac.match[ac.fail[u]]
		default:
			ac.match[u] = -1
		}
	}
	seen := map[uint32]bool{}
	for _, nd := range t.nodes {
		for _, ch := range nd.keys {
			if !seen[ch] {
				seen[ch] = true
				ac.alphabet = append(ac.alphabet, ch)
			}
		}
	}
	slices.Sort(ac.alphabet)
	return ac
}

func (ac *ahoCorasick) numStates() int { return len(ac.t.nodes) }

func (ac *ahoCorasick) terminal(s int) bool { return ac.match[s] >= 0 }

// next follows failure links until a transition on ch exists.
func (ac *ahoCorasick) next(state int, ch uint32) int {
	for state != 0 {
		if _, ok := ac.t.nodes[state].child(ch); ok {
			break
		}
		state = ac.fail[state]
	}
	if nx, ok := ac.t.nodes[state].child(ch); ok {
		return nx
	}
	return 0
}
