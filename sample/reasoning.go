package sample

import (
	"maps"
	"math"
	"slices"
)

// ReasoningState is common_reasoning_budget_state.
type ReasoningState int

// The states of the reasoning budget (common/reasoning-budget.h).
const (
	ReasoningIdle        ReasoningState = iota // waiting for the start sequence
	ReasoningCounting                          // inside the reasoning block, counting down
	ReasoningForcing                           // forcing the end sequence
	ReasoningWaitingUTF8                       // budget spent, letting a UTF-8 sequence complete
	ReasoningDone                              // after the block: passthrough
)

// tokenMatcher is reasoning-budget.cpp's token_matcher: an Aho-Corasick
// automaton over token sequences (common_aho_corasick), reporting the
// longest sequence ending at each token.
type tokenMatcher struct {
	seqs     [][]int32
	children []map[int32]int // node -> token -> node
	pattern  []int           // node -> the sequence ending there, -1
	fail     []int
	match    []int // node -> the longest sequence ending there or on its fail chain, -1
	state    int
}

func newTokenMatcher(seqs [][]int32) *tokenMatcher {
	m := &tokenMatcher{children: []map[int32]int{{}}, pattern: []int{-1}}
	for _, s := range seqs {
		if len(s) > 0 && !slices.ContainsFunc(m.seqs, func(x []int32) bool { return slices.Equal(x, s) }) {
			m.seqs = append(m.seqs, slices.Clone(s))
		}
	}
	for i, s := range m.seqs {
		cur := 0
		for _, tok := range s {
			next, ok := m.children[cur][tok]
			if !ok {
				next = len(m.children)
				m.children = append(m.children, map[int32]int{})
				m.pattern = append(m.pattern, -1)
				m.children[cur][tok] = next
			}
			cur = next
		}
		if m.pattern[cur] < 0 {
			m.pattern[cur] = i
		}
	}
	n := len(m.children)
	m.fail = make([]int, n)
	m.match = make([]int, n)
	order := make([]int, 0, n)
	queue := []int{0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		order = append(order, u)
		for _, ch := range slices.Sorted(maps.Keys(m.children[u])) {
			v := m.children[u][ch]
			if u != 0 {
				f := m.fail[u]
				for f != 0 {
					if _, ok := m.children[f][ch]; ok {
						break
					}
					f = m.fail[f]
				}
				if w, ok := m.children[f][ch]; ok && w != v {
					m.fail[v] = w
				}
			}
			queue = append(queue, v)
		}
	}
	for _, u := range order {
		switch {
		case m.pattern[u] >= 0:
			m.match[u] = m.pattern[u]
		case u != 0:
			m.match[u] = m.match[m.fail[u]]
		default:
			m.match[u] = -1
		}
	}
	return m
}

// advance takes a token and returns the index of the longest sequence
// ending at it, or -1 (a match restarts the automaton).
func (m *tokenMatcher) advance(tok int32) int {
	s := m.state
	for s != 0 {
		if _, ok := m.children[s][tok]; ok {
			break
		}
		s = m.fail[s]
	}
	next, ok := m.children[s][tok]
	if !ok {
		next = 0
	}
	m.state = next
	p := m.match[next]
	if p >= 0 {
		m.state = 0
	}
	return p
}

// reasoningBudget is common_reasoning_budget (common/reasoning-budget.cpp):
// it watches for the start of a reasoning block, counts the tokens in it,
// and once the budget is spent forces the end sequence.
type reasoningBudget struct {
	piece     func(id int32) []byte // common_token_to_piece(vocab, id, false)
	start     *tokenMatcher
	end       *tokenMatcher
	forced    []int32
	budget    int32
	remaining int32
	state     ReasoningState
	forcePos  int
	endMatch  int
}

// utf8Complete is common_utf8_is_complete.
func utf8Complete(s []byte) bool {
	if len(s) == 0 {
		return true
	}
	for i := 1; i <= min(4, len(s)); i++ {
		c := s[len(s)-i]
		if c&0xC0 != 0x80 {
			expected := 1
			switch {
			case c >= 0xF0:
				expected = 4
			case c >= 0xE0:
				expected = 3
			case c >= 0xC0:
				expected = 2
			}
			return i >= expected
		}
	}
	return false
}

func (r *reasoningBudget) accept(tok int32) {
	switch r.state {
	case ReasoningIdle, ReasoningDone:
		if r.state == ReasoningDone {
			if r.start.advance(tok) < 0 {
				return
			}
			r.end.state = 0
			r.endMatch = -1
		} else if r.start.advance(tok) < 0 {
			return
		}
		r.state, r.remaining = ReasoningCounting, r.budget
		if r.remaining <= 0 {
			r.state, r.forcePos = ReasoningForcing, 0
		}
	case ReasoningCounting, ReasoningWaitingUTF8:
		if m := r.end.advance(tok); m >= 0 {
			r.state, r.endMatch = ReasoningDone, m
			return
		}
		complete := utf8Complete(r.piece(tok))
		if r.state == ReasoningWaitingUTF8 {
			if complete {
				r.state, r.forcePos = ReasoningForcing, 0
				r.end.state = 0
			}
			return
		}
		r.remaining--
		if r.remaining <= 0 {
			if complete {
				r.state, r.forcePos = ReasoningForcing, 0
			} else {
				r.state = ReasoningWaitingUTF8
			}
			r.end.state = 0
		}
	case ReasoningForcing:
		m := r.end.advance(tok)
		r.forcePos++
		if r.forcePos >= len(r.forced) {
			r.state, r.endMatch = ReasoningDone, m
		}
	}
}

// apply keeps only the token to force, when forcing.
func (r *reasoningBudget) apply(c *candidates) {
	if r.state != ReasoningForcing || r.forcePos >= len(r.forced) {
		return
	}
	forced := r.forced[r.forcePos]
	for i := range c.data {
		if c.data[i].ID != forced {
			c.data[i].Logit = float32(math.Inf(-1))
		}
	}
}

// endSeq is common_reasoning_budget_get_end_match: the end sequence that
// moved the budget to done, or nil.
func (r *reasoningBudget) endSeq() []int32 {
	if r.endMatch < 0 {
		return nil
	}
	return r.end.seqs[r.endMatch]
}
