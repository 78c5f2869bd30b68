package tokenizer

import (
	"fmt"
	"strings"

	"github.com/bankml/bankml/tokenizer/internal/ucd"
)

// BPE is llama.cpp's byte-level BPE tokenizer (tokenizer.ggml.model "gpt2", LLAMA_VOCAB_TYPE_BPE) over one
// vocabulary and one pre-tokenizer (tokenizer.ggml.pre). It is immutable after NewBPE and safe for concurrent use.
type BPE struct {
	core
	pre          *preTokenizer
	preKind      string
	ignoreMerges bool
	partIDs      map[string]int32 // every left or right part of a merge → a dense index
	ranks        map[uint64]int32 // (left index << 32 | right index) → merge rank (its index in the list)
}

// lookupPre finds tokenizer.ggml.pre in llama.cpp's table: "" is "default"; a name llama.cpp knows but bankml
// does not implement, or one llama.cpp does not know ("unknown pre-tokenizer type"), is an error naming it.
func lookupPre(pre string) (preName, error) {
	if pre == "" {
		pre = "default"
	}
	for _, p := range preNames {
		for _, n := range p.names {
			if n == pre {
				return p, nil
			}
		}
	}
	if why, ok := refusedPres[pre]; ok {
		return preName{}, fmt.Errorf("tokenizer: pre-tokenizer %q not supported (it %s)", pre, why)
	}
	return preName{}, fmt.Errorf("tokenizer: unknown pre-tokenizer type %q", pre)
}

// NewBPE builds the BPE tokenizer of v (v.Merges holds tokenizer.ggml.merges, "left right" by rank; v.Pre the
// pre-tokenizer name), as llama_vocab::impl::load does for a "gpt2" vocabulary: the pre-tokenizer, ignore_merges
// and clean_spaces chosen by name, the merge ranks (the first of duplicate pairs kept; an entry without a space
// after its first byte is the pair ("", "")), the shared special-token rules, and the piece cache. v.AddBOS is
// taken as given (FromGGUF applies the pre-tokenizer's default before the GGUF key). An unknown or unimplemented
// pre-tokenizer and a malformed vocabulary are errors.
func NewBPE(v Vocab) (*BPE, error) {
	p, err := lookupPre(v.Pre)
	if err != nil {
		return nil, err
	}
	pt, err := newPreTokenizer(p.kind)
	if err != nil {
		return nil, err
	}
	c, err := newCore(v, kindBPE)
	if err != nil {
		return nil, err
	}
	b := &BPE{core: *c, pre: pt, preKind: p.kind, ignoreMerges: p.ignoreMerges,
		partIDs: make(map[string]int32, len(v.Merges)/4), ranks: make(map[uint64]int32, len(v.Merges))}
	b.cleanSpaces = p.cleanSpaces
	part := func(s string) int32 {
		if id, ok := b.partIDs[s]; ok {
			return id
		}
		id := int32(len(b.partIDs))
		b.partIDs[s] = id
		return id
	}
	for i, m := range v.Merges {
		var first, second string
		if len(m) > 1 {
			if j := strings.IndexByte(m[1:], ' '); j >= 0 {
				first, second = m[:j+1], m[j+2:]
			}
		}
		key := uint64(part(first))<<32 | uint64(part(second))
		if _, dup := b.ranks[key]; !dup {
			b.ranks[key] = int32(i)
		}
	}
	// The newline token: the first token of "\n" (no special tokens are split yet at this point of load).
	b.nl = b.pad
	if ids := b.tokenizeText("\n", nil, &bpeState{}); len(ids) > 0 {
		b.nl = ids[0]
	}
	if err := b.finish(v, b.computePiece); err != nil {
		return nil, err
	}
	return b, nil
}

// PreTokenizer returns the llama_vocab_pre_type the tokenizer uses, without its LLAMA_VOCAB_PRE_TYPE_ prefix
// (e.g. "QWEN2", "LLAMA3", "DEFAULT").
func (b *BPE) PreTokenizer() string { return b.preKind }

// computePiece is llama_token_to_piece(id, special = true, lstrip = 0) for BPE (without escaped white space):
// control, unknown and user-defined tokens give their text, normal tokens their text decoded from GPT-2's byte
// alphabet (llama_decode_text: a character outside it becomes "[UNK_BYTE_0x<its UTF-8 in hex><the token's
// text>]"), byte tokens the byte their <0xNN> text names.
func (b *BPE) computePiece(id int32) (string, error) {
	a, w := b.attr[id], b.text[id]
	switch {
	case a&(AttrUnknown|AttrControl|AttrUserDefined) != 0:
		return w, nil
	case a&AttrNormal != 0:
		var sb strings.Builder
		var u8 [4]byte
		for _, c := range decodeCpts(w, nil) {
			enc, _ := ucd.AppendUTF8(u8[:0], c)
			if x, ok := unicodeToByte[string(enc)]; ok {
				sb.WriteByte(x)
				continue
			}
			sb.WriteString("[UNK_BYTE_0x")
			for _, e := range enc {
				fmt.Fprintf(&sb, "%02x", e)
			}
			sb.WriteString(w)
			sb.WriteString("]")
		}
		return sb.String(), nil
	case a&AttrByte != 0:
		x, err := tokenByte(w)
		if err != nil {
			return "", fmt.Errorf("tokenizer: byte token %d: %w", id, err)
		}
		return string([]byte{x}), nil
	}
	return "", nil
}

// Tokenize converts text to token ids as llama_tokenize(vocab, text, addSpecial, parseSpecial) does for a BPE
// vocabulary: special tokens are split out first (control ones only with parseSpecial, user-defined ones always);
// each remaining fragment is cut into words by the pre-tokenizer, every word byte-encoded and merged pair by pair
// in merge-rank order (leftmost first on equal ranks; with ignore_merges a word that is a token stays whole); a
// final symbol that is not a token becomes the tokens of its single bytes, those that exist. With addSpecial, BOS
// and EOS are added where the vocabulary asks for them.
func (b *BPE) Tokenize(text string, addSpecial, parseSpecial bool) []int32 {
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && b.addBOS {
		out = append(out, b.bos)
	}
	st := &bpeState{}
	out = b.tokenizeFragments(text, parseSpecial, out, func(raw string, _ bool, out []int32) []int32 {
		return b.tokenizeText(raw, out, st)
	})
	if addSpecial && b.addEOS {
		out = append(out, b.eos)
	}
	return out
}

// bpeBigram is llm_bigram_bpe: a candidate merge of two adjacent symbols.
type bpeBigram struct {
	rank        int32
	left, right int
	size        int
}

// bpeState holds one Tokenize call's buffers.
type bpeState struct {
	split splitBuf
	syms  []symbol
	queue []bpeBigram
}

// tokenizeText is llm_tokenizer_bpe_session::tokenize for one raw fragment.
func (b *BPE) tokenizeText(text string, out []int32, st *bpeState) []int32 {
	b.pre.split(text, &st.split, true, func(word []byte) {
		out = b.tokenizeWord(string(word), out, st)
	})
	return out
}

// bigramBefore is llm_bigram_bpe::comparator's order for the queue's top: lower rank first, then leftmost.
func bigramBefore(x, y bpeBigram) bool {
	return x.rank < y.rank || (x.rank == y.rank && x.left < y.left)
}

func (st *bpeState) push(g bpeBigram) {
	q := append(st.queue, g)
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !bigramBefore(q[i], q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
	st.queue = q
}

func (st *bpeState) pop() bpeBigram {
	q := st.queue
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q) && bigramBefore(q[l], q[m]) {
			m = l
		}
		if r < len(q) && bigramBefore(q[r], q[m]) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	st.queue = q
	return top
}

// tokenizeWord merges one byte-encoded word and appends its tokens. The queue never holds two entries of equal
// rank and position (a rank names one pair of texts, and a position one pair of symbols), so its order is the
// comparator's whatever the heap's shape.
func (b *BPE) tokenizeWord(w string, out []int32, st *bpeState) []int32 {
	if w == "" {
		return out
	}
	if b.ignoreMerges {
		if id, ok := b.ids[w]; ok {
			return append(out, id)
		}
	}
	st.syms = splitSymbols(w, st.syms)
	st.queue = st.queue[:0]
	add := func(left, right int) {
		if left == -1 || right == -1 {
			return
		}
		l, r := st.syms[left], st.syms[right]
		li, ok := b.partIDs[w[l.off:l.off+l.n]]
		if !ok {
			return
		}
		ri, ok := b.partIDs[w[r.off:r.off+r.n]]
		if !ok {
			return
		}
		rank, ok := b.ranks[uint64(li)<<32|uint64(ri)]
		if !ok {
			return
		}
		st.push(bpeBigram{rank: rank, left: left, right: right, size: l.n + r.n})
	}
	for i := 1; i < len(st.syms); i++ {
		add(i-1, i)
	}
	for len(st.queue) > 0 {
		g := st.pop()
		l, r := &st.syms[g.left], &st.syms[g.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != g.size {
			continue // outdated
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			st.syms[r.next].prev = g.left
		}
		add(l.prev, g.left)
		add(g.left, l.next)
	}
	for _, sym := range st.syms {
		if sym.n == 0 {
			continue
		}
		piece := w[sym.off : sym.off+sym.n]
		if id, ok := b.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(piece); j++ {
			if id, ok := b.ids[piece[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}
