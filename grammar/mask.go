package grammar

import (
	"math/bits"
	"sort"
)

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

// Words returns the mask as a bit set by token id: bit id%64 of word id/64.
// The slice is shared: do not modify it. Nil when All.
func (m *Mask) Words() []uint64 { return m.bits }

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
// past a node allowed by a token terminal on top of a stack there. The
// root's children (a piece's first code point: tens of thousands for a
// large vocabulary) are taken by runs of code points the state treats
// alike, so that a run the grammar refuses costs one step.
func (g *Grammar) trieMask(cur int32) bitset {
	v, c := g.v, g.c
	w := &maskWalk{v: v, c: c, pos: newBitset(len(v.posToken)), stack: make([]int32, 1, 64)}
	w.stack[0] = cur
	if !w.node(0, cur) {
		kids := v.rootKids
		for k := 0; k < len(kids); {
			cp := kids[k].cp
			if cp < 128 {
				w.scan(kids[k].node)
				k++
				continue
			}
			// the run of children in the interval of the state's bounds
			// holding cp: they all step to the same state
			st := c.states[cur]
			iv := sort.Search(len(st.bounds), func(i int) bool { return st.bounds[i] > cp }) - 1
			end := len(kids)
			if iv+1 < len(st.bounds) {
				hi := st.bounds[iv+1]
				end = k + sort.Search(len(kids)-k, func(i int) bool { return kids[k+i].cp >= hi })
			}
			if c.step(cur, cp) == 0 {
				k = end
				continue
			}
			for ; k < end; k++ {
				w.scan(kids[k].node)
			}
		}
	}
	out := newBitset(v.n)
	for wi, word := range w.pos {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &= word - 1
			out.set(v.posToken[wi<<6|b])
		}
	}
	for _, id := range v.long {
		if g.allowsLocked(cur, PartialUTF8{}, id) {
			out.set(id)
		}
	}
	if c.states[cur].hasEmpty {
		for _, id := range v.eogIDs {
			out.set(id)
		}
	}
	return out
}

// maskWalk is the state of trieMask's walk: the allowed terminal positions
// and the states along the current path (stack[d] at depth d).
type maskWalk struct {
	v     *Vocab
	c     *compiled
	pos   bitset
	stack []int32
}

// scan walks the subtree of node first (a child of the root) in one
// forward pass over its nodes.
func (w *maskWalk) scan(first int32) {
	v, c := w.v, w.c
	nodes := v.nodes
	for i, end := first, nodes[first].skip; i < end; {
		n := &nodes[i]
		parent := w.stack[n.depth-1]
		var s int32
		if n.cp < 128 {
			if s = c.states[parent].ascii[n.cp]; s < 0 {
				s = c.step(parent, n.cp)
			}
		} else {
			s = c.step(parent, n.cp)
		}
		if s == 0 {
			i = n.skip
			continue
		}
		if int(n.depth) < len(w.stack) {
			w.stack = w.stack[:n.depth+1]
			w.stack[n.depth] = s
		} else {
			w.stack = append(w.stack, s)
		}
		if w.node(i, s) {
			i = n.skip
		} else {
			i++
		}
	}
}

// node handles node i reached in state s: its own pieces, the token
// terminals on top of s's stacks for the pieces going past it, and, when
// every code point below it leads back to s, its whole subtree (then it
// returns true: the walk skips the subtree).
func (w *maskWalk) node(i, s int32) bool {
	v, c := w.v, w.c
	n := &v.nodes[i]
	st := c.states[s]
	if n.nTerm > 0 {
		end := n.termStart + int32(n.nTerm)
		if !n.partial {
			w.pos.setRange(n.termStart, end)
		} else {
			for p := n.termStart; p < end; p++ {
				if c.endAllows(st, v.posPartial[p]) {
					w.pos.set(p)
				}
			}
		}
	}
	if len(st.tokTops) == 0 {
		// a subtree whose every code point leads back to this state is
		// allowed whole, unless a piece in it ends in a partial sequence
		if n.sum >= 0 {
			if sum := &v.sums[n.sum]; !sum.partial && c.loops(s).loopsOver(sum) {
				w.pos.setRange(n.termStart+int32(n.nTerm), v.subEnd(i))
				return true
			}
		}
		return false
	}
	lo, hi := n.termStart+int32(n.nTerm), v.subEnd(i)
	for _, e := range st.tokTops {
		p := int32(-1)
		if int(e.Value) < v.n {
			p = v.tokenPos[e.Value]
		}
		inside := lo <= p && p < hi
		if e.Type == Token {
			if inside {
				w.pos.set(p)
			}
		} else if inside {
			w.pos.setRange(lo, p)
			w.pos.setRange(p+1, hi)
		} else {
			w.pos.setRange(lo, hi)
		}
	}
	return false
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
		for _, id := range v.eogIDs {
			out.set(id)
		}
	}
	return out
}

// Len returns the size of the vocabulary the mask is over.
func (m *Mask) Len() int { return m.n }
