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

	// the trie over the code points of every piece decoded from a clean
	// start (no partial UTF-8 sequence), node 0 its root; the terminals
	// (one per token in the trie) are numbered in depth-first order, so a
	// subtree's terminals are a range of positions
	nodes        []trieNode
	children     []trieChild
	posToken     []int32 // terminal position -> token id
	posPartial   []PartialUTF8
	tokenPos     []int32 // token id -> terminal position, -1 if not in the trie
	continuation []int32 // tokens whose piece starts with a continuation byte

	mu       sync.Mutex
	compiled map[compiledKey]*compiled
}

type compiledKey struct{ text, root string }

// trieNode is a node of the pieces' trie: its children are
// children[childStart:childEnd], the pieces ending at it are the terminals
// [termStart, termEnd), and those of its whole subtree [termStart, subEnd).
type trieNode struct {
	childStart, childEnd int32
	termStart, termEnd   int32
	subEnd               int32
	partial              bool // some piece ending here ends in a partial UTF-8 sequence
}

type trieChild struct {
	cp   uint32
	node int32
}

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
		v.buildNode(cps, 0, len(entries), 0)
	})
}

// buildNode makes the node for entries [lo, hi), which share their first
// depth code points, and its subtree; it returns the node's index.
func (v *Vocab) buildNode(cps func(int) []uint32, lo, hi, depth int) int32 {
	n := int32(len(v.nodes))
	v.nodes = append(v.nodes, trieNode{termStart: int32(lo), subEnd: int32(hi)})
	i := lo
	partial := false
	for i < hi && len(cps(i)) == depth {
		partial = partial || v.posPartial[i].NRemain != 0
		i++
	}
	// group the rest by the next code point
	type group struct {
		cp     uint32
		lo, hi int
	}
	var groups []group
	for j := i; j < hi; {
		cp := cps(j)[depth]
		k := j + 1
		for k < hi && cps(k)[depth] == cp {
			k++
		}
		groups = append(groups, group{cp, j, k})
		j = k
	}
	start := int32(len(v.children))
	for _, g := range groups {
		v.children = append(v.children, trieChild{cp: g.cp})
	}
	v.nodes[n].termEnd = int32(i)
	v.nodes[n].partial = partial
	v.nodes[n].childStart = start
	v.nodes[n].childEnd = start + int32(len(groups))
	for k, g := range groups {
		c := v.buildNode(cps, g.lo, g.hi, depth+1)
		v.children[start+int32(k)].node = c
	}
	return n
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
