package grammar

import (
	"fmt"
	"slices"
	"strconv"
)

// InitError is a grammar llama_grammar_init_impl refuses after parsing it;
// Msg is the reference's log line without its newline: "failed to parse
// grammar" (no rules), "grammar does not contain a 'root' symbol",
// "unsupported grammar, left recursion detected for nonterminal at index
// 3".
type InitError struct{ Msg string }

func (e *InitError) Error() string { return e.Msg }

// AcceptError is a token the grammar cannot take where the reference throws
// or aborts: "Unexpected empty grammar stack after accepting piece: ab
// (123)" (llama_grammar_accept_token's exception), or an end-of-generation
// token where the grammar cannot end (GGML_ABORT in
// llama_grammar_accept_impl).
type AcceptError struct{ Msg string }

func (e *AcceptError) Error() string { return "grammar: " + e.Msg }

// Options are what llama_grammar_init_impl takes besides the text: the
// start symbol and, for a lazy grammar, its triggers.
type Options struct {
	// Root is the start symbol; "" means "root" (what common_sampler_init
	// passes).
	Root string
	// Lazy grammars constrain nothing until a trigger: a token of
	// TriggerTokens is accepted, or TriggerPatterns match the text
	// generated so far (see Grammar.Accept).
	Lazy            bool
	TriggerPatterns []string // ECMAScript regular expressions, as std::regex reads them
	TriggerTokens   []int32
}

// Grammar is llama_grammar: a grammar's rules, the stacks it is at, the
// partial UTF-8 sequence the tokens accepted so far end in, and a lazy
// grammar's trigger state. Grammars made from the same text over the same
// Vocab share their compiled rules; a Grammar itself is not safe for
// concurrent use.
type Grammar struct {
	v    *Vocab
	c    *compiled
	text string
	opts Options

	cur     int32 // the state: the set of stacks
	partial PartialUTF8

	awaiting       bool
	triggerBuffer  string
	triggerTokPos  []tokenSpan
	triggerTokens  []int32
	triggerRegexps []*triggerPattern

	scratch []uint32
}

type tokenSpan struct {
	tok        int32
	start, end int
}

// New parses text and builds the grammar over v as llama_grammar_init_impl
// does (src/llama-grammar.cpp): a *ParseError when Parse refuses the text,
// an *InitError when it has no rules, no start symbol or left recursion, an
// error naming a trigger pattern the regular expression syntax refuses.
// The start stacks are each alternative of the start rule, advanced to
// their first terminals.
func New(text string, v *Vocab, o Options) (*Grammar, error) {
	if o.Root == "" {
		o.Root = "root"
	}
	rules, err := Parse(text, v.tok)
	if err != nil {
		return nil, err
	}
	if len(rules.Rules) == 0 {
		return nil, &InitError{"failed to parse grammar"}
	}
	root, ok := rules.Symbols[o.Root]
	if !ok {
		return nil, &InitError{fmt.Sprintf("grammar does not contain a '%s' symbol", o.Root)}
	}
	if i, ok := leftRecursion(rules.Rules); ok {
		return nil, &InitError{fmt.Sprintf("unsupported grammar, left recursion detected for nonterminal at index %d", i)}
	}
	g := &Grammar{v: v, text: text, opts: o, awaiting: o.Lazy}
	g.opts.TriggerPatterns = slices.Clone(o.TriggerPatterns)
	g.opts.TriggerTokens = slices.Clone(o.TriggerTokens)
	g.triggerTokens = g.opts.TriggerTokens
	for _, p := range o.TriggerPatterns {
		tp, err := newTriggerPattern(p)
		if err != nil {
			return nil, err
		}
		g.triggerRegexps = append(g.triggerRegexps, tp)
	}
	g.c = v.compile(text, o.Root, rules)
	c := g.c
	c.mu.Lock()
	defer c.mu.Unlock()
	var stacks []int32
	pos := c.ruleStart[root]
	for {
		s := int32(0)
		if !c.isEndOfSequence(pos) {
			s = c.push(0, pos)
		}
		c.advance(s, &stacks)
		for !c.isEndOfSequence(pos) {
			pos++
		}
		if c.elems[pos].Type != Alt {
			break
		}
		pos++
	}
	slices.Sort(stacks)
	g.cur = c.intern(stacks)
	return g, nil
}

// leftRecursion is llama_grammar_detect_left_recursion run over every rule:
// the index of the first rule found left-recursive.
func leftRecursion(rules [][]Element) (int, bool) {
	n := len(rules)
	visited, inProgress, mayBeEmpty := make([]bool, n), make([]bool, n), make([]bool, n)
	isEnd := func(e Element) bool { return e.Type == End || e.Type == Alt }
	var detect func(i int) bool
	detect = func(i int) bool {
		if inProgress[i] {
			return true
		}
		inProgress[i] = true
		rule := rules[i]
		atStart := true
		for _, e := range rule {
			if isEnd(e) {
				if atStart {
					mayBeEmpty[i] = true
					break
				}
				atStart = true
			} else {
				atStart = false
			}
		}
		recurse := true
		for _, e := range rule {
			if e.Type == RuleRef && recurse {
				if detect(int(e.Value)) {
					return true
				}
				if !mayBeEmpty[e.Value] {
					recurse = false
				}
			} else if isEnd(e) {
				recurse = true
			} else {
				recurse = false
			}
		}
		inProgress[i] = false
		visited[i] = true
		return false
	}
	for i := range n {
		if visited[i] {
			continue
		}
		if detect(i) {
			return i, true
		}
	}
	return 0, false
}

// Clone returns an independent copy of g in its current state
// (llama_grammar_clone_impl).
func (g *Grammar) Clone() *Grammar {
	h := *g
	h.triggerTokPos = slices.Clone(g.triggerTokPos)
	h.scratch = nil
	return &h
}

// Reset returns g to its start, lazy grammars to awaiting their trigger,
// as llama_sampler_grammar_reset does (it builds the grammar afresh from
// its text).
func (g *Grammar) Reset() error {
	h, err := New(g.text, g.v, g.opts)
	if err != nil {
		return err
	}
	*g = *h
	return nil
}

// Awaiting reports whether g is a lazy grammar still waiting for its
// trigger; until then it constrains nothing.
func (g *Grammar) Awaiting() bool { return g.awaiting }

// CanEnd reports whether one of the stacks is empty: the grammar may end
// here, so end-of-generation tokens are allowed.
func (g *Grammar) CanEnd() bool {
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	return g.c.states[g.cur].hasEmpty
}

// Partial returns the partial UTF-8 sequence the accepted tokens end in.
func (g *Grammar) Partial() PartialUTF8 { return g.partial }

// Allows reports whether llama_grammar_apply_impl leaves token id's logit
// alone (rather than setting it to -Inf): always while a lazy grammar
// awaits its trigger; for an end-of-generation token, when the grammar can
// end; for any other, when its piece is not empty, does not start with a
// NUL byte and continues some stack (a token terminal may also take it by
// id). Ids outside the vocabulary are not allowed.
func (g *Grammar) Allows(id int32) bool {
	if g.awaiting {
		return true
	}
	g.v.build()
	if id < 0 || int(id) >= g.v.n {
		return false
	}
	c := g.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return g.allowsLocked(g.cur, g.partial, id)
}

func (g *Grammar) allowsLocked(cur int32, partial PartialUTF8, id int32) bool {
	v, c := g.v, g.c
	if v.eog[id] {
		return c.states[cur].hasEmpty
	}
	if v.reject[id] {
		return false
	}
	cps, p := decodeUTF8(v.pieces[id], partial, g.scratch[:0])
	g.scratch = cps
	if p.NRemain < 0 {
		return false
	}
	return c.walkAllows(cur, id, untilZero(cps), p)
}

// walkAllows is llama_grammar_reject_candidates for one candidate whose
// code points (up to the first 0) are cps and whose piece ends in partial p:
// it is kept when some stack takes it.
func (c *compiled) walkAllows(cur, id int32, cps []uint32, p PartialUTF8) bool {
	for _, cp := range cps {
		for _, e := range c.states[cur].tokTops {
			if e.Type == Token && e.Value == uint32(id) || e.Type == TokenNot && e.Value != uint32(id) {
				return true
			}
		}
		if cur = c.step(cur, cp); cur == 0 {
			return false
		}
	}
	return c.endAllows(c.states[cur], p)
}

// endAllows is the check at the end of a candidate's code points: kept
// unless it ends in a partial sequence that no class on top of a stack
// could complete.
func (c *compiled) endAllows(st *state, p PartialUTF8) bool {
	if p.NRemain == 0 {
		return len(st.stacks) > 0
	}
	for _, s := range st.charTops {
		if c.matchPartialChar(c.stackTop[s], p) {
			return true
		}
	}
	return false
}

// Accept takes token id as llama_grammar_accept_impl does. While a lazy
// grammar awaits its trigger, a trigger token ends the wait and is taken;
// any other token's piece is added to the trigger buffer, and when a
// trigger pattern then matches it (llama_grammar_trigger_pattern::find),
// the wait ends and the tokens overlapping the match, from its first
// non-empty capture group (else the match) on, are taken, the first one
// possibly in part. Otherwise an end-of-generation token changes nothing
// when the grammar can end and is an *AcceptError when it cannot (the
// reference aborts), and any other token is taken (AcceptPiece).
func (g *Grammar) Accept(id int32) error {
	g.v.build()
	if id < 0 || int(id) >= g.v.n {
		return &AcceptError{fmt.Sprintf("token %d is outside the vocabulary of %d tokens", id, g.v.n)}
	}
	piece := g.v.pieces[id]
	if g.awaiting {
		if slices.Contains(g.triggerTokens, id) {
			g.awaiting = false
			g.triggerBuffer = ""
			return g.AcceptPiece(id, piece)
		}
		g.triggerTokPos = append(g.triggerTokPos, tokenSpan{id, len(g.triggerBuffer), len(g.triggerBuffer) + len(piece)})
		g.triggerBuffer += piece
		for _, tp := range g.triggerRegexps {
			start, ok := tp.find(g.triggerBuffer)
			if !ok {
				continue
			}
			g.awaiting = false
			for _, ts := range g.triggerTokPos {
				if ts.end <= start {
					continue
				}
				from := max(ts.start, start)
				if err := g.AcceptPiece(ts.tok, g.triggerBuffer[from:ts.end]); err != nil {
					return err
				}
			}
			g.triggerBuffer = ""
			g.triggerTokPos = nil
			return nil
		}
		return nil
	}
	if g.v.eog[id] {
		if g.CanEnd() {
			return nil
		}
		return &AcceptError{fmt.Sprintf("end-of-generation token %d where the grammar cannot end", id)}
	}
	return g.AcceptPiece(id, piece)
}

// AcceptPiece is llama_grammar_accept_token: it advances the stacks over
// piece (the token's text, or part of it when a trigger is replayed): stacks
// with a token terminal on top take the token by id, the others take each
// code point of the piece in turn. It is an *AcceptError when no stack
// survives; g is then unchanged.
func (g *Grammar) AcceptPiece(id int32, piece string) error {
	c := g.c
	c.mu.Lock()
	defer c.mu.Unlock()
	cps, p := decodeUTF8(piece, g.partial, g.scratch[:0])
	g.scratch = cps
	st := c.states[g.cur]
	var out []int32
	for _, s := range st.stacks {
		if s == 0 {
			continue
		}
		e := c.elems[c.stackTop[s]]
		if e.Type == Token || e.Type == TokenNot {
			if e.Type == Token && e.Value == uint32(id) || e.Type == TokenNot && e.Value != uint32(id) {
				for _, n := range c.afterTerminal(s) {
					addUnique(&out, n)
				}
			}
		}
	}
	if len(cps) == 0 {
		for _, s := range st.charTops {
			addUnique(&out, s)
		}
	} else {
		cur := g.cur
		for _, cp := range cps {
			if cur = c.step(cur, cp); cur == 0 {
				break
			}
		}
		for _, s := range c.states[cur].stacks {
			addUnique(&out, s)
		}
	}
	if len(out) == 0 {
		// llama_grammar_accept_token's exception; the reference has by then
		// replaced its stacks with the empty set, which bankml does not
		// keep: the caller stops on this error.
		return &AcceptError{"Unexpected empty grammar stack after accepting piece: " + piece + " (" + strconv.Itoa(int(id)) + ")"}
	}
	slices.Sort(out)
	g.cur = c.intern(out)
	g.partial = p
	return nil
}
