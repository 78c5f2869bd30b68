package tokenizer

import "strings"

// fragment is a piece of the input: a special token already recognised (tok >= 0) or a
// span [off, off+n) of raw text still to be tokenized (tok == None).
type fragment struct {
	tok    int32
	off, n int
}

// partition splits text around the special tokens, as llama_vocab::impl::
// tokenizer_st_partition does: tokens are taken longest first (in s.special's order), each
// one split out of every raw fragment at its leftmost non-overlapping occurrences. Control
// and unknown tokens are split only with parseSpecial; user-defined tokens always are.
// A token with the lstrip (rstrip) attribute also swallows the white space before (after) it.
func (s *core) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{tok: None, off: 0, n: len(text)}}
	var next []fragment
	for _, id := range s.special {
		a := s.attr[id]
		if !parseSpecial && a&(AttrControl|AttrUnknown) != 0 {
			continue
		}
		w := s.text[id]
		next = next[:0]
		for _, f := range frags {
			if f.tok != None {
				next = append(next, f)
				continue
			}
			off, n := f.off, f.n
			for {
				i := strings.Index(text[off:off+n], w)
				if i < 0 {
					break
				}
				if i > 0 {
					left := i
					if a&AttrLStrip != 0 {
						for left > 0 && isSpace(text[off+left-1]) {
							left--
						}
					}
					if left > 0 {
						next = append(next, fragment{tok: None, off: off, n: left})
					}
				}
				next = append(next, fragment{tok: id})
				roff, rn := off+i+len(w), n-i-len(w)
				if a&AttrRStrip != 0 {
					for rn > 0 && isSpace(text[roff]) {
						roff++
						rn--
					}
				}
				off, n = roff, rn
				if n == 0 {
					break
				}
			}
			if n > 0 {
				next = append(next, fragment{tok: None, off: off, n: n})
			}
		}
		frags, next = next, frags
	}
	return frags
}

// tokenizeFragments is the loop of llama_vocab::impl::tokenize that every kind shares: the text is partitioned
// around its special tokens (appended as they are) and every raw fragment goes to raw, told whether a special
// token (or the start of the text) came right before it.
func (s *core) tokenizeFragments(text string, parseSpecial bool, out []int32, raw func(frag string, afterSpecial bool, out []int32) []int32) []int32 {
	if text == "" {
		return out
	}
	afterSpecial := true
	for _, f := range s.partition(text, parseSpecial) {
		if f.tok != None {
			out = append(out, f.tok)
			afterSpecial = true
			continue
		}
		out = raw(text[f.off:f.off+f.n], afterSpecial, out)
		afterSpecial = false
	}
	return out
}

// Tokenize converts text to token ids as llama_tokenize(vocab, text, addSpecial,
// parseSpecial) does for a SentencePiece vocabulary. With addSpecial it puts BOS first and
// EOS last where the vocabulary asks for them; with parseSpecial the texts of control
// tokens (such as "<s>") become those tokens, while user-defined tokens are recognised in
// any case. A space is put before the text and after each special token when the vocabulary
// has add_space_prefix, and every space becomes U+2581 before the pieces are merged.
func (s *SPM) Tokenize(text string, addSpecial, parseSpecial bool) []int32 {
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && s.addBOS {
		out = append(out, s.bos)
	}
	var sess spmSession
	var buf strings.Builder
	out = s.tokenizeFragments(text, parseSpecial, out, func(raw string, afterSpecial bool, out []int32) []int32 {
		buf.Reset()
		if s.addSpacePrefix && afterSpecial {
			buf.WriteString("\u2581")
		}
		for {
			i := strings.IndexByte(raw, ' ')
			if i < 0 {
				buf.WriteString(raw)
				break
			}
			buf.WriteString(raw[:i])
			buf.WriteString("\u2581")
			raw = raw[i+1:]
		}
		return sess.tokenize(s, buf.String(), out)
	})
	if addSpecial && s.addEOS {
		out = append(out, s.eos)
	}
	return out
}

// symbol is llm_symbol: a span [off, off+n) of the text being merged, in a doubly linked list (-1 ends it).
type symbol struct {
	prev, next int
	off, n     int
}

// splitSymbols returns one symbol per UTF-8 character of text (unicode_len_utf8's length from the first byte,
// cut at the end), linked in order, reusing syms.
func splitSymbols(text string, syms []symbol) []symbol {
	syms = syms[:0]
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		next := len(syms) + 1
		if off+n == len(text) {
			next = -1
		}
		syms = append(syms, symbol{prev: len(syms) - 1, next: next, off: off, n: n})
		off += n
	}
	return syms
}

// spmBigram is llm_bigram_spm: a candidate merge of two adjacent symbols.
type spmBigram struct {
	left, right int
	score       float32
	size        int
}

// bigramLess is llm_bigram_spm::comparator: the queue's top is the highest score, and of
// equal scores the leftmost.
func bigramLess(l, r spmBigram) bool {
	return l.score < r.score || (l.score == r.score && l.left > r.left)
}

// spmSession is llm_tokenizer_spm_session; its buffers are reused across fragments.
type spmSession struct {
	syms  []symbol
	queue bigramQueue
}

// bigramQueue is std::priority_queue<llm_bigram_spm, std::vector, comparator>: the same
// heap steps as stdcpp.PriorityQueue (push_heap, pop_heap), with the comparison written in line.
type bigramQueue struct{ a []spmBigram }

func (q *bigramQueue) push(v spmBigram) {
	q.a = append(q.a, v)
	q.siftUp(len(q.a)-1, v)
}

// siftUp is std::__push_heap: v rises from hole while its parent is less.
func (q *bigramQueue) siftUp(hole int, v spmBigram) {
	a := q.a
	parent := (hole - 1) / 2
	for hole > 0 && bigramLess(a[parent], v) {
		a[hole] = a[parent]
		hole = parent
		parent = (hole - 1) / 2
	}
	a[hole] = v
}

func (q *bigramQueue) pop() spmBigram {
	a := q.a
	top := a[0]
	n := len(a) - 1 // the heap shrinks to a[:n]; a[n] is re-inserted from the root
	if n > 0 {
		v := a[n]
		a[n] = a[0]
		// __adjust_heap(first, 0, n, v): move the hole down to a leaf, then push v up.
		hole, second := 0, 0
		for second < (n-1)/2 {
			second = 2 * (second + 1)
			if bigramLess(a[second], a[second-1]) {
				second--
			}
			a[hole] = a[second]
			hole = second
		}
		if n&1 == 0 && second == (n-2)/2 {
			second = 2 * (second + 1)
			a[hole] = a[second-1]
			hole = second - 1
		}
		q.siftUp(hole, v)
	}
	q.a = a[:n]
	return top
}

func (q *bigramQueue) empty() bool { return len(q.a) == 0 }

// tokenize appends the tokens of text (already escaped) to out: one symbol per UTF-8
// character, then the best-scoring adjacent pair that forms a token is merged until none
// is left; a final symbol that is not a token is written as byte tokens.
func (t *spmSession) tokenize(s *SPM, text string, out []int32) []int32 {
	if cap(t.syms) < len(text) {
		t.syms = make([]symbol, 0, len(text))
	}
	t.syms = splitSymbols(text, t.syms)
	if len(t.syms) == 0 {
		return out
	}
	if cap(t.queue.a) < 2*len(t.syms) {
		t.queue.a = make([]spmBigram, 0, 2*len(t.syms))
	}
	t.queue.a = t.queue.a[:0]
	for i := 1; i < len(t.syms); i++ {
		t.tryAddBigram(s, text, i-1, i)
	}
	for !t.queue.empty() {
		b := t.queue.pop()
		l, r := &t.syms[b.left], &t.syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // one side was merged since this pair was queued
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			t.syms[r.next].prev = b.left
		}
		t.tryAddBigram(s, text, l.prev, b.left)
		t.tryAddBigram(s, text, b.left, l.next)
	}
	for i := 0; i != -1; i = t.syms[i].next {
		sym := t.syms[i]
		piece := text[sym.off : sym.off+sym.n]
		if id, ok := s.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		// Every merged symbol is a token, so this is one character the vocabulary lacks.
		for j := 0; j < len(piece); j++ {
			if id := s.byteTok[piece[j]]; id != None {
				out = append(out, id)
			} else if s.unk != None {
				out = append(out, s.unk)
			}
		}
	}
	return out
}

func (t *spmSession) tryAddBigram(s *SPM, text string, left, right int) {
	if left == -1 || right == -1 {
		return
	}
	off := t.syms[left].off
	size := t.syms[left].n + t.syms[right].n
	id, ok := s.ids[text[off:off+size]]
	if !ok {
		return
	}
	t.queue.push(spmBigram{left: left, right: right, score: s.score[id], size: size})
}

// utf8Len is unicode_len_utf8: the length of a UTF-8 sequence from its first byte's high
// four bits (1 for ASCII and for stray continuation bytes).
func utf8Len(c byte) int {
	switch c >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}
