package reference

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Session is one llama_context kept across decodes: the KV cache of a
// conversation, as a llama-server slot holds it between turns. Its methods
// hold the Model's lock; a Session must not be used after [Session.Close].
type Session struct {
	m      *Model
	ctx    uintptr
	nCtx   int
	tokens []int32 // the tokens whose K/V the cache holds, in position order
}

// NewSession creates a context with llama_context_default_params except
// n_ctx = nCtx (0 takes the model's training context, llama.cpp's rule for
// n_ctx 0 and the slot size llama-server's defaults give; llama.cpp pads it
// to a multiple of 256), n_batch = max(2048, n_ctx) so that a prompt goes to
// one llama_decode call whatever its length (llama.cpp caps n_batch at n_ctx
// and splits it into micro-batches of its default n_ubatch 512, as
// llama-server's batches of n_batch tokens are split), and n_threads =
// n_threads_batch = threads. Flash attention (auto: on), the F16 KV cache and
// everything else stay at the library's defaults. The context size changes no
// arithmetic as long as it holds the cells in use: attention sees
// n_kv = min(n_ctx, max(256, used cells padded to 256)) cells.
func (m *Model) NewSession(nCtx, threads int) (*Session, error) {
	return m.NewSessionTypes(nCtx, threads, 1, 1)
}

// NewSessionTypes is NewSession with the KV cache's data types
// (llama_context_params' type_k and type_v, ggml type ids: 1 f16, 8 q8_0,
// 2 q4_0); flash attention stays auto, which llama_init_from_model turns on
// for a quantized V cache. The reference refuses types it cannot run (a
// block size that does not divide the head size): the error carries its log.
func (m *Model) NewSessionTypes(nCtx, threads int, typeK, typeV int32) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ptr == 0 {
		return nil, errClosed
	}
	if threads < 1 {
		return nil, fmt.Errorf("reference: threads = %d < 1", threads)
	}
	if nCtx < 0 || nCtx > math.MaxInt32-256 {
		return nil, fmt.Errorf("reference: n_ctx %d out of range", nCtx)
	}
	p := m.lib.llamaContextDefaultParams()
	p.NCtx = uint32(nCtx)
	want := uint32(nCtx)
	if nCtx == 0 {
		want = uint32(m.lib.llamaModelNCtxTrain(m.ptr))
	}
	p.NBatch = max(p.NBatch, want)
	p.NThreads = int32(threads)
	p.NThreadsBatch = int32(threads)
	p.TypeK, p.TypeV = typeK, typeV
	mark := m.lib.log.mark()
	ctx := m.lib.llamaInitFromModel(m.ptr, p)
	if ctx == 0 {
		return nil, fmt.Errorf("reference: llama_init_from_model failed%s", m.lib.log.since(mark))
	}
	return &Session{m: m, ctx: ctx, nCtx: int(m.lib.llamaNCtx(ctx))}, nil
}

// NCtx is llama_n_ctx of the session's context (padded to 256).
func (s *Session) NCtx() int { return s.nCtx }

// NCtxTrain is llama_model_n_ctx_train: the model's training context.
func (m *Model) NCtxTrain() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ptr == 0 {
		return 0
	}
	return int(m.lib.llamaModelNCtxTrain(m.ptr))
}

// Tokens returns a copy of the tokens whose K/V the session's cache holds.
func (s *Session) Tokens() []int32 { return append([]int32(nil), s.tokens...) }

// Close frees the context (llama_free). Closing twice is a no-op.
func (s *Session) Close() {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.ctx != 0 {
		s.m.lib.llamaFree(s.ctx)
		s.ctx = 0
	}
}

// Decode evaluates toks at the next positions of sequence 0 in one
// llama_decode call (logits for the last token only, as llama_batch_get_one
// builds the batch) and returns a copy of the last token's logits.
func (s *Session) Decode(toks []int32) ([]float32, error) {
	return s.decode(toks, false)
}

// DecodeAll is Decode with every token of the batch marked as an output
// (llama_batch.logits all 1): it returns len(toks) rows of NVocab logits,
// row i for toks[i].
func (s *Session) DecodeAll(toks []int32) ([]float32, error) {
	return s.decode(toks, true)
}

func (s *Session) decode(toks []int32, all bool) ([]float32, error) {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := s.checkBatch(toks); err != nil {
		return nil, err
	}
	if err := m.decodeBatch(s.ctx, toks, all); err != nil {
		return nil, err
	}
	s.tokens = append(s.tokens, toks...)
	if !all {
		l, err := m.lastLogits(s.ctx)
		if err != nil {
			return nil, err
		}
		return append([]float32(nil), l...), nil
	}
	p := m.lib.llamaGetLogits(s.ctx)
	if p == nil {
		return nil, errors.New("reference: llama_get_logits returned NULL")
	}
	return append([]float32(nil), unsafe.Slice(p, len(toks)*m.nVocab)...), nil
}

// Truncate removes positions n and later from sequence 0
// (llama_memory_seq_rm(mem, 0, n, -1)), as llama-server does before it
// evaluates the part of a new prompt that its cache does not hold.
func (s *Session) Truncate(n int) error {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.ctx == 0 || m.ptr == 0 {
		return errClosed
	}
	if n < 0 || n > len(s.tokens) {
		return fmt.Errorf("reference: truncate to %d of %d cached tokens", n, len(s.tokens))
	}
	if !m.lib.llamaMemorySeqRm(m.lib.llamaGetMemory(s.ctx), 0, int32(n), -1) {
		return fmt.Errorf("reference: llama_memory_seq_rm(0, %d, -1) refused", n)
	}
	s.tokens = s.tokens[:n]
	return nil
}

// Generate continues the session greedily: starting from the logits of its
// last decode, it takes the argmax (the first maximum, llama_sampler_greedy's
// rule) up to n times, decoding each chosen token except the last as a
// one-token batch. With stopAtEOG it stops after the first token that
// llama_vocab_is_eog accepts, without decoding it (as llama-server ends a
// turn). It returns the chosen tokens.
func (s *Session) Generate(logits []float32, n int, stopAtEOG bool) ([]int32, error) {
	var out []int32
	for len(out) < n {
		next := argmax(logits)
		out = append(out, next)
		if len(out) == n || (stopAtEOG && s.m.isEOG(next)) {
			break
		}
		var err error
		if logits, err = s.Decode([]int32{next}); err != nil {
			return nil, fmt.Errorf("%w (generating token %d)", err, len(out))
		}
	}
	return out, nil
}

// checkBatch refuses a closed session, an empty batch and tokens outside the
// vocabulary. The caller holds s.m.mu.
func (s *Session) checkBatch(toks []int32) error {
	m := s.m
	if s.ctx == 0 || m.ptr == 0 {
		return errClosed
	}
	if len(toks) == 0 {
		return errors.New("reference: empty batch")
	}
	for i, t := range toks {
		if t < 0 || int(t) >= m.nVocab {
			return fmt.Errorf("reference: token[%d] = %d out of range [0,%d)", i, t, m.nVocab)
		}
	}
	return nil
}

// decodeBatch runs llama_decode on toks at the next positions of sequence 0;
// every token outputs logits when all is set, else the last one only. The
// caller holds m.mu.
func (m *Model) decodeBatch(ctx uintptr, toks []int32, all bool) error {
	if !all {
		return m.decode(ctx, toks)
	}
	return m.decodeSuffix(ctx, toks, len(toks))
}

// isEOG is IsEOG for a loaded model, false on error (a closed model).
func (m *Model) isEOG(tok int32) bool {
	eog, err := m.IsEOG(tok)
	return err == nil && eog
}
