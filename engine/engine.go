package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/grammar"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/tokenizer"
)

// SlotPromptSimilarity is llama-server's default --slot-prompt-similarity
// (common_params::slot_prompt_similarity): a free slot is chosen for a prompt
// when the common prefix of its cached tokens and the prompt exceeds this
// fraction of the prompt.
const SlotPromptSimilarity = 0.1

// ErrQueueFull is returned by Generate when Parallel requests run and
// QueueSize more already wait for a slot (llama-server has no bound; bankml
// answers 429 there).
var ErrQueueFull = errors.New("engine: the request queue is full")

// ErrContextFull is model.ErrContextFull: a *ContextError wraps it, and so do
// decode errors past the context.
var ErrContextFull = model.ErrContextFull

// ErrClosed is returned by Generate after Close.
var ErrClosed = errors.New("engine: closed")

// ContextError is llama-server's refusal of a prompt that does not fit its
// slot (update_slots: a prompt of n_ctx tokens or more), answered with HTTP
// 400 and the body {"code": 400, "message": Error(), "type":
// "exceed_context_size_error", "n_prompt_tokens": NPromptTokens, "n_ctx":
// NCtx} (format_error_response, server_task_result_error::to_json).
type ContextError struct {
	NPromptTokens int // tokens of the prompt
	NCtx          int // the slot's context size
}

// Error is llama-server's message for the refusal, word for word.
func (e *ContextError) Error() string {
	return fmt.Sprintf("request (%d tokens) exceeds the available context size (%d tokens), try increasing it", e.NPromptTokens, e.NCtx)
}

// Is makes errors.Is(err, ErrContextFull) hold.
func (e *ContextError) Is(target error) bool { return target == ErrContextFull }

// CacheReuse is how cache_prompt keeps a slot's cache (serve --cache-reuse).
type CacheReuse string

const (
	// CacheReuseExact keeps the longest cached prefix whose cells a fresh
	// evaluation of the new prompt computes alike
	// (model.Context.ExactPrefix), and evaluates the rest with the fresh
	// evaluation's arithmetic: every answer equals the answer of a fresh
	// slot. The default.
	CacheReuseExact CacheReuse = "exact"
	// CacheReuseServer keeps every token llama-server keeps
	// (model.ReusablePrefix: the whole common prefix) and evaluates the rest
	// in micro-batches from there, as llama-server does: its cache_n, and
	// answers that depend on what the slot ran before, as llama-server's do.
	CacheReuseServer CacheReuse = "server"
)

// ParseCacheReuse checks a --cache-reuse value: "exact" or "server".
func ParseCacheReuse(s string) (CacheReuse, error) {
	switch c := CacheReuse(s); c {
	case CacheReuseExact, CacheReuseServer:
		return c, nil
	}
	return "", fmt.Errorf("engine: cache reuse %q: want exact or server", s)
}

// Options configure an Engine (llama-server's flags where they exist).
type Options struct {
	NCtx        int // per slot, in tokens (-c); 0: the model's training context. Resolved by model.ContextSize.
	Threads     int // matmul workers of the engine, shared by every slot (-t); 0: 1
	AttnThreads int // the reference thread count mirrored by split-KV attention; 0: Threads
	Parallel    int // slots (--parallel / -np); 0: 1
	QueueSize   int // requests allowed to wait for a slot; beyond: ErrQueueFull (the server's 429); 0: none wait
	// BatchSize bounds the prompt rows of one step over all slots (llama-server's -b n_batch, 2048 there);
	// decode rows come on top. 0: model.NUbatch (512).
	BatchSize int

	// SuppressTokens are the model's tokenizer.ggml.suppress_tokens, banned in every chain as llama.cpp
	// bans them (read them with sample.SuppressTokens(f, m.HP.NVocab)); nil for a model without.
	SuppressTokens []int32

	// CacheReuse is cache_prompt's rule: CacheReuseExact ("" too) or CacheReuseServer.
	CacheReuse CacheReuse
	// ModelID identifies the model file in slot files (SaveSlot,
	// RestoreSlot: a file saved from another model is refused); serve
	// passes the file's sha256. Slot files need it.
	ModelID string
	// CacheRAMMiB is llama-server's --cache-ram in MiB: a host-memory cache
	// of the prompts slots held (promptCache); -1: no limit; 0 (the
	// default; llama-server's is 8192): none.
	CacheRAMMiB int
	// PastTrainingContext takes NCtx as the context size itself, even above
	// the model's training context, as llama-perplexity takes -c (it only
	// warns); by default a slot's context is model.ContextSize's (llama-server
	// caps a slot at the training context).
	PastTrainingContext bool
	// Pooling is the pooling of Embed's vectors (llama-server's --pooling:
	// none, mean, cls, last, rank); "": the model's {arch}.pooling_type
	// (model.Model.Pooling).
	Pooling string
	// NoSettle turns off settling (the scheduler re-evaluating an idle
	// slot's generated cells so that a conversation's next turn reuses
	// them under CacheReuseExact); benchmarks that must not share the CPU
	// with it set it.
	NoSettle bool
	// CacheTypes are the data types of every slot's K and V cells
	// (llama-server's -ctk/-ctv; model.CacheTypes): the zero value is f16.
	CacheTypes model.CacheTypes
	// EmbedUBatch is the physical batch of Embed (llama.cpp's n_ubatch in
	// an embedding context; llama-server's -ub, llama-embedding's -b): an
	// input of up to this many tokens is evaluated as one micro-batch, a
	// longer one is refused (EmbedTooLargeError) unless the model is causal
	// and pools the last token, which runs micro-batches of this size.
	// 0: model.NUbatch (512, llama.cpp's default -ub). Generation is not
	// affected: prompts run in micro-batches of model.NUbatch.
	EmbedUBatch int
	// MemoryBound is the memory New checks the model's weights and every
	// slot's full KV cache against (model.Model.CheckMemory); nil: the
	// process's (model.ProcessMemory: the machine's RAM or its cgroup's
	// limit).
	MemoryBound model.MemoryBound
	// OnDecode, when set, is called by the scheduler after each step that ran a forward pass over requests'
	// work that succeeded or started a prompt, with what llama-server's update_slots counts in its metrics
	// there (tools/server/server-context.cpp): the cached prefix of each prompt started (add_prompt_cached,
	// when the prompt starts, whatever happens to the pass), and after each successful llama_decode
	// metrics_post_decode's counts (DecodeStats). Settling passes (no request's work) are not counted. It
	// runs on the scheduler's goroutine, after the engine's lock is released, and must not block.
	OnDecode func(DecodeStats)
	// OnPrediction, when set, is called with a request's timings when the request, having sampled at least
	// one token, gives its slot back, however it ended (finished, cancelled, failed): llama-server's
	// metrics_on_prediction, which callback_on_reset runs before a slot with n_gen > 0 is reset
	// (tools/server/server-context.cpp). It runs on the request's goroutine and must not block.
	OnPrediction func(Timings)
}

// DecodeStats is one scheduler step's counts for Options.OnDecode, those llama-server's update_slots takes
// (tools/server/server-context.cpp).
type DecodeStats struct {
	// Decoded is whether the step ran a forward pass over requests' work that succeeded (metrics_post_decode
	// runs: n_decode++); the fields below but PromptCached are zero without it.
	Decoded bool
	// BusySlots is the slots processing a request (server_slot::is_processing) at the pass, and each embedding
	// input of the pass, which holds a slot of its own in llama-server (n_busy_slots).
	BusySlots int
	// PromptCached is the cached prefix kept by the prompts the step started (add_prompt_cached(n_past)).
	PromptCached int
	// PromptTokens is the prompt tokens the pass evaluated, embedding inputs' tokens included (the batch's
	// is_prompt tokens, add_prompt), and PromptTime the pass's time when there were some: each pass is
	// synchronous, so the time metrics_flush_prompt measures from the decode's start.
	PromptTokens int
	PromptTime   time.Duration
	// MaxTokens is the largest number of tokens a slot holds after the pass, idle slots included (a settling
	// slot's with the ones it will evaluate again), or a sequence of the pass (an embedding input's)
	// (slot.prompt.n_tokens() over every slot: the n_tokens_max metrics_post_decode keeps): a slot's prompt and
	// the generated tokens decoded so far.
	MaxTokens int
}

// Engine serves completions over Parallel slots of one model. Its methods
// are safe for concurrent use.
type Engine struct {
	m       *model.Model
	tok     tokenizer.Tokenizer
	tmpl    *chat.Template
	o       Options
	nCtx    int
	smodl   sample.Model
	eogs    []int32
	runner  *model.Runner // the one pool of workers and matmul buffers, run by the scheduler
	pcache  *promptCache  // --cache-ram; nil: none (the scheduler's)
	pool    embed.Pooling // Embed's pooling
	poolErr error         // why the model's own pooling cannot run (Embed's error)
	// embedMax bounds the KV bytes of the embedding inputs' contexts alive
	// at once (embedSpans); embedLive is what they hold (the scheduler's).
	embedMax, embedLive uint64

	mu       sync.Mutex
	slots    []*slot
	waiters  []*waiter
	queue    []*job // submitted jobs, in arrival order (the scheduler's)
	closed   bool
	clock    int64 // logical time of slot use, for LRU
	wake     chan struct{}
	loopDone chan struct{}
	stats    stepStats
	tasks    int64 // requests that took a slot so far (id_task)
	releases int   // slot releases so far
	quiet    int   // releases as of the scheduler's last finding nothing to do
}

// slot is one llama-server slot: a context and its bookkeeping. ctx and
// settle belong to the scheduler; the rest is under Engine.mu.
type slot struct {
	id     int
	ctx    *model.Context // nil until first use
	settle []int32        // tokens being re-evaluated by settling, after ctx's
	// settleOff: the slot does not settle until its next request (a
	// settling step failed, or it holds an Evaluate sequence).
	settleOff bool
	busy      bool
	lastUsed  int64     // Engine.clock at the last release; 0: never used
	usedAt    time.Time // wall time of the last release
	tokens    []int32   // cached tokens as of the last step, for slot choice
	kvBytes   uint64    // the KV cache's memory as of the last step
	task      *slotTask // the current or last request
	lru       bool      // pick gave the slot by least-recent use (llama-server then updates the prompt cache)
	// awaiting is when the slot's request got logits and went to sample
	// (zero: not sampling).
	awaiting time.Time
}

// waiter is a request waiting for a slot.
type waiter struct {
	prompt []int32
	want   int  // requested slot id or -1
	action bool // a slot action: not bounded by QueueSize
	ch     chan *slot
}

// New makes an engine over a loaded model, its tokenizer and (optionally;
// nil for completion-only use) its chat template. It starts the engine's
// pool of Threads workers and its scheduler (Close stops them); the
// Parallel slots' contexts (each a *model.Context with its own KV cache)
// are made on first use. The context size per slot is m.ContextSize(o.NCtx)
// (llama-server's rule). Errors: negative options, an unknown CacheReuse, a
// tokenizer whose vocabulary size differs from the model's, and a model
// whose weights and Parallel full KV caches (at CacheTypes) exceed the
// memory the process may use (model.Model.CheckMemory, checked once here
// for every slot: their contexts are made on first use without a check of
// their own), naming the bytes and the flags to change (-c, -np, -ctk/-ctv).
func New(m *model.Model, tok tokenizer.Tokenizer, tmpl *chat.Template, o Options) (*Engine, error) {
	if m == nil || tok == nil {
		return nil, errors.New("engine: New needs a model and its tokenizer")
	}
	if o.NCtx < 0 || o.Threads < 0 || o.AttnThreads < 0 || o.Parallel < 0 || o.QueueSize < 0 || o.BatchSize < 0 || o.CacheRAMMiB < -1 {
		return nil, fmt.Errorf("engine: negative option in %+v", o)
	}
	if o.CacheReuse == "" {
		o.CacheReuse = CacheReuseExact
	}
	if _, err := ParseCacheReuse(string(o.CacheReuse)); err != nil {
		return nil, err
	}
	if tok.NVocab() != m.HP.NVocab {
		return nil, fmt.Errorf("engine: the tokenizer has %d tokens and the model %d", tok.NVocab(), m.HP.NVocab)
	}
	if o.Threads == 0 {
		o.Threads = 1
	}
	if o.AttnThreads == 0 {
		o.AttnThreads = o.Threads
	}
	if o.Parallel == 0 {
		o.Parallel = 1
	}
	if o.BatchSize == 0 {
		o.BatchSize = model.NUbatch
	}
	if o.EmbedUBatch == 0 {
		o.EmbedUBatch = model.NUbatch
	}
	if o.EmbedUBatch < 0 {
		return nil, fmt.Errorf("engine: embedding physical batch %d: must be positive", o.EmbedUBatch)
	}
	n, _, err := m.ContextSize(o.NCtx)
	if o.PastTrainingContext {
		n, err = evalCtx(m, o.NCtx)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if err := m.CheckCacheTypes(o.CacheTypes); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	// One check for every slot, before anything is allocated: the weights
	// and Parallel full caches at the slots' types must fit together.
	if err := m.CheckMemory(n, o.Parallel, o.CacheTypes, o.MemoryBound); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	pool, err := embed.ParsePooling(o.Pooling)
	if err != nil {
		return nil, fmt.Errorf("engine: --pooling: %w", err)
	}
	pool, poolErr := m.Pooling(pool)
	if poolErr != nil && o.Pooling != "" {
		return nil, fmt.Errorf("engine: --pooling %s: %w", o.Pooling, poolErr)
	}
	run, err := m.NewRunner(o.Threads)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Engine{m: m, tok: tok, tmpl: tmpl, o: o, nCtx: n, eogs: tok.EOGs(), runner: run, pool: pool, poolErr: poolErr,
		embedMax: m.HP.KVCacheBytes(max(n, o.BatchSize), 1, o.CacheTypes),
		wake:     make(chan struct{}, 1), loopDone: make(chan struct{})}
	if o.CacheRAMMiB != 0 {
		e.pcache = &promptCache{limit: int64(max(0, o.CacheRAMMiB)) << 20, limitTokens: n * o.Parallel, modelID: o.ModelID}
	}
	e.smodl = sample.Model{NVocab: m.HP.NVocab, SuppressTokens: o.SuppressTokens, Vocab: vocabAdapter{tok},
		Grammar: grammar.NewVocab(tok)}
	for i := range o.Parallel {
		e.slots = append(e.slots, &slot{id: i})
	}
	go e.loop()
	return e, nil
}

// Workers is the number of matmul workers the engine runs (Options.Threads,
// whatever the number of slots).
func (e *Engine) Workers() int { return e.runner.Workers() }

// vocabAdapter gives DRY's sequence-breaker preprocessing the tokenizer
// (sample.Vocab: a token's text as llama_vocab::detokenize({id}, false, true),
// tokenization without special tokens).
type vocabAdapter struct{ t tokenizer.Tokenizer }

func (v vocabAdapter) TokenText(id int32) string {
	return string(v.t.Detokenize([]int32{id}, false, true))
}
func (v vocabAdapter) Tokenize(s string) []int32 { return v.t.Tokenize(s, false, false) }

// Close stops the scheduler and the workers. Generate calls in flight
// fail with ErrClosed (their jobs are dropped); later calls fail with
// ErrClosed. Closing twice is harmless.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	for _, w := range e.waiters {
		close(w.ch)
	}
	e.waiters = nil
	e.mu.Unlock()
	e.signal()
	<-e.loopDone
	e.runner.Close()
	return nil
}

// NCtx is the context size of every slot, in tokens (llama-server's n_ctx
// per slot, /props' default_generation_settings.n_ctx).
func (e *Engine) NCtx() int { return e.nCtx }

// Model returns the engine's model.
func (e *Engine) Model() *model.Model { return e.m }

// Tokenizer returns the engine's tokenizer.
func (e *Engine) Tokenizer() tokenizer.Tokenizer { return e.tok }

// Template returns the chat template given to New (nil if none).
func (e *Engine) Template() *chat.Template { return e.tmpl }

// SlotInfo describes one slot for /slots, /props, /api/ps and /metrics.
type SlotInfo struct {
	ID       int       // slot id (id_slot)
	Busy     bool      // is_processing
	NPast    int       // tokens held in the slot's KV cache (n_past / n_tokens)
	LastUsed time.Time // when the slot last finished a request; zero if never
	KVBytes  uint64    // memory of the slot's KV cache
	// Task is the request the slot runs or ran last (nil: none yet), as
	// server_slot::to_json reports its task.
	Task *SlotTask
}

// SlotTask is a slot's current or last request as GET /slots reports it
// (server_slot::to_json).
type SlotTask struct {
	ID                int64         // id_task: the engine's count of requests
	Sampling          sample.Params // params
	NPredict          int           // n_predict
	IgnoreEOS         bool
	PostSamplingProbs bool
	PromptTokens      int    // n_prompt_tokens
	PromptProcessed   int    // n_prompt_tokens_processed
	PromptCached      int    // n_prompt_tokens_cache
	Decoded           int    // next_token.n_decoded
	HasNext           bool   // next_token.has_next_token: still generating
	Prompt            string // the prompt's tokens detokenized, special tokens rendered
	Generated         string // the text generated so far
}

// Slots reports every slot's state, in id order.
func (e *Engine) Slots() []SlotInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]SlotInfo, len(e.slots))
	for i, s := range e.slots {
		out[i] = SlotInfo{ID: s.id, Busy: s.busy, NPast: len(s.tokens), LastUsed: s.usedAt, KVBytes: s.kvBytes}
		if t := s.task; t != nil {
			c := t.SlotTask
			c.Prompt = string(e.tok.Detokenize(t.prompt, false, true))
			c.Generated = string(t.gen)
			out[i].Task = &c
		}
	}
	return out
}

// slotTask is a slot's request as Slots reports it (under Engine.mu).
type slotTask struct {
	SlotTask
	prompt []int32
	gen    []byte
}

// QueueLen is the number of requests waiting for a slot.
func (e *Engine) QueueLen() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.waiters)
}

// commonPrefix is server_tokens::get_common_prefix for text tokens.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// pick chooses a free slot for prompt as get_available_slot does, or nil;
// lru says llama-server updates the prompt cache for it (update_cache): the
// slot was chosen by least-recent use, or it was named (want) or chosen by
// prompt similarity and keeps under half of its cached tokens (f_keep <
// 0.5). want >= 0 restricts the choice to that slot. The caller holds e.mu.
func (e *Engine) pick(prompt []int32, want int) (ret *slot, lru bool) {
	if want >= 0 {
		ret = e.slots[want]
		if ret.busy {
			return nil, false
		}
	}
	best := float32(0)
	for _, s := range e.slots {
		if (want >= 0 && s != ret) || s.busy || len(s.tokens) == 0 {
			continue
		}
		sim := float32(commonPrefix(s.tokens, prompt)) / float32(len(prompt))
		if sim > best && sim > SlotPromptSimilarity {
			best, ret = sim, s
		}
	}
	if ret != nil {
		// f_keep, as get_available_slot computes it (0/0 for an empty
		// slot: NaN, no update).
		keep := best * float32(len(prompt)) / float32(len(ret.tokens))
		return ret, keep < 0.5
	}
	var tLast int64 = -1
	for _, s := range e.slots {
		if s.busy {
			continue
		}
		if ret == nil || s.lastUsed <= tLast {
			tLast, ret = s.lastUsed, s
		}
	}
	return ret, ret != nil
}

// acquire waits for a slot for prompt (ErrQueueFull, ErrClosed, ctx.Err()).
// A slot action (save, restore, erase: action set) waits for its slot
// without the queue's bound, as llama-server defers such a task until the
// slot is free.
func (e *Engine) acquire(ctx context.Context, prompt []int32, want int, action bool) (*slot, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	w := &waiter{prompt: prompt, want: want, action: action, ch: make(chan *slot, 1)}
	e.waiters = append(e.waiters, w)
	e.dispatch()
	queued := 0
	for _, x := range e.waiters {
		if !x.action {
			queued++
		}
	}
	if !action && queued > e.o.QueueSize && e.waiters[len(e.waiters)-1] == w {
		e.waiters = e.waiters[:len(e.waiters)-1]
		e.mu.Unlock()
		return nil, ErrQueueFull
	}
	e.mu.Unlock()
	select {
	case s, ok := <-w.ch:
		if !ok {
			return nil, ErrClosed
		}
		return s, nil
	case <-ctx.Done():
		e.mu.Lock()
		for i, x := range e.waiters {
			if x == w {
				e.waiters = append(e.waiters[:i], e.waiters[i+1:]...)
				break
			}
		}
		e.mu.Unlock()
		// A slot may have been handed over just before the removal.
		select {
		case s, ok := <-w.ch:
			if ok && s != nil {
				e.release(s)
			}
		default:
		}
		return nil, ctx.Err()
	}
}

// release frees s and hands free slots to the waiters in arrival order
// (llama-server retries its deferred tasks in order when a slot frees).
func (e *Engine) release(s *slot) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clock++
	s.lastUsed = e.clock
	s.usedAt = time.Now()
	s.busy = false
	s.awaiting = time.Time{}
	e.releases++
	if e.closed {
		return
	}
	e.dispatch()
	e.signal() // the slot may settle
}

// dispatch hands free slots to the waiters in arrival order, each taking
// the slot pick chooses for it (llama-server retries its deferred tasks in
// order). The caller holds e.mu.
func (e *Engine) dispatch() {
	for i := 0; i < len(e.waiters); {
		w := e.waiters[i]
		if t, lru := e.pick(w.prompt, w.want); t != nil {
			t.busy, t.lru = true, lru
			w.ch <- t
			e.waiters = append(e.waiters[:i], e.waiters[i+1:]...)
			continue
		}
		i++
	}
}
