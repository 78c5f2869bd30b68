package reference

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Model is a GGUF model loaded by the reference's libllama. Its methods
// serialize on an internal lock, so a Model may be shared between goroutines;
// it must not be used after [Model.Close].
type Model struct {
	lib    *Lib
	path   string
	nVocab int

	mu    sync.Mutex
	ptr   uintptr // struct llama_model *; 0 once closed
	vocab uintptr // const struct llama_vocab *
}

// Timing reports the wall-clock time of one [Model.GreedyTimed] run.
type Timing struct {
	// Prompt is the time of the single llama_decode of the whole prompt.
	Prompt time.Duration
	// Decode is the time of the generation loop after the prompt: Tokens
	// single-token llama_decode calls, each followed by reading the logits
	// and taking their argmax.
	Decode time.Duration
	// Tokens is the number of single-token decodes timed in Decode (n-1
	// for n generated tokens: the first token comes from the prompt's logits).
	Tokens int
}

// TokensPerSecond returns Tokens/Decode, or 0 when nothing was timed.
func (t Timing) TokensPerSecond() float64 {
	if t.Tokens == 0 || t.Decode <= 0 {
		return 0
	}
	return float64(t.Tokens) / t.Decode.Seconds()
}

// LoadModel loads the GGUF file at path with llama_model_load_from_file:
// llama_model_default_params with n_gpu_layers 0, split mode none and
// load_mode LLAMA_LOAD_MODE_MMAP; everything else (e.g. use_extra_bufts =
// true, so weights may be repacked as the reference does by default) is left
// at the library's defaults. The only registered backend is the haswell CPU
// backend. Call [Model.Close] to free it.
func (l *Lib) LoadModel(path string) (*Model, error) { return l.loadModel(path, false) }

// Close frees the model (llama_model_free). Closing twice is a no-op.
func (m *Model) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ptr != 0 {
		m.lib.llamaModelFree(m.ptr)
		m.ptr, m.vocab = 0, 0
	}
}

// NVocab returns the vocabulary size (llama_vocab_n_tokens), which is also
// the length of a logits row.
func (m *Model) NVocab() int { return m.nVocab }

var errClosed = errors.New("reference: model is closed")

// Tokenize returns llama_tokenize(vocab, text, addSpecial, parseSpecial).
// addSpecial adds BOS/EOS if the model is configured to; parseSpecial lets
// the text spell special and control tokens.
func (m *Model) Tokenize(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ptr == 0 {
		return nil, errClosed
	}
	if len(text) > math.MaxInt32-1 {
		return nil, fmt.Errorf("reference: text of %d bytes is too long", len(text))
	}
	buf := append([]byte(text), 0) // non-nil pointer even for ""; length passed explicitly
	toks := make([]int32, len(text)+8)
	for range 2 {
		n := m.lib.llamaTokenize(m.vocab, &buf[0], int32(len(text)), &toks[0], int32(len(toks)), addSpecial, parseSpecial)
		switch {
		case n == math.MinInt32:
			return nil, errors.New("reference: llama_tokenize: result exceeds int32")
		case n >= 0:
			return toks[:n:n], nil
		}
		toks = make([]int32, -int(n))
	}
	return nil, errors.New("reference: llama_tokenize: buffer size did not converge")
}

// TokenToPiece returns llama_token_to_piece(vocab, tok, lstrip=0, special):
// the bytes of one token (not necessarily valid UTF-8). With special false,
// control tokens render as nothing.
func (m *Model) TokenToPiece(tok int32, special bool) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ptr == 0 {
		return nil, errClosed
	}
	if tok < 0 || int(tok) >= m.nVocab {
		return nil, fmt.Errorf("reference: token %d out of range [0,%d)", tok, m.nVocab)
	}
	buf := make([]byte, 64)
	for range 2 {
		n := m.lib.llamaTokenToPiece(m.vocab, tok, &buf[0], int32(len(buf)), 0, special)
		if n >= 0 {
			return buf[:n:n], nil
		}
		buf = make([]byte, -int(n))
	}
	return nil, errors.New("reference: llama_token_to_piece: buffer size did not converge")
}

// Greedy decodes prompt and then generates n tokens greedily; see
// [Model.GreedyTimed].
func (m *Model) Greedy(prompt []int32, n int, threads int) ([]int32, error) {
	out, _, err := m.GreedyTimed(prompt, n, threads)
	return out, err
}

// GreedyTimed runs greedy generation in a fresh context and also reports
// timings. The context is llama_context_default_params with n_ctx =
// len(prompt)+n rounded up to a multiple of 256 (llama.cpp pads n_ctx to 256
// anyway), n_batch = max(default 2048, len(prompt)) so the prompt goes to one
// llama_decode call (llama.cpp then caps n_batch at n_ctx), n_ubatch left at
// its default 512, n_threads = n_threads_batch = threads, and everything else
// (flash_attn_type auto, F16 KV cache, ...) at the library's defaults.
//
// The prompt is decoded in one batch (only the last position outputs logits);
// then n tokens are chosen one at a time, each as the argmax of the last
// logits (first maximum on ties, exactly the rule of llama_sampler_greedy)
// and, except for the last one, decoded as a one-token batch. Generation
// does not stop at EOS or any other token: exactly n ids are returned.
func (m *Model) GreedyTimed(prompt []int32, n int, threads int) ([]int32, Timing, error) {
	var tm Timing
	if n < 0 {
		return nil, tm, fmt.Errorf("reference: n = %d < 0", n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx, err := m.newContext(prompt, len(prompt)+n, threads)
	if err != nil {
		return nil, tm, err
	}
	defer m.lib.llamaFree(ctx)

	t0 := time.Now()
	if err := m.decode(ctx, prompt); err != nil {
		return nil, tm, err
	}
	tm.Prompt = time.Since(t0)
	out := make([]int32, 0, n)
	if n == 0 {
		return out, tm, nil
	}
	tok := make([]int32, 1)
	t0 = time.Now()
	for {
		logits, err := m.lastLogits(ctx)
		if err != nil {
			return nil, tm, err
		}
		next := argmax(logits)
		out = append(out, next)
		if len(out) == n {
			break
		}
		tok[0] = next
		if err := m.decode(ctx, tok); err != nil {
			return nil, tm, fmt.Errorf("%w (generating token %d)", err, len(out))
		}
		tm.Tokens++
	}
	tm.Decode = time.Since(t0)
	return out, tm, nil
}

// PromptLogits decodes prompt in a fresh context (the same settings as
// [Model.GreedyTimed] with n = 0) and returns a copy of the logits of the
// last prompt position: NVocab float32s.
func (m *Model) PromptLogits(prompt []int32, threads int) ([]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx, err := m.newContext(prompt, len(prompt), threads)
	if err != nil {
		return nil, err
	}
	defer m.lib.llamaFree(ctx)
	if err := m.decode(ctx, prompt); err != nil {
		return nil, err
	}
	logits, err := m.lastLogits(ctx)
	if err != nil {
		return nil, err
	}
	return append([]float32(nil), logits...), nil
}

// argmax returns the index of the first maximum, comparing with > like
// llama_sampler_greedy_apply.
func argmax(x []float32) int32 {
	best := 0
	for i := 1; i < len(x); i++ {
		if x[i] > x[best] {
			best = i
		}
	}
	return int32(best)
}

// newContext creates a llama_context for a run of nPos positions whose
// prompt is prompt. The caller holds m.mu and frees the context.
func (m *Model) newContext(prompt []int32, nPos int, threads int) (uintptr, error) {
	return m.newContextWith(prompt, nPos, threads, nil)
}

// newContextWith is newContext with a hook that may change the parameters
// (used by Trace to install the eval callback).
func (m *Model) newContextWith(prompt []int32, nPos int, threads int, hook func(*llamaContextParams)) (uintptr, error) {
	if m.ptr == 0 {
		return 0, errClosed
	}
	if len(prompt) == 0 {
		return 0, errors.New("reference: empty prompt")
	}
	if threads < 1 {
		return 0, fmt.Errorf("reference: threads = %d < 1", threads)
	}
	for i, t := range prompt {
		if t < 0 || int(t) >= m.nVocab {
			return 0, fmt.Errorf("reference: prompt[%d] = %d out of range [0,%d)", i, t, m.nVocab)
		}
	}
	if nPos > math.MaxInt32-256 {
		return 0, fmt.Errorf("reference: %d positions is too many", nPos)
	}
	p := m.lib.llamaContextDefaultParams()
	p.NCtx = uint32((nPos + 255) / 256 * 256)
	p.NBatch = max(p.NBatch, uint32(len(prompt)))
	p.NThreads = int32(threads)
	p.NThreadsBatch = int32(threads)
	if hook != nil {
		hook(&p)
	}
	mark := m.lib.log.mark()
	ctx := m.lib.llamaInitFromModel(m.ptr, p)
	if ctx == 0 {
		return 0, fmt.Errorf("reference: llama_init_from_model failed%s", m.lib.log.since(mark))
	}
	if got := m.lib.llamaNCtx(ctx); got < uint32(nPos) {
		m.lib.llamaFree(ctx)
		return 0, fmt.Errorf("reference: context has n_ctx %d < %d positions", got, nPos)
	}
	return ctx, nil
}

// decode runs llama_decode on a batch of toks at the next positions of
// sequence 0, with logits for the last token only (what llama_batch_get_one
// builds: all arrays but token NULL).
func (m *Model) decode(ctx uintptr, toks []int32) error {
	var pin runtime.Pinner
	pin.Pin(&toks[0])
	defer pin.Unpin()
	b := llamaBatch{NTokens: int32(len(toks)), Token: uintptr(unsafe.Pointer(&toks[0]))}
	mark := m.lib.log.mark()
	if rc := m.lib.llamaDecode(ctx, b); rc != 0 {
		return fmt.Errorf("reference: llama_decode of %d tokens returned %d%s", len(toks), rc, m.lib.log.since(mark))
	}
	return nil
}

// lastLogits returns the logits of the last output (C memory, valid until the
// next decode).
func (m *Model) lastLogits(ctx uintptr) ([]float32, error) {
	p := m.lib.llamaGetLogitsIth(ctx, -1)
	if p == nil {
		return nil, errors.New("reference: llama_get_logits_ith(-1) returned NULL")
	}
	return unsafe.Slice(p, m.nVocab), nil
}
