package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/bankml/bankml/model"
)

// EvalRequest is one teacher-forced evaluation: a sequence decoded from
// position 0 with the logits of its last Outputs tokens returned, what
// llama-perplexity asks of llama_decode for each chunk
// (tools/perplexity/perplexity.cpp: llama_memory_clear, then one llama_decode
// per n_batch tokens with the logits flags set on the scored positions).
type EvalRequest struct {
	// Tokens is the sequence, evaluated from position 0 (nothing of a
	// slot's cache is reused). At most the engine's NCtx tokens.
	Tokens []int32
	// Outputs is how many of the last tokens are outputs (logits flags
	// set), in [0, len(Tokens)].
	Outputs int
	// NBatch is the tokens per llama_decode call (llama.cpp's -b): the
	// sequence is decoded in calls of NBatch tokens, the last one shorter,
	// each in micro-batches of model.NUbatch. 0 decodes it in one call. The
	// logits depend on it (the matmul path depends on a micro-batch's rows).
	NBatch int
}

// Evaluate decodes req.Tokens as a new sequence on a free slot (waiting for
// one as Generate does: ErrQueueFull, ErrClosed, ctx.Err()) and returns the
// logits of its last req.Outputs tokens: req.Outputs rows of the model's
// NVocab floats, row i for Tokens[len(Tokens)-Outputs+i] (the distribution of
// the token after it). The calls of NBatch tokens carry the outputs that fall
// in them, so the rows are the reference's for the same calls (a call
// without outputs stops after the last layer's attention, as llama.cpp
// does). The scheduler runs the calls between its steps, one call at a time
// (each a model.Context.DecodeOutputs). The slot's cache keeps the sequence
// afterwards, each cell with the class it was computed with, so a later
// request keeps of it what its fresh evaluation computes alike. It is the
// API bankml perplexity scores through. Errors: an empty sequence, Outputs
// or NBatch out of range, a token outside the vocabulary, a sequence longer
// than the slot's context (wrapping ErrContextFull), a decode error; a
// cancellation between calls returns ctx.Err().
func (e *Engine) Evaluate(ctx context.Context, req EvalRequest) ([]float32, error) {
	n := len(req.Tokens)
	switch {
	case n == 0:
		return nil, errors.New("engine: Evaluate of an empty sequence")
	case req.Outputs < 0 || req.Outputs > n:
		return nil, fmt.Errorf("engine: Evaluate: %d outputs of a sequence of %d tokens", req.Outputs, n)
	case req.NBatch < 0:
		return nil, fmt.Errorf("engine: Evaluate: batch size %d", req.NBatch)
	case n > e.nCtx:
		return nil, fmt.Errorf("engine: Evaluate: a sequence of %d tokens exceeds the context of %d: %w", n, e.nCtx, ErrContextFull)
	}
	for i, t := range req.Tokens {
		if t < 0 || int(t) >= e.tok.NVocab() {
			return nil, fmt.Errorf("engine: Evaluate: token %d is %d, outside the vocabulary of %d", i, t, e.tok.NVocab())
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := e.acquire(ctx, req.Tokens, -1, false)
	if err != nil {
		return nil, err
	}
	defer e.release(s)
	nBatch := req.NBatch
	if nBatch == 0 {
		nBatch = n
	}
	first := n - req.Outputs // the first output position
	logits := make([]float32, 0, req.Outputs*e.m.HP.NVocab)
	for b := 0; b < n; b += nBatch {
		end := min(b+nBatch, n)
		_, err := e.submit(ctx, &job{s: s, act: func(c *model.Context) error {
			if b == 0 {
				if err := c.Truncate(0); err != nil {
					return fmt.Errorf("engine: %w", err)
				}
			}
			l, err := c.DecodeOutputs(req.Tokens[b:end], max(0, end-max(b, first)))
			if err != nil {
				return fmt.Errorf("engine: Evaluate: %w", err)
			}
			logits = append(logits, l...)
			s.settleOff = true // an evaluated sequence is no conversation to settle
			return nil
		}})
		if err != nil {
			return nil, err
		}
	}
	return logits, nil
}

// evalCtx is the context size of an engine made with
// Options.PastTrainingContext: NCtx as given (0: the training context).
func evalCtx(m *model.Model, nCtx int) (int, error) {
	if nCtx == 0 {
		return m.HP.NCtxTrain, nil
	}
	if err := model.CheckContextSize(nCtx); err != nil {
		return 0, err
	}
	return nCtx, nil
}
