package reference

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// DecodeOutputs evaluates toks at the next positions of sequence 0 in one
// llama_decode call whose logits flags are set on the last outputs tokens
// only (0 <= outputs <= len(toks)), as llama-perplexity marks the second half
// of a chunk (tools/perplexity/perplexity.cpp: batch.logits[idx] = pos >=
// first), and returns a copy of their outputs rows of NVocab logits, in batch
// order.
func (s *Session) DecodeOutputs(toks []int32, outputs int) ([]float32, error) {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := s.checkBatch(toks); err != nil {
		return nil, err
	}
	if outputs < 0 || outputs > len(toks) {
		return nil, fmt.Errorf("reference: %d outputs of a batch of %d tokens", outputs, len(toks))
	}
	if err := m.decodeSuffix(s.ctx, toks, outputs); err != nil {
		return nil, err
	}
	s.tokens = append(s.tokens, toks...)
	if outputs == 0 {
		return nil, nil
	}
	p := m.lib.llamaGetLogits(s.ctx)
	if p == nil {
		return nil, errors.New("reference: llama_get_logits returned NULL")
	}
	return append([]float32(nil), unsafe.Slice(p, outputs*m.nVocab)...), nil
}

// decodeSuffix runs llama_decode on toks at the next positions of sequence 0
// with the logits flags set on the last outputs tokens. The caller holds m.mu.
func (m *Model) decodeSuffix(ctx uintptr, toks []int32, outputs int) error {
	flags := make([]int8, len(toks))
	for i := len(toks) - outputs; i < len(toks); i++ {
		flags[i] = 1
	}
	var pin runtime.Pinner
	pin.Pin(&toks[0])
	pin.Pin(&flags[0])
	defer pin.Unpin()
	b := llamaBatch{NTokens: int32(len(toks)), Token: uintptr(unsafe.Pointer(&toks[0])), Logits: uintptr(unsafe.Pointer(&flags[0]))}
	mark := m.lib.log.mark()
	if rc := m.lib.llamaDecode(ctx, b); rc != 0 {
		return fmt.Errorf("reference: llama_decode of %d tokens returned %d%s", len(toks), rc, m.lib.log.since(mark))
	}
	return nil
}

// Evaluate is llama-perplexity's evaluation of one chunk (tools/perplexity/perplexity.cpp): the cache
// emptied (llama_memory_clear), then toks decoded from position 0 in llama_decode calls of nBatch tokens
// (0: one call), each with its logits flags on the positions among the last outputs tokens. It returns the
// outputs rows of NVocab logits in order.
func (s *Session) Evaluate(toks []int32, outputs, nBatch int) ([]float32, error) {
	if outputs < 0 || outputs > len(toks) || nBatch < 0 {
		return nil, fmt.Errorf("reference: %d outputs of %d tokens in batches of %d", outputs, len(toks), nBatch)
	}
	if nBatch == 0 {
		nBatch = len(toks)
	}
	if err := s.Truncate(0); err != nil {
		return nil, err
	}
	first := len(toks) - outputs
	var logits []float32
	for b := 0; b < len(toks); b += nBatch {
		e := min(b+nBatch, len(toks))
		l, err := s.DecodeOutputs(toks[b:e], max(0, e-max(b, first)))
		if err != nil {
			return nil, err
		}
		logits = append(logits, l...)
	}
	return logits, nil
}
