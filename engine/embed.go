package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/model"
)

// Embedding is one input's embedding (Engine.Embed).
type Embedding struct {
	// Pooled is the pooled vector (llama_get_embeddings_seq): NEmbd values,
	// or the ranking head's labels (NClsOut) for pooling rank; nil for
	// pooling none.
	Pooled []float32
	// Rows are every token's final hidden state (llama_get_embeddings_ith)
	// for pooling none: Tokens × NEmbd values; nil otherwise.
	Rows   []float32
	Tokens int // the input's tokens (tokens_evaluated)
}

// ErrEncoder is Generate's refusal on an encoder (bert): it computes
// embeddings, not logits (llama.cpp: llama_decode calls encode() and a
// completion gets no logits).
var ErrEncoder = errors.New("the model is an encoder (embeddings only): it does not generate text")

// ErrEmbedInput marks an input Embed refuses (empty, too long, outside the
// vocabulary); its message is llama-server's where it has one.
var ErrEmbedInput = errors.New("engine: embedding input")

// EmbedLengthError is Embed's refusal of an input longer than one embedding
// may be: past the physical batch (UBatch, Options.EmbedUBatch: llama-server's
// "too large to process") or past the slot context (NCtx: "larger than the
// max context size"); the other field is 0. Its message is llama-server's,
// after the input's index; it wraps ErrEmbedInput.
type EmbedLengthError struct {
	Index  int // the input's index among Embed's inputs
	Tokens int // the input's tokens
	UBatch int // the physical batch it does not fit, or 0
	NCtx   int // the slot context it does not fit, or 0
}

// Error is ErrEmbedInput's text, the input's index and llama-server's words.
func (e *EmbedLengthError) Error() string {
	return fmt.Sprintf("%v %d: %s", ErrEmbedInput, e.Index, e.Reason())
}

// Reason is llama-server's message for the refusal, word for word
// (tools/server/server-context.cpp).
func (e *EmbedLengthError) Reason() string {
	if e.UBatch > 0 {
		return fmt.Sprintf("input (%d tokens) is too large to process. increase the physical batch size (current batch size: %d)", e.Tokens, e.UBatch)
	}
	return fmt.Sprintf("input (%d tokens) is larger than the max context size (%d tokens). skipping", e.Tokens, e.NCtx)
}

// Unwrap makes errors.Is(err, ErrEmbedInput) hold.
func (e *EmbedLengthError) Unwrap() error { return ErrEmbedInput }

// EmbedUBatch is the physical batch of Embed (Options.EmbedUBatch).
func (e *Engine) EmbedUBatch() int { return e.o.EmbedUBatch }

// EmbedLimit is the most tokens one input of Embed may have: the slot
// context and, unless the model is causal and pools the last token (then
// evaluated in micro-batches, as llama-server's slot can_split), the
// physical batch (Options.EmbedUBatch).
func (e *Engine) EmbedLimit() int {
	if e.splitsEmbeddings() {
		return e.nCtx
	}
	return min(e.nCtx, e.o.EmbedUBatch)
}

// splitsEmbeddings reports whether an embedding may span micro-batches:
// a causal model pooling the last token (llama-server's can_split).
func (e *Engine) splitsEmbeddings() bool {
	return e.pool == embed.PoolingLast && !e.m.Encoder()
}

// Pooling is the pooling the engine's embeddings use: Options.Pooling, or
// the model's {arch}.pooling_type, or none (model.Model.Pooling).
func (e *Engine) Pooling() embed.Pooling { return e.pool }

// Embed evaluates each input as a fresh sequence of its own (llama-server's
// embedding task: a context with embeddings on, every token an output) and
// returns its embedding, pooled with Pooling() (model.Runner.Pool). The
// inputs go to the scheduler together: several share one forward pass
// (within Options.BatchSize rows, decodes and prompts beside them), and each
// is computed with the arithmetic of its own fresh micro-batch, so every
// vector equals the input's vector alone, which equals the reference's
// llama_get_embeddings_seq (or _ith) with the same physical batch. An input
// longer than the physical batch (Options.EmbedUBatch) is refused as
// llama-server refuses it ("input (N tokens) is too large to process.
// increase the physical batch size (current batch size: U)") unless the
// model is causal and pools the last token, which is evaluated in
// micro-batches of that size; one longer than the slot context too ("input
// (N tokens) is larger than the max context size (M tokens). skipping");
// both are an *EmbedLengthError (EmbedLimit is the longest input taken). An
// empty input ("Input content cannot be empty") and a token outside the
// vocabulary are refused; all wrap ErrEmbedInput. The contexts of the inputs
// running at once hold at most the KV cache of max(n_ctx, BatchSize) tokens
// (or one input's, whatever its size): many short inputs run over several
// steps rather than each padding a cache of its own at once.
func (e *Engine) Embed(ctx context.Context, inputs [][]int32) ([]Embedding, error) {
	if e.poolErr != nil {
		return nil, e.poolErr
	}
	for i, in := range inputs {
		switch n := len(in); {
		case n == 0:
			return nil, fmt.Errorf("%w %d: Input content cannot be empty", ErrEmbedInput, i)
		case n > e.o.EmbedUBatch && !e.splitsEmbeddings():
			return nil, &EmbedLengthError{Index: i, Tokens: n, UBatch: e.o.EmbedUBatch}
		case n > e.nCtx:
			return nil, &EmbedLengthError{Index: i, Tokens: n, NCtx: e.nCtx}
		}
		for _, t := range in {
			if t < 0 || int(t) >= e.m.HP.NVocab {
				return nil, fmt.Errorf("%w %d: token id %d outside the vocabulary of %d", ErrEmbedInput, i, t, e.m.HP.NVocab)
			}
		}
	}
	jobs := make([]*job, len(inputs))
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	for i, in := range inputs {
		jobs[i] = &job{embd: in, done: make(chan jobResult, 1)}
		e.queue = append(e.queue, jobs[i])
	}
	e.mu.Unlock()
	e.signal()
	out := make([]Embedding, len(inputs))
	for i, j := range jobs {
		select {
		case r := <-j.done:
			if r.err != nil {
				for _, k := range jobs[i+1:] {
					k.cancelled.Store(true)
				}
				return nil, r.err
			}
			out[i] = r.embd
		case <-ctx.Done():
			for _, k := range jobs[i:] {
				k.cancelled.Store(true)
			}
			e.signal()
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// embedSpans adds to a step the next micro-batch of each embedding job in
// arrival order while the step's prompt budget lasts (a job's micro-batch
// is never split: the first always goes), making the job's fresh context
// on its first step. A job starts only while the contexts of the started,
// unfinished ones hold less than Engine.embedMax (the KV cache of one
// context of max(n_ctx, BatchSize) tokens; each input's cache is padded to
// 256 cells, so many short inputs would otherwise hold far more than their
// tokens): when none is alive the next one starts whatever its size.
func (e *Engine) embedSpans(jobs []*job, budget int, spans []model.Span, owners []*job, failed []*job, failErr []error) ([]model.Span, []*job, []*job, []error) {
	took := false
	for _, j := range jobs {
		if j.embd == nil {
			continue
		}
		if j.ectx == nil {
			need := e.m.HP.KVCacheBytes(len(j.embd), 1, e.o.CacheTypes)
			if e.embedLive > 0 && e.embedLive+need > e.embedMax {
				// It and the later ones start as earlier ones finish; the
				// started ones, which run on, all come before it (jobs
				// start in arrival order).
				break
			}
			c, err := e.runner.NewContextTypes(len(j.embd), e.o.CacheTypes)
			if err != nil {
				failed, failErr = append(failed, j), append(failErr, fmt.Errorf("engine: %w", err))
				continue
			}
			j.ectx, j.ebytes = c, need
			e.embedLive += need
		}
		n := min(len(j.embd)-j.pos, e.o.EmbedUBatch)
		if n > budget && (took || len(spans) > 0) {
			break
		}
		ub := j.embd[j.pos : j.pos+n]
		spans = append(spans, model.Span{Ctx: j.ectx, Tokens: ub, UBatch: n, Outputs: n, Embed: true})
		owners = append(owners, j)
		j.pos += n
		budget -= n
		took = true
	}
	return spans, owners, failed, failErr
}

// embedded takes an embedding span's rows: at the input's end, its result
// (pooled with the engine's pooling, the last micro-batch's rows for pooling
// last); otherwise done is false and the job runs on.
func (e *Engine) embedded(j *job, sp model.Span) (jobResult, bool) {
	if j.pos < len(j.embd) {
		return jobResult{}, false
	}
	r := Embedding{Tokens: len(j.embd)}
	if e.pool == embed.PoolingNone {
		r.Rows = sp.Embd
	} else {
		v, err := e.runner.Pool(e.pool, sp.Embd)
		if err != nil {
			return jobResult{err: fmt.Errorf("engine: %w", err)}, true
		}
		r.Pooled = v
	}
	return jobResult{embd: r}, true
}
