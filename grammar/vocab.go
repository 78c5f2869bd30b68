package grammar

import (
	"slices"
	"sync"
)

// Tokens is what a grammar needs from a vocabulary (tokenizer.Tokenizer
// has it): the size, each token's piece as llama_token_to_piece(special =
// true) gives it (the reference's piece cache), which tokens end
// generation, and tokenization with parse_special for token terminals such
// as <think>.
type Tokens interface {
	NVocab() int
	TokenToPiece(id int32, special bool) []byte
	IsEOG(id int32) bool
	Tokenize(text string, addSpecial, parseSpecial bool) []int32
}

// Vocab is a vocabulary prepared for grammars: each token's piece, its end
// of generation flag, and a trie of the pieces' code points that masks are
// computed over. It is built lazily, on the first use that needs it, and is
// safe for concurrent use. It also keeps the grammars compiled over it
// (their automata grow as they are used), shared by every Grammar made from
// the same text, so that a grammar used by many requests (JSON mode) is
// explored once.
type Vocab struct {
	tok Tokens

	once   sync.Once
	n      int
	pieces []string // token -> piece (llama_token_to_piece, special = true)
	reject []bool   // token -> never allowed when the grammar is active (empty piece, or a NUL first byte)
	eog    []bool
	eogIDs []int32

	// the trie over the code points of every piece decoded from a clean
	// start (no partial UTF-8 sequence), its nodes in depth-first order
	// (node 0 the root, a node's subtree the nodes after it up to skip);
	// the terminals (one per token in the trie) are numbered in the same
	// order, so a subtree's terminals are a range of positions
	nodes        []trieNode
	sums         []trieSum
	rootKids     []rootKid // the root's children in code point order
	posToken     []int32   // terminal position -> token id
	posPartial   []PartialUTF8
	tokenPos     []int32 // token id -> terminal position, -1 if not in the trie
	continuation []int32 // tokens whose piece starts with a continuation byte
	long         []int32 // tokens of more than maxTrieDepth code points, left out of the trie

	mu       sync.Mutex
	compiled map[compiledKey]*compiled
}

type compiledKey struct{ text, root string }

// trieNode is a node of the pieces' trie, laid out so that a mask is one
// forward scan of the nodes: the code point leading to it, its depth (the
// root's is 0), the index of the first node after its subtree, and its
// terminals [termStart, termStart+nTerm) (the pieces ending at it). The
// terminals of its whole subtree end where those of node skip start.
type trieNode struct {
	cp        uint32
	skip      int32
	termStart int32
	nTerm     uint32
	sum       int32 // index of the subtree's summary in Vocab.sums, -1 for a leaf
	depth     uint16
	partial   bool // some piece ending here ends in a partial UTF-8 sequence
}

// rootKid is a child of the trie's root: its code point and node.
type rootKid struct {
	cp   uint32
	node int32
}

// trieSum summarizes the strict subtree of an inner node: which code points
// below 128 occur in it (ascii), the range of the others (lo > hi when
// none), and whether a piece in it ends in a partial sequence.
type trieSum struct {
	ascii   [2]uint64
	lo, hi  uint32
	partial bool
}

// maxTrieDepth bounds the depth of the trie (trieNode.depth).
const maxTrieDepth = 1<<16 - 1

// NewVocab prepares t for grammars; nothing is computed before first use.
func NewVocab(t Tokens) *Vocab {
	return &Vocab{tok: t, compiled: map[compiledKey]*compiled{}}
}

// Tokens returns the vocabulary NewVocab was given.
func (v *Vocab) Tokens() Tokens { return v.tok }

func (v *Vocab) build() {
	v.once.Do(func() {
		v.n = v.tok.NVocab()
		v.pieces = make([]string, v.n)
		v.reject = make([]bool, v.n)
		v.eog = make([]bool, v.n)
		v.tokenPos = make([]int32, v.n)
		type entry struct {
			tok     int32
			cps     []uint32
			partial PartialUTF8
		}
		var entries []entry
		var scratch []uint32
		for id := range v.n {
			v.tokenPos[id] = -1
			piece := string(v.tok.TokenToPiece(int32(id), true))
			v.eog[id] = v.tok.IsEOG(int32(id))
			if v.eog[id] {
				v.eogIDs = append(v.eogIDs, int32(id))
			}
			v.pieces[id] = piece
			if piece == "" || piece[0] == 0 {
				v.reject[id] = true
				continue
			}
			if piece[0]>>6 == 2 {
				v.continuation = append(v.continuation, int32(id))
			}
			if v.eog[id] {
				continue
			}
			cps, p := decodeUTF8(piece, PartialUTF8{}, scratch[:0])
			scratch = cps
			if p.NRemain < 0 {
				continue // invalid from a clean start: never allowed
			}
			if len(untilZero(cps)) > maxTrieDepth {
				v.long = append(v.long, int32(id)) // checked on its own in every mask
				continue
			}
			entries = append(entries, entry{int32(id), slices.Clone(untilZero(cps)), p})
		}
		slices.SortFunc(entries, func(a, b entry) int {
			if c := slices.Compare(a.cps, b.cps); c != 0 {
				return c
			}
			return int(a.tok - b.tok)
		})
		v.posToken = make([]int32, len(entries))
		v.posPartial = make([]PartialUTF8, len(entries))
		for i, e := range entries {
			v.posToken[i] = e.tok
			v.posPartial[i] = e.partial
			v.tokenPos[e.tok] = int32(i)
		}
		cps := func(i int) []uint32 { return entries[i].cps }
		v.buildNode(cps, 0, len(entries), 0, 0)
		for i := int32(1); int(i) < len(v.nodes); i = v.nodes[i].skip {
			v.rootKids = append(v.rootKids, rootKid{v.nodes[i].cp, i})
		}
	})
}

// buildNode makes the node for entries [lo, hi), which share their first
// depth code points, and its subtree, in depth-first order.
func (v *Vocab) buildNode(cps func(int) []uint32, lo, hi, depth int, cp uint32) trieSum {
	n := len(v.nodes)
	v.nodes = append(v.nodes, trieNode{cp: cp, termStart: int32(lo), depth: uint16(depth), sum: -1})
	i := lo
	partial := false
	for i < hi && len(cps(i)) == depth {
		partial = partial || v.posPartial[i].NRemain != 0
		i++
	}
	v.nodes[n].nTerm = uint32(i - lo)
	v.nodes[n].partial = partial
	sub := trieSum{lo: ^uint32(0)}
	inner := i < hi
	for i < hi {
		c := cps(i)[depth]
		j := i + 1
		for j < hi && cps(j)[depth] == c {
			j++
		}
		cs := v.buildNode(cps, i, j, depth+1, c)
		if c < 128 {
			sub.ascii[c>>6] |= 1 << (c & 63)
		} else {
			sub.lo, sub.hi = min(sub.lo, c), max(sub.hi, c)
		}
		sub.ascii[0] |= cs.ascii[0]
		sub.ascii[1] |= cs.ascii[1]
		sub.lo, sub.hi = min(sub.lo, cs.lo), max(sub.hi, cs.hi)
		sub.partial = sub.partial || cs.partial
		i = j
	}
	v.nodes[n].skip = int32(len(v.nodes))
	if inner {
		v.nodes[n].sum = int32(len(v.sums))
		v.sums = append(v.sums, sub)
	}
	// what the parent's summary takes from this node: its subtree and its
	// own terminals' partial flag
	up := sub
	up.partial = sub.partial || partial
	return up
}

// subEnd returns the end of the terminals of node i's subtree.
func (v *Vocab) subEnd(i int32) int32 {
	if int(v.nodes[i].skip) < len(v.nodes) {
		return v.nodes[v.nodes[i].skip].termStart
	}
	return int32(len(v.posToken))
}

// NVocab returns the number of tokens.
func (v *Vocab) NVocab() int { v.build(); return v.n }

// compile returns the shared compiled form of a grammar's rules: the one
// kept for the same text and root unless it has grown past maxStates.
func (v *Vocab) compile(text, root string, rules *Rules) *compiled {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := compiledKey{text, root}
	if c, ok := v.compiled[k]; ok && !c.full() {
		return c
	}
	c := newCompiled(rules.Rules)
	if len(v.compiled) >= maxCompiled {
		clear(v.compiled)
	}
	v.compiled[k] = c
	return c
}

// maxCompiled bounds the grammars a Vocab keeps compiled.
const maxCompiled = 64
