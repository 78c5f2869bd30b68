package model

import (
	"errors"
	"fmt"

	"github.com/bankml/bankml/gguf"
)

// ErrContextFull is wrapped by the errors of a decode that does not fit the
// context and of a prompt that llama-server would refuse for its size.
var ErrContextFull = errors.New("context full")

// kvPad is llama.cpp's KV padding: n_ctx and the KV length seen by attention
// (n_kv) are multiples of 256.
const kvPad = 256

// maxCtx bounds the context size (llama.cpp's n_ctx is a uint32).
const maxCtx = 1 << 30

// MaxContextSize is CheckContextSize's upper bound on a requested context size, 2^30.
const MaxContextSize = maxCtx

// NUbatch is llama.cpp's default micro-batch size (n_ubatch): a decode of
// more tokens runs in micro-batches of NUbatch, the last one shorter.
const NUbatch = 512

// ContextSize returns the context (tokens per sequence) llama-server v0.5.0
// gives a slot with its defaults and -c nCtx: nCtx 0 takes the model's
// training context; otherwise llama.cpp pads nCtx to a multiple of 256
// (llama_context), and the server caps the slot at the training context
// (server_context::n_ctx_slot; its default -np auto gives 4 slots over a
// unified KV pool of 4×n_ctx_train cells, each slot may fill n_ctx_train).
// capped reports whether the cap applied. A negative nCtx is an error.
// Not reproduced: with -c 0 llama-server's common_fit_params shrinks the
// pool when 4×n_ctx_train cells do not fit the machine's free memory, which
// can make a slot smaller than n_ctx_train on a small machine (for Bonsai-8B
// shapes the full pool is 24 GB of f16 KV); bankml's cache grows with use
// instead, and NewContext (one context) and the engine (all its slots) refuse
// caches that cannot all fill up beside the weights (CheckMemory).
func (m *Model) ContextSize(nCtx int) (size int, capped bool, err error) {
	if err := CheckContextSize(nCtx); err != nil {
		return 0, false, err
	}
	switch {
	case nCtx == 0:
		return m.HP.NCtxTrain, false, nil
	}
	size = (nCtx + kvPad - 1) / kvPad * kvPad
	if size > m.HP.NCtxTrain {
		return m.HP.NCtxTrain, true, nil
	}
	return size, false, nil
}

// CheckContextSize is ContextSize's bound on a requested context size, which needs no model: nCtx in
// [0, 2^30] (0: the training context). Errors name the size and the bound.
func CheckContextSize(nCtx int) error {
	if nCtx < 0 || nCtx > maxCtx {
		return fmt.Errorf("model: context size %d outside [0, %d]", nCtx, maxCtx)
	}
	return nil
}

// Context is one sequence's state: its KV cache (f16, llama.cpp's default
// type_k/type_v, or the quantized types of CacheTypes), the tokens it
// holds, the class each cell was computed with, and the Runner whose
// workers evaluate it.
//
// The cache grows with use (in steps of 256 cells, doubling) up to the
// context size, so a context sized for the model's training length costs
// only the memory of the cells in use. A Context is not safe for concurrent
// use, nor concurrently with other contexts of its Runner.
type Context struct {
	m           *Model
	r           *Runner
	ownRunner   bool       // made by Model.NewContext: Close stops r
	nCtx        int        // positions usable
	nCells      int        // nCtx padded to 256, as llama.cpp pads n_ctx
	tokens      []int32    // the tokens whose K/V the cache holds, position order
	sigs        []uint8    // per cached position: the class its cell was computed with (cellSig)
	k, v        [][]uint16 // f16 K / V: per layer capacity × n_embd_k_gqa values, zero where never written
	kq, vq      [][]byte   // quantized K / V (types.K, types.V): per layer capacity rows of n_embd_k_gqa values' blocks
	types       CacheTypes // the cache's data types (F16 unless NewContextTypes chose others)
	rot         kvRot      // the Hadamard rotations around a quantized cache
	capCells    int        // cells allocated per layer (a multiple of 256, at most nCells)
	attnThreads int
	// trace, when set (tests), receives intermediate results under
	// llama.cpp's tensor names (cb names such as "Qcur-0").
	trace func(name string, data []float32)
}

// NewContext makes an empty context of nCtx positions (the limit: decodes
// past it fail with ErrContextFull; see ContextSize for llama-server's
// rule) with a Runner of its own on threads workers (started here, stopped
// by Close; results do not depend on the pool's size): the context of a
// program that runs one sequence. Runner.NewContext makes contexts that
// share one. Its errors are NewContextTypes' (f16 K and V).
func (m *Model) NewContext(nCtx, threads int) (*Context, error) {
	return m.NewContextTypes(nCtx, threads, CacheTypes{})
}

// NewContextTypes is NewContext with the cache's data types (see
// Runner.NewContextTypes). Besides Runner.NewContextTypes' errors, it
// refuses a context whose full KV cache at those types, with the model's
// weights, exceeds the memory the process may use (CheckMemory with one
// slot), naming the bytes needed.
func (m *Model) NewContextTypes(nCtx, threads int, types CacheTypes) (*Context, error) {
	if err := checkNCtx(nCtx); err != nil {
		return nil, err
	}
	if err := checkCacheTypes(m.HP.HeadDim, types.norm()); err != nil {
		return nil, err
	}
	if err := m.CheckMemory(nCtx, 1, types, nil); err != nil {
		return nil, err
	}
	r, err := m.NewRunner(threads)
	if err != nil {
		return nil, err
	}
	c, err := r.NewContextTypes(nCtx, types)
	if err != nil {
		r.Close()
		return nil, err
	}
	c.ownRunner = true
	return c, nil
}

// NewContext makes an empty context of nCtx positions evaluated by r. The
// reference's split-KV attention depends on its thread count; the context
// mirrors a reference running on as many threads as r has workers (see
// SetAttnThreads). It refuses a size below 1 or above 2^30. It does not
// check memory: the owner of a Runner's contexts checks them all at once
// (Model.CheckMemory: the engine for its slots; Model.NewContext for its
// one). No KV memory is allocated until the first decode.
func (r *Runner) NewContext(nCtx int) (*Context, error) {
	return r.NewContextTypes(nCtx, CacheTypes{})
}

// NewContextTypes is NewContext with the data types of the K and V cells
// (llama_context_params' type_k and type_v; the zero CacheTypes is F16 for
// both). A quantized cache is written as ggml_set_rows writes it (the
// type's from_float), rotated by llama.cpp's Hadamard matrices where
// llama_kv_cache turns them on (kvRot: Q and K before the cache when K is
// quantized, V before it and the attention's output after it when V is),
// and read by flash attention's one-row kernel for every row (the
// reference's tiled and split-KV kernels take f16 K and V of one type
// only): Q converted to Q8_0 (K's vec_dot_type) for the K·Q dot product,
// V widened by its to_float into an f32 accumulator. It refuses a type
// other than F16, Q8_0 and Q4_0 and, as llama_init_from_model does, a
// quantized type whose block size does not divide the head size. An
// encoder has no KV cache in llama.cpp: its types change nothing.
func (r *Runner) NewContextTypes(nCtx int, types CacheTypes) (*Context, error) {
	m := r.m
	if err := checkNCtx(nCtx); err != nil {
		return nil, err
	}
	types = types.norm()
	if err := checkCacheTypes(m.HP.HeadDim, types); err != nil {
		return nil, err
	}
	if m.Encoder() {
		types = CacheTypes{}.norm()
	}
	nCells := (nCtx + kvPad - 1) / kvPad * kvPad
	c := &Context{m: m, r: r, nCtx: nCtx, nCells: nCells, attnThreads: r.Workers(), types: types, rot: m.kvRotation(types)}
	c.k = make([][]uint16, m.HP.NLayer)
	c.v = make([][]uint16, m.HP.NLayer)
	c.kq = make([][]byte, m.HP.NLayer)
	c.vq = make([][]byte, m.HP.NLayer)
	return c, nil
}

// CacheTypes are the data types of c's K and V cells.
func (c *Context) CacheTypes() CacheTypes { return c.types }

// checkNCtx refuses a context size outside [1, 2^30].
func checkNCtx(nCtx int) error {
	if nCtx < 1 || nCtx > maxCtx {
		return fmt.Errorf("model: context size %d outside [1, %d]", nCtx, maxCtx)
	}
	return nil
}

// kvBytes is the size of K and V for cells cells over all layers (f16).
func (m *Model) kvBytes(cells int) uint64 {
	return m.kvBytesTypes(cells, CacheTypes{}.norm())
}

// kvBytesTypes is the size of K and V of types t for cells cells over all
// layers (Hparams.KVCacheBytes' formula).
func (m *Model) kvBytesTypes(cells int, t CacheTypes) uint64 {
	return m.HP.kvBytes(uint64(cells), t)
}

// KVBytes is the memory the context's KV cache holds now, in bytes.
func (c *Context) KVBytes() uint64 { return c.m.kvBytesTypes(c.capCells, c.types) }

// grow makes room for cells cells in every layer's K and V.
func (c *Context) grow(cells int) {
	if cells <= c.capCells {
		return
	}
	newCap := max(kvPad, 2*c.capCells)
	for newCap < cells {
		newCap *= 2
	}
	newCap = min((newCap+kvPad-1)/kvPad*kvPad, c.nCells)
	nkv := c.m.HP.NHeadKV * c.m.HP.HeadDim
	for il := range c.k {
		if c.types.K == gguf.F16 {
			c.k[il] = append(make([]uint16, 0, newCap*nkv), c.k[il]...)[:newCap*nkv]
		} else {
			c.kq[il] = append(make([]byte, 0, newCap*rowBytes(c.types.K, nkv)), c.kq[il]...)[:newCap*rowBytes(c.types.K, nkv)]
		}
		if c.types.V == gguf.F16 {
			c.v[il] = append(make([]uint16, 0, newCap*nkv), c.v[il]...)[:newCap*nkv]
		} else {
			c.vq[il] = append(make([]byte, 0, newCap*rowBytes(c.types.V, nkv)), c.vq[il]...)[:newCap*rowBytes(c.types.V, nkv)]
		}
	}
	c.capCells = newCap
}

// Close stops the context's matmul workers when it has a Runner of its own
// (Model.NewContext); a context of a shared Runner holds nothing to stop.
// The context must not be used afterwards; closing twice is harmless.
func (c *Context) Close() {
	if c.ownRunner {
		c.r.Close()
	}
}

// SetAttnThreads sets the thread count of the reference being mirrored by the
// split-KV attention kernel (single-row decode over 512 or more KV cells),
// whose chunking depends on it. It defaults to the Runner's worker count and
// is independent of the matmul pool's size. Changing it marks the cached
// cells as computed by no fresh evaluation (ExactPrefix keeps none).
func (c *Context) SetAttnThreads(n int) {
	n = max(1, n)
	if n != c.attnThreads {
		for i := range c.sigs {
			c.sigs[i] = sigUnknown
		}
	}
	c.attnThreads = n
}

// AttnThreads is the reference thread count split-KV attention mirrors.
func (c *Context) AttnThreads() int { return c.attnThreads }

// Runner is the runner that evaluates c.
func (c *Context) Runner() *Runner { return c.r }

// NPast is the number of positions held in the KV cache.
func (c *Context) NPast() int { return len(c.tokens) }

// NCtx is the context size in tokens.
func (c *Context) NCtx() int { return c.nCtx }

// Tokens returns a copy of the tokens whose K/V the cache holds, in position
// order: every token passed to Decode or DecodeAll since the last Truncate.
func (c *Context) Tokens() []int32 { return append([]int32(nil), c.tokens...) }

// Truncate drops the positions n and later from the cache, as
// llama_memory_seq_rm(mem, seq, n, -1) does: the next decode continues at
// position n. Unlike llama.cpp it zeroes the dropped cells, so that the
// cache past its tokens is what a fresh context holds there (the tiled
// attention kernel reads the masked cells of a row's last tile with weight
// 0). It fails for n outside [0, NPast()].
func (c *Context) Truncate(n int) error {
	if n < 0 || n > len(c.tokens) {
		return fmt.Errorf("model: truncate to %d positions of %d cached", n, len(c.tokens))
	}
	nkv := c.m.HP.NHeadKV * c.m.HP.HeadDim
	bk, bv := rowBytes(c.types.K, nkv), rowBytes(c.types.V, nkv)
	for il := range c.k {
		if c.types.K == gguf.F16 {
			clear(c.k[il][n*nkv : len(c.tokens)*nkv])
		} else {
			clear(c.kq[il][n*bk : len(c.tokens)*bk])
		}
		if c.types.V == gguf.F16 {
			clear(c.v[il][n*nkv : len(c.tokens)*nkv])
		} else {
			clear(c.vq[il][n*bv : len(c.tokens)*bv])
		}
	}
	c.tokens, c.sigs = c.tokens[:n], c.sigs[:n]
	return nil
}

// ReusablePrefix returns how many leading tokens of prompt a cache holding
// cached can keep, by llama-server's rule for a slot with cache_prompt on
// (the default; server_context::update_slots): the length of the common
// prefix of cached and prompt, less one when that is the whole prompt (at
// least one token is evaluated, so that the prompt's last logits exist). The
// server reports this number as the prompt tokens taken from the cache
// (timings.cache_n).
func ReusablePrefix(cached, prompt []int32) int {
	n := 0
	for n < len(cached) && n < len(prompt) && cached[n] == prompt[n] {
		n++
	}
	if n == len(prompt) && n > 0 {
		n--
	}
	return n
}

// Reuse prepares the context for prompt the way a llama-server slot does:
// it keeps ReusablePrefix(c.Tokens(), prompt) positions, truncates the rest
// and returns the number kept; the caller then decodes prompt[kept:].
func (c *Context) Reuse(prompt []int32) int {
	n := ReusablePrefix(c.tokens, prompt)
	_ = c.Truncate(n)
	return n
}

// CheckPrompt applies llama-server's context limit to a prompt of n tokens
// about to start a turn in this context: the server refuses a prompt of
// n_ctx tokens or more (a generated token needs a cell). The error wraps
// ErrContextFull and names both sizes.
func (c *Context) CheckPrompt(n int) error {
	if n >= c.nCtx {
		return fmt.Errorf("model: the prompt is %d tokens and the context %d: it must be shorter than the context: %w", n, c.nCtx, ErrContextFull)
	}
	return nil
}

// Decode evaluates tokens at the next positions and returns the logits of the
// last one (NVocab floats, a new slice). Like llama_decode with a batch whose
// last token is the only output, it runs micro-batches of NUbatch tokens, and
// on the last layer of the last one only that token goes through the
// feed-forward (inp_out_ids). It fails, naming the reason, on an empty batch,
// a token outside the vocabulary, or more positions than the context holds
// (ErrContextFull); on error the context is unchanged.
func (c *Context) Decode(tokens []int32) ([]float32, error) {
	return c.decode(tokens, 1)
}

// DecodeAll is Decode with every token of the batch as an output, as
// llama_decode computes a batch whose logits flags are all set (what
// llama-perplexity asks): it returns len(tokens) rows of NVocab logits, row i
// for tokens[i] (the distribution of the token after it). Every micro-batch
// keeps all its rows through the last layer, so these logits are the
// reference's for such a batch — the last row equals Decode's only when the
// batch has one token (the matmul paths depend on the number of rows).
func (c *Context) DecodeAll(tokens []int32) ([]float32, error) {
	return c.decode(tokens, len(tokens))
}

// DecodeOutputs is Decode with the last outputs tokens of the batch as its
// outputs (0 <= outputs <= len(tokens)), as llama_decode computes a batch whose
// logits flags are set on a suffix — what llama-perplexity asks for the second
// half of a chunk. It returns outputs rows of NVocab logits, row i for
// tokens[len(tokens)-outputs+i]. On the last layer each micro-batch carries
// only its output rows through the feed-forward (inp_out_ids), and a
// micro-batch without outputs stops after the last layer's attention, as in
// llama.cpp, so the logits are the reference's for that batch.
func (c *Context) DecodeOutputs(tokens []int32, outputs int) ([]float32, error) {
	if outputs < 0 || outputs > len(tokens) {
		return nil, fmt.Errorf("model: %d outputs of a batch of %d tokens", outputs, len(tokens))
	}
	return c.decode(tokens, outputs)
}

// decode runs tokens in micro-batches of NUbatch from the next position,
// one forward pass each; the last nOut tokens are outputs and their logits
// are returned in order.
func (c *Context) decode(tokens []int32, nOut int) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, errors.New("model: decode of an empty batch")
	}
	if len(c.tokens)+len(tokens) > c.nCtx {
		return nil, fmt.Errorf("model: %d tokens after %d cached exceed the context of %d: %w", len(tokens), len(c.tokens), c.nCtx, ErrContextFull)
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= c.m.HP.NVocab {
			return nil, fmt.Errorf("model: token id %d outside the vocabulary of %d", t, c.m.HP.NVocab)
		}
	}
	if len(tokens) <= NUbatch {
		return c.ubatch(tokens, nOut)
	}
	logits := make([]float32, 0, nOut*c.m.HP.NVocab)
	for len(tokens) > 0 {
		n := min(len(tokens), NUbatch)
		// The outputs are a suffix of the batch: this micro-batch holds
		// those among its last rows.
		outputs := max(0, n-(len(tokens)-nOut))
		l, err := c.ubatch(tokens[:n], outputs)
		if err != nil {
			return nil, err
		}
		logits = append(logits, l...)
		tokens = tokens[n:]
		nOut -= outputs
	}
	return logits, nil
}

// ubatch evaluates tokens as one micro-batch whose last outputs rows are
// outputs, and returns their logits.
func (c *Context) ubatch(tokens []int32, outputs int) ([]float32, error) {
	c.r.spans = append(c.r.spans[:0], Span{Ctx: c, Tokens: tokens, UBatch: len(tokens), Outputs: outputs})
	err := c.r.Decode(c.r.spans)
	logits := c.r.spans[0].Logits
	c.r.spans[0] = Span{}
	if err != nil {
		return nil, err
	}
	if logits == nil {
		logits = []float32{}
	}
	return logits, nil
}
