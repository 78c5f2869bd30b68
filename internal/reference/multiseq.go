package reference

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// MultiSession is one llama_context holding several sequences, as
// node-llama-cpp's createContext({sequences: N}) makes one: n_seq_max = N
// and llama.cpp's default KV layout (not unified: each sequence has a
// stream of n_ctx/N cells), every decode one llama_batch with tokens of any
// of the sequences. Its methods hold the Model's lock; it must not be used
// after [MultiSession.Close].
type MultiSession struct {
	m   *Model
	ctx uintptr
	pos []int32 // per sequence: the next position
}

// NewMultiSession creates a context of nSeq sequences of nCtxSeq cells each
// (n_ctx = nSeq*nCtxSeq, n_batch at least that, n_seq_max = nSeq), on
// threads threads; the rest is NewSession's (library defaults).
func (m *Model) NewMultiSession(nCtxSeq, nSeq, threads int) (*MultiSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ptr == 0 {
		return nil, errClosed
	}
	if nSeq < 1 || nSeq > 256 || nCtxSeq < 1 || threads < 1 || nCtxSeq > 1<<24 {
		return nil, fmt.Errorf("reference: %d sequences of %d cells on %d threads", nSeq, nCtxSeq, threads)
	}
	p := m.lib.llamaContextDefaultParams()
	p.NCtx = uint32(nSeq * nCtxSeq)
	p.NBatch = max(p.NBatch, p.NCtx)
	p.NSeqMax = uint32(nSeq)
	p.NThreads = int32(threads)
	p.NThreadsBatch = int32(threads)
	mark := m.lib.log.mark()
	ctx := m.lib.llamaInitFromModel(m.ptr, p)
	if ctx == 0 {
		return nil, fmt.Errorf("reference: llama_init_from_model failed%s", m.lib.log.since(mark))
	}
	return &MultiSession{m: m, ctx: ctx, pos: make([]int32, nSeq)}, nil
}

// Close frees the context. Closing twice is a no-op.
func (s *MultiSession) Close() {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.ctx != 0 {
		s.m.lib.llamaFree(s.ctx)
		s.ctx = 0
	}
}

// Decode evaluates, in one llama_decode, toks[q] at the next positions of
// sequence q for every q (an empty or missing entry: none), the last token
// of each sequence an output, and returns a copy of each such output's
// logits (nil for a sequence without tokens).
func (s *MultiSession) Decode(toks [][]int32) ([][]float32, error) {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.ctx == 0 || m.ptr == 0 {
		return nil, errClosed
	}
	if len(toks) > len(s.pos) {
		return nil, fmt.Errorf("reference: tokens for %d sequences, the context holds %d", len(toks), len(s.pos))
	}
	var token, pos, nSeq, seq []int32
	var logits []int8
	outAt := make([]int, len(toks))
	for q, ts := range toks {
		outAt[q] = -1
		for i, t := range ts {
			if t < 0 || int(t) >= m.nVocab {
				return nil, fmt.Errorf("reference: sequence %d token %d = %d out of range [0,%d)", q, i, t, m.nVocab)
			}
			token = append(token, t)
			pos = append(pos, s.pos[q]+int32(i))
			nSeq = append(nSeq, 1)
			seq = append(seq, int32(q))
			var out int8
			if i == len(ts)-1 {
				out, outAt[q] = 1, len(token)-1
			}
			logits = append(logits, out)
		}
	}
	if len(token) == 0 {
		return nil, errors.New("reference: empty batch")
	}
	seqPtr := make([]uintptr, len(seq))
	var pin runtime.Pinner
	defer pin.Unpin()
	for _, p := range []unsafe.Pointer{unsafe.Pointer(&token[0]), unsafe.Pointer(&pos[0]), unsafe.Pointer(&nSeq[0]),
		unsafe.Pointer(&seq[0]), unsafe.Pointer(&logits[0]), unsafe.Pointer(&seqPtr[0])} {
		pin.Pin(p)
	}
	for i := range seq {
		seqPtr[i] = uintptr(unsafe.Pointer(&seq[i]))
	}
	b := llamaBatch{NTokens: int32(len(token)), Token: uintptr(unsafe.Pointer(&token[0])), Pos: uintptr(unsafe.Pointer(&pos[0])),
		NSeqID: uintptr(unsafe.Pointer(&nSeq[0])), SeqID: uintptr(unsafe.Pointer(&seqPtr[0])), Logits: uintptr(unsafe.Pointer(&logits[0]))}
	mark := m.lib.log.mark()
	if rc := m.lib.llamaDecode(s.ctx, b); rc != 0 {
		return nil, fmt.Errorf("reference: llama_decode of %d tokens over %d sequences returned %d%s", len(token), len(toks), rc, m.lib.log.since(mark))
	}
	out := make([][]float32, len(toks))
	for q, ts := range toks {
		s.pos[q] += int32(len(ts))
		if outAt[q] < 0 {
			continue
		}
		p := m.lib.llamaGetLogitsIth(s.ctx, int32(outAt[q]))
		if p == nil {
			return nil, fmt.Errorf("reference: llama_get_logits_ith(%d) returned NULL", outAt[q])
		}
		out[q] = append([]float32(nil), unsafe.Slice(p, m.nVocab)...)
	}
	return out, nil
}
