package perplexity

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/bankml/bankml/fmath"
)

// DefaultNCtx and DefaultNBatch are llama-perplexity's defaults for -c and -b.
const (
	DefaultNCtx   = 512
	DefaultNBatch = 2048
)

// MinNCtx is the least n_ctx that scores a token: a chunk's tokens n_ctx/2+1 .. n_ctx-1 are scored, none when
// n_ctx is 1 or 2 (llama-perplexity, which refuses only n_ctx <= 0, prints NaN estimates there).
const MinNCtx = 3

// Evaluator is the model Compute scores. Evaluate evaluates one chunk as
// llama-perplexity does: tokens as a new sequence from position 0
// (llama_memory_clear), decoded in llama_decode calls of nBatch tokens, the
// last one shorter, with the logits flags set on the last outputs tokens; it
// returns their outputs rows of NVocab() logits in order (llama_get_logits).
// bankml's engine (engine.Engine.Evaluate) and the reference's Session
// (reference.Session.Evaluate) fit it through small adapters.
type Evaluator interface {
	Evaluate(tokens []int32, outputs, nBatch int) ([]float32, error)
	NVocab() int
}

// Options are llama-perplexity's parameters.
type Options struct {
	NCtx    int   // -c: tokens per chunk (DefaultNCtx when 0)
	NBatch  int   // -b: tokens per llama_decode call (DefaultNBatch when 0); capped at NCtx
	NChunks int   // --chunks: chunks to score, all when <= 0
	BOS     int32 // the vocabulary's BOS token
	AddBOS  bool  // llama_vocab_get_add_bos: the first token of every chunk becomes BOS
}

// Result is the outcome of Compute.
type Result struct {
	NCtx, NBatch int
	Chunks       int       // chunks scored
	Count        int       // tokens scored: Chunks·(NCtx − NCtx/2 − 1)
	NLL, NLL2    float64   // Σ −log p and Σ (−log p)², in token order
	Running      []float64 // exp(NLL/Count) after each chunk: the "[i]" estimates
	PPL          float64   // exp(NLL/Count)
	PPLErr       float64   // PPL·sqrt((NLL2/Count − (NLL/Count)²)/(Count−1)); NaN when that variance is not positive
}

// ErrTooShort is wrapped by Compute's error for a text of fewer than 2·n_ctx
// tokens (llama-perplexity's "you need at least ... tokens").
var ErrTooShort = errors.New("text too short")

// Plan is how Compute scores a text: NChunks chunks of NCtx tokens, each evaluated in batches of NBatch.
type Plan struct {
	NCtx, NBatch, NChunks int
}

// PlanFor is Compute's plan for a text of n tokens with opt (the defaults for zeros, the batch capped at the
// context, --chunks applied), or the error Compute gives before evaluating anything: a context below MinNCtx or
// a batch below 1, or fewer than 2·n_ctx tokens (ErrTooShort, llama-perplexity's "you need at least ... tokens"),
// which llama-perplexity checks before it prints its "calculating perplexity over N chunks" line.
func PlanFor(n int, opt Options) (Plan, error) {
	nCtx, nBatch := opt.NCtx, opt.NBatch
	if nCtx == 0 {
		nCtx = DefaultNCtx
	}
	if nBatch == 0 {
		nBatch = DefaultNBatch
	}
	if nCtx < MinNCtx || nBatch < 1 {
		return Plan{}, fmt.Errorf("perplexity: context %d and batch %d: want a context of at least %d (the least that scores a token) and a batch of at least 1",
			nCtx, nBatch, MinNCtx)
	}
	if n < 2*nCtx {
		return Plan{}, fmt.Errorf("perplexity: you need at least %d tokens to evaluate perplexity with a context of %d; the text tokenizes to only %d: %w",
			2*nCtx, nCtx, n, ErrTooShort)
	}
	p := Plan{NCtx: nCtx, NBatch: min(nBatch, nCtx), NChunks: n / nCtx}
	if opt.NChunks > 0 {
		p.NChunks = min(p.NChunks, opt.NChunks)
	}
	return p, nil
}

// Compute scores tokens (the whole text, tokenized with BOS as
// common_tokenize(ctx, text, true) does) with ev, calling chunkDone (if not
// nil) with each chunk's index (from 0) and running estimate. Errors: NCtx or
// NBatch negative or NCtx below MinNCtx, fewer than 2·NCtx tokens (ErrTooShort), a
// token outside [0, ev.NVocab()), or an error of ev, wrapped with the chunk it occurred in.
//
// It cuts the tokens into n_chunk = len/n_ctx chunks of n_ctx tokens (the tail is dropped), replaces the
// first token of every chunk with BOS (when the vocabulary adds one), evaluates each chunk from an empty cache
// in batches of min(n_batch, n_ctx) tokens whose logits flags are set on the positions pos >= first = n_ctx/2,
// and scores tokens first+1 .. n_ctx-1 of the chunk: for each, −log softmax(logits)[next] as log_softmax
// computes it (max logit in float32, Σ expf(l − max) in double, logit − max − log(sum) with the float32
// difference widened), summed with its square in double, in token order. The running estimate after chunk i is
// exp(nll/count) ("[i]%.4f,"), the final one PPL = exp(nll/count) ± PPL·sqrt((nll2/count − (nll/count)²)/(count−1)).
func Compute(ev Evaluator, tokens []int32, opt Options, chunkDone func(i int, ppl float64)) (*Result, error) {
	p, err := PlanFor(len(tokens), opt)
	if err != nil {
		return nil, err
	}
	nCtx, nBatch, nChunk := p.NCtx, p.NBatch, p.NChunks
	nVocab := ev.NVocab()
	for i, t := range tokens[:nChunk*nCtx] {
		if t < 0 || int(t) >= nVocab {
			return nil, fmt.Errorf("perplexity: token %d is %d, outside the vocabulary of %d", i, t, nVocab)
		}
	}
	first := nCtx / 2
	r := &Result{NCtx: nCtx, NBatch: nBatch}
	chunk := make([]int32, nCtx)
	for i := range nChunk {
		copy(chunk, tokens[i*nCtx:(i+1)*nCtx])
		if opt.AddBOS {
			chunk[0] = opt.BOS
		}
		// Positions first.. are scored: their logits flags are set (a batch
		// before first has none).
		logits, err := ev.Evaluate(chunk, nCtx-first, nBatch)
		if err != nil {
			return nil, fmt.Errorf("perplexity: chunk %d: %w", i+1, err)
		}
		if len(logits) != (nCtx-first)*nVocab {
			return nil, fmt.Errorf("perplexity: chunk %d: %d logits for %d outputs of %d", i+1, len(logits), nCtx-first, nVocab)
		}
		// Row j is the distribution after chunk position first+j; the
		// token scored is the original text's (BOS only replaces the
		// input of position 0).
		next := tokens[i*nCtx+first:]
		for j := range nCtx - first - 1 {
			v := NLL(logits[j*nVocab:(j+1)*nVocab], next[j+1])
			r.NLL += v
			r.NLL2 += float64(v * v)
		}
		r.Count += nCtx - first - 1
		r.Chunks++
		ppl := fmath.Exp(r.NLL / float64(r.Count))
		r.Running = append(r.Running, ppl)
		if chunkDone != nil {
			chunkDone(i, ppl)
		}
	}
	nll := r.NLL / float64(r.Count)
	nll2 := r.NLL2/float64(r.Count) - float64(nll*nll)
	r.PPL = fmath.Exp(nll)
	r.PPLErr = math.NaN()
	if nll2 > 0 {
		r.PPLErr = math.Sqrt(nll2/float64(r.Count-1)) * r.PPL
	}
	return r, nil
}

// NLL is −log softmax(logits)[tok] as llama-perplexity's log_softmax computes
// it: the maximum logit (std::max from logits[0]), Σ expf(l − max) summed in
// double in index order, then −(double(logits[tok] − max) − log(sum)).
func NLL(logits []float32, tok int32) float64 {
	maxLogit := logits[0]
	for _, l := range logits[1:] {
		if maxLogit < l {
			maxLogit = l
		}
	}
	var sum float64
	for _, l := range logits {
		sum += float64(fmath.Expf(l - maxLogit))
	}
	return -(float64(logits[tok]-maxLogit) - fmath.Log(sum))
}

// WriteRunning writes the running estimate of chunk i as llama-perplexity
// prints it: "[i+1]%.4f,".
func WriteRunning(w io.Writer, i int, ppl float64) error {
	_, err := fmt.Fprintf(w, "[%d]%.4f,", i+1, ppl)
	return err
}

// WriteFinal writes the final line as llama-perplexity prints it:
// "Final estimate: PPL = %.4f +/- %.5f", or its message for a variance that
// is not positive.
func WriteFinal(w io.Writer, r *Result) error {
	if math.IsNaN(r.PPLErr) {
		_, err := fmt.Fprintln(w, "Unexpected negative standard deviation of log(prob)")
		return err
	}
	_, err := fmt.Fprintf(w, "Final estimate: PPL = %.4f +/- %.5f\n", r.PPL, r.PPLErr)
	return err
}
