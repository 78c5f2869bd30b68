package grammar

import "math/bits"

// bitset is a set of small non-negative integers.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int32)      { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) has(i int32) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }

// setRange sets [lo, hi).
func (b bitset) setRange(lo, hi int32) {
	if lo >= hi {
		return
	}
	lw, hw := lo>>6, (hi-1)>>6
	lm := ^uint64(0) << (uint(lo) & 63)
	hm := ^uint64(0) >> (63 - (uint(hi-1) & 63))
	if lw == hw {
		b[lw] |= lm & hm
		return
	}
	b[lw] |= lm
	for w := lw + 1; w < hw; w++ {
		b[w] = ^uint64(0)
	}
	b[hw] |= hm
}

// Mask is the set of tokens a grammar leaves alone before a draw: the
// tokens llama_grammar_apply_impl does not set to -Inf when it is applied to
// the whole vocabulary. A Mask is read-only (masks are shared).
type Mask struct {
	all  bool   // a lazy grammar awaiting its trigger: every token
	bits bitset // by token id
	n    int
}

// Allowed reports whether token id is in the mask.
func (m *Mask) Allowed(id int32) bool {
	if id < 0 || int(id) >= m.n {
		return false
	}
	return m.all || m.bits.has(id)
}

// Count returns the number of tokens in the mask.
func (m *Mask) Count() int {
	if m.all {
		return m.n
	}
	n := 0
	for _, w := range m.bits {
		n += bits.OnesCount64(w)
	}
	return n
}

// All reports whether the mask holds every token (a lazy grammar awaiting
// its trigger constrains nothing).
func (m *Mask) All() bool { return m.all }

// Mask returns the tokens llama_grammar_apply_impl allows over the whole
// vocabulary at g's state (see Allows for one token). Masks are computed by
// walking the trie of the vocabulary's pieces once with the grammar's
// automaton, and are kept per state: a state met again costs nothing.
func (g *Grammar) Mask() *Mask {
	g.v.build()
	if g.awaiting {
		return &Mask{all: true, n: g.v.n}
	}
	c := g.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if g.partial.NRemain <= 0 {
		st := c.states[g.cur]
		if st.mask != nil {
			return &Mask{bits: *st.mask, n: g.v.n}
		}
		b := g.trieMask(g.cur)
		if c.nMasks < maxMasks {
			c.states[g.cur].mask = &b
			c.nMasks++
		}
		return &Mask{bits: b, n: g.v.n}
	}
	return &Mask{bits: g.partialMask(g.cur, g.partial), n: g.v.n}
}

// trieMask computes the mask of state cur with no partial sequence pending:
// a depth-first walk of the trie in which each node is reached in the state
// its code points lead to (the walk leaves subtrees the grammar cannot
// continue into), the pieces ending at a node allowed when they end cleanly
// or in a partial sequence a class can complete, and every piece going
// past a node allowed by a token terminal on top of a stack there.
func (g *Grammar) trieMask(cur int32) bitset {
	v, c := g.v, g.c
	pos := newBitset(len(v.posToken))
	type item struct{ node, state int32 }
	todo := []item{{0, cur}}
	for len(todo) > 0 {
		it := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		n := &v.nodes[it.node]
		st := c.states[it.state]
		if n.termStart < n.termEnd {
			if !n.partial {
				pos.setRange(n.termStart, n.termEnd)
			} else {
				for p := n.termStart; p < n.termEnd; p++ {
					if c.endAllows(st, v.posPartial[p]) {
						pos.set(p)
					}
				}
			}
		}
		for _, e := range st.tokTops {
			p := int32(-1)
			if int(e.Value) < v.n {
				p = v.tokenPos[e.Value]
			}
			inside := n.termEnd <= p && p < n.subEnd
			if e.Type == Token {
				if inside {
					pos.set(p)
				}
			} else if inside {
				pos.setRange(n.termEnd, p)
				pos.setRange(p+1, n.subEnd)
			} else {
				pos.setRange(n.termEnd, n.subEnd)
			}
		}
		for _, ch := range v.children[n.childStart:n.childEnd] {
			var next int32
			if ch.cp < 128 {
				if next = st.ascii[ch.cp]; next < 0 {
					next = c.step(it.state, ch.cp)
				}
			} else {
				next = c.step(it.state, ch.cp)
			}
			if next != 0 {
				todo = append(todo, item{ch.node, next})
			}
		}
	}
	out := newBitset(v.n)
	for p, tok := range v.posToken {
		if pos.has(int32(p)) {
			out.set(tok)
		}
	}
	if c.states[cur].hasEmpty {
		for id, e := range v.eog {
			if e {
				out.set(int32(id))
			}
		}
	}
	return out
}

// partialMask computes the mask of state cur when the tokens accepted so far
// end in a partial sequence: only pieces starting with continuation bytes
// can complete it, and each is checked on its own.
func (g *Grammar) partialMask(cur int32, partial PartialUTF8) bitset {
	v := g.v
	out := newBitset(v.n)
	for _, id := range v.continuation {
		if !v.eog[id] && g.allowsLocked(cur, partial, id) {
			out.set(id)
		}
	}
	if g.c.states[cur].hasEmpty {
		for id, e := range v.eog {
			if e {
				out.set(int32(id))
			}
		}
	}
	return out
}
