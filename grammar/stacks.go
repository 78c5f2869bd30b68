package grammar

import (
	"slices"
	"sort"
	"sync"
	"unsafe"
)

// This file holds the pushdown stacks of llama-grammar.cpp and the
// deterministic automaton built over sets of them.
//
// A stack (llama_grammar_stack: positions of grammar elements, the top
// last) is hash-consed: stack id 0 is the empty stack, and every other id
// names a pair (top position, id of the stack below), so pushing, popping
// and comparing are O(1). The reference keeps a vector of stacks; its
// results (the masks, the stacks after a token) depend only on the set of
// stacks, which is what a state is: a sorted set of stack ids, interned.
// State 0 is the empty set (nothing can follow). Transitions between states
// on a code point are computed once and kept in the state.

// compiled is a grammar's rules, flattened, with the automaton built over
// them. It grows as the automaton is explored.
type compiled struct {
	// mu guards everything below elems and ruleStart (which never change):
	// Grammars made from the same text share a compiled and explore it
	// together.
	mu sync.Mutex

	elems     []Element // every rule's elements, one after another
	ruleStart []int32   // rule id -> position of its first element

	stackTop    []int32 // stack id -> position of its top element (-1 for the empty stack)
	stackParent []int32 // stack id -> id of the stack below its top
	stackIDs    map[[2]int32]int32
	after       map[int32][]int32 // stack id -> the stacks once its top terminal is matched (sorted)

	states   []*state
	stateIDs map[string]int32
	nMasks   int // masks kept in states
}

// Bounds on a compiled grammar's growth: past maxStates states the Vocab
// compiles the text afresh for new Grammars; past maxMasks masks no more are
// kept.
const (
	maxStates = 1 << 16
	maxMasks  = 512
)

func (c *compiled) full() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.states) > maxStates
}

// state is a set of stacks and what is known about it.
type state struct {
	stacks   []int32 // sorted stack ids
	hasEmpty bool    // the empty stack is a member: the grammar may end here
	charTops []int32 // member stacks whose top is a character class
	tokTops  []Element

	ascii [128]int32 // transition on code points below 128; -1 not yet known

	// transitions on other code points: the code points split into
	// intervals [bounds[i], bounds[i+1]) within which every member's class
	// either matches or not; next[i] is the state for interval i, -1 not
	// yet known.
	bounds []uint32
	next   []int32

	mask *bitset // the mask for this state with no partial UTF-8 sequence, once computed

	// the code points that lead back to this state: loopASCII below 128,
	// loopNext marks the intervals (of bounds) that do; computed by loops
	loopKnown bool
	loopASCII [2]uint64
	loopNext  []bool
}

func newCompiled(rules [][]Element) *compiled {
	c := &compiled{stackIDs: map[[2]int32]int32{}, after: map[int32][]int32{}, stateIDs: map[string]int32{}}
	for _, r := range rules {
		c.ruleStart = append(c.ruleStart, int32(len(c.elems)))
		c.elems = append(c.elems, r...)
	}
	c.stackTop = []int32{-1}
	c.stackParent = []int32{-1}
	c.intern(nil) // state 0: the empty set
	return c
}

// push returns the stack s with pos on top.
func (c *compiled) push(s, pos int32) int32 {
	k := [2]int32{pos, s}
	if id, ok := c.stackIDs[k]; ok {
		return id
	}
	id := int32(len(c.stackTop))
	c.stackTop = append(c.stackTop, pos)
	c.stackParent = append(c.stackParent, s)
	c.stackIDs[k] = id
	return id
}

func (c *compiled) isEndOfSequence(pos int32) bool {
	t := c.elems[pos].Type
	return t == End || t == Alt
}

// advance is llama_grammar_advance_stack: it expands the rule references at
// the top of stack s until every resulting stack has a terminal (a
// character class or a token) on top or is empty, adding those to out.
func (c *compiled) advance(s int32, out *[]int32) {
	todo := []int32{s}
	var seen map[int32]bool
	for len(todo) > 0 {
		cur := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen == nil {
			seen = map[int32]bool{}
		}
		if seen[cur] {
			continue
		}
		seen[cur] = true
		if cur == 0 {
			addUnique(out, cur)
			continue
		}
		pos := c.stackTop[cur]
		e := c.elems[pos]
		switch e.Type {
		case RuleRef:
			sub := c.ruleStart[e.Value]
			base := c.stackParent[cur]
			if !c.isEndOfSequence(pos + 1) {
				base = c.push(base, pos+1)
			}
			for {
				next := base
				if !c.isEndOfSequence(sub) {
					next = c.push(base, sub)
				}
				todo = append(todo, next)
				for !c.isEndOfSequence(sub) {
					sub++
				}
				if c.elems[sub].Type != Alt {
					break
				}
				sub++
			}
		case Char, CharNot, CharAny, Token, TokenNot:
			addUnique(out, cur)
		default:
			panic("grammar: a stack was left on the middle of a character class or the end of a rule")
		}
	}
}

func addUnique(out *[]int32, s int32) {
	if !slices.Contains(*out, s) {
		*out = append(*out, s)
	}
}

// afterTerminal returns the stacks that follow stack s once its top
// terminal (a class or a token) has matched: the rest of the stack with the
// next element of the sequence pushed, advanced (llama_grammar_accept_chr,
// and the token branch of llama_grammar_accept_token).
func (c *compiled) afterTerminal(s int32) []int32 {
	if r, ok := c.after[s]; ok {
		return r
	}
	pos := c.stackTop[s]
	next := pos + 1
	if t := c.elems[pos].Type; t != Token && t != TokenNot {
		next = c.classEnd(pos)
	}
	base := c.stackParent[s]
	if !c.isEndOfSequence(next) {
		base = c.push(base, next)
	}
	var out []int32
	c.advance(base, &out)
	slices.Sort(out)
	c.after[s] = out
	return out
}

// classEnd returns the position after the character class starting at pos
// (llama_grammar_match_char's second result).
func (c *compiled) classEnd(pos int32) int32 {
	for {
		if c.elems[pos+1].Type == CharRngUpper {
			pos += 2
		} else {
			pos++
		}
		if c.elems[pos].Type != CharAlt {
			return pos
		}
	}
}

// matchChar is llama_grammar_match_char's first result: whether code point
// chr satisfies the class at pos.
func (c *compiled) matchChar(pos int32, chr uint32) bool {
	e := &c.elems
	positive := (*e)[pos].Type == Char || (*e)[pos].Type == CharAny
	found := false
	for {
		if (*e)[pos+1].Type == CharRngUpper {
			found = found || (*e)[pos].Value <= chr && chr <= (*e)[pos+1].Value
			pos += 2
		} else if (*e)[pos].Type == CharAny {
			found = true
			pos++
		} else {
			found = found || (*e)[pos].Value == chr
			pos++
		}
		if (*e)[pos].Type != CharAlt {
			break
		}
	}
	return found == positive
}

// matchPartialChar is llama_grammar_match_partial_char: whether some
// continuation of the partial sequence could satisfy the class at pos.
func (c *compiled) matchPartialChar(pos int32, p PartialUTF8) bool {
	e := c.elems
	positive := e[pos].Type == Char || e[pos].Type == CharAny
	if p.NRemain < 0 || p.NRemain == 1 && p.Value < 2 {
		return false
	}
	low := p.Value << (p.NRemain * 6)
	high := low | (1<<(p.NRemain*6) - 1)
	if low == 0 {
		switch p.NRemain {
		case 2:
			low = 1 << 11
		case 3:
			low = 1 << 16
		}
	}
	for {
		if e[pos+1].Type == CharRngUpper {
			if e[pos].Value <= high && low <= e[pos+1].Value {
				return positive
			}
			pos += 2
		} else if e[pos].Type == CharAny {
			return true
		} else {
			if low <= e[pos].Value && e[pos].Value <= high {
				return positive
			}
			pos++
		}
		if e[pos].Type != CharAlt {
			break
		}
	}
	return !positive
}

// intern returns the state of the sorted set of stacks, making it.
func (c *compiled) intern(stacks []int32) int32 {
	key := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(stacks))), len(stacks)*4)
	if id, ok := c.stateIDs[key]; ok {
		return id
	}
	st := &state{stacks: slices.Clone(stacks)}
	for i := range st.ascii {
		st.ascii[i] = -1
	}
	var bounds []uint32
	for _, s := range st.stacks {
		if s == 0 {
			st.hasEmpty = true
			continue
		}
		pos := c.stackTop[s]
		e := c.elems[pos]
		if e.Type == Token || e.Type == TokenNot {
			st.tokTops = append(st.tokTops, e)
			continue
		}
		st.charTops = append(st.charTops, s)
		bounds = c.classBounds(pos, bounds)
	}
	bounds = append(bounds, 128)
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	i := sort.Search(len(bounds), func(i int) bool { return bounds[i] >= 128 })
	st.bounds = bounds[i:]
	st.next = make([]int32, len(st.bounds))
	for i := range st.next {
		st.next[i] = -1
	}
	id := int32(len(c.states))
	c.states = append(c.states, st)
	c.stateIDs[string(key)] = id
	return id
}

// classBounds appends the code points where the class at pos starts or
// stops matching.
func (c *compiled) classBounds(pos int32, out []uint32) []uint32 {
	e := c.elems
	for {
		if e[pos+1].Type == CharRngUpper {
			out = append(out, e[pos].Value)
			if e[pos+1].Value != ^uint32(0) {
				out = append(out, e[pos+1].Value+1)
			}
			pos += 2
		} else if e[pos].Type == CharAny {
			pos++
		} else {
			out = append(out, e[pos].Value)
			if e[pos].Value != ^uint32(0) {
				out = append(out, e[pos].Value+1)
			}
			pos++
		}
		if e[pos].Type != CharAlt {
			return out
		}
	}
}

// step returns the state after code point cp from state id.
func (c *compiled) step(id int32, cp uint32) int32 {
	st := c.states[id]
	if cp < 128 {
		if n := st.ascii[cp]; n >= 0 {
			return n
		}
		n := c.computeStep(st, cp)
		c.states[id].ascii[cp] = n
		return n
	}
	// the interval holding cp: bounds[0] is 128
	i := sort.Search(len(st.bounds), func(i int) bool { return st.bounds[i] > cp }) - 1
	if n := st.next[i]; n >= 0 {
		return n
	}
	n := c.computeStep(st, cp)
	c.states[id].next[i] = n
	return n
}

func (c *compiled) computeStep(st *state, cp uint32) int32 {
	var out []int32
	for _, s := range st.charTops {
		if c.matchChar(c.stackTop[s], cp) {
			for _, n := range c.afterTerminal(s) {
				addUnique(&out, n)
			}
		}
	}
	slices.Sort(out)
	return c.intern(out)
}

// loops computes which code points lead from state id back to itself.
func (c *compiled) loops(id int32) *state {
	st := c.states[id]
	if st.loopKnown {
		return st
	}
	for cp := uint32(0); cp < 128; cp++ {
		if c.step(id, cp) == id {
			st.loopASCII[cp>>6] |= 1 << (cp & 63)
		}
	}
	st.loopNext = make([]bool, len(st.bounds))
	for i, b := range st.bounds {
		st.loopNext[i] = c.step(id, b) == id
	}
	st.loopKnown = true
	return st
}

// loopsOver reports whether every code point of a subtree summary leads
// from st back to st.
func (st *state) loopsOver(s *trieSum) bool {
	if s.ascii[0]&^st.loopASCII[0] != 0 || s.ascii[1]&^st.loopASCII[1] != 0 {
		return false
	}
	if s.lo > s.hi {
		return true
	}
	i := sort.Search(len(st.bounds), func(i int) bool { return st.bounds[i] > s.lo }) - 1
	for ; i < len(st.bounds) && (i < 0 || st.bounds[i] <= s.hi); i++ {
		if i < 0 || !st.loopNext[i] {
			return false
		}
	}
	return true
}
