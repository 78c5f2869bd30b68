package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bankml/bankml/chat"
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

// Options configure an Engine (llama-server's flags where they exist).
type Options struct {
	NCtx        int // per slot, in tokens (-c); 0: the model's training context. Resolved by model.ContextSize.
	Threads     int // matmul workers per slot (-t); 0: 1
	AttnThreads int // the reference thread count mirrored by split-KV attention; 0: Threads
	Parallel    int // slots (--parallel / -np); 0: 1
	QueueSize   int // requests allowed to wait for a slot; beyond: ErrQueueFull (the server's 429); 0: none wait

	// SuppressTokens are the model's tokenizer.ggml.suppress_tokens, banned in every chain as llama.cpp
	// bans them (read them with sample.SuppressTokens(f, m.HP.NVocab)); nil for a model without.
	SuppressTokens []int32

	// ServerPrefixReuse makes cache_prompt reuse every token llama-server
	// reuses (model.ReusablePrefix) instead of only the prefix computed in
	// the micro-batches a fresh evaluation of the new prompt uses. Answers
	// then depend on what the slot ran before, as llama-server's do (see
	// the package doc); off by default.
	ServerPrefixReuse bool
}

// Engine serves completions over Parallel slots of one model. Its methods
// are safe for concurrent use.
type Engine struct {
	m     *model.Model
	tok   tokenizer.Tokenizer
	tmpl  *chat.Template
	o     Options
	nCtx  int
	smodl sample.Model
	eogs  []int32

	mu      sync.Mutex
	slots   []*slot
	waiters []*waiter
	closed  bool
	clock   int64 // logical time of slot use, for LRU
}

// slot is one llama-server slot: a context and its bookkeeping.
type slot struct {
	id       int
	ctx      *model.Context // nil until first use
	busy     bool
	lastUsed int64     // Engine.clock at the last release; 0: never used
	usedAt   time.Time // wall time of the last release
	tokens   []int32   // cached tokens (ctx.Tokens()) as of the last release, for slot choice
	// aligned is how many leading cached positions (a multiple of
	// model.NUbatch) were computed in full micro-batches starting at
	// multiples of model.NUbatch: the ones a fresh evaluation computes alike.
	aligned int
}

// waiter is a request waiting for a slot.
type waiter struct {
	prompt []int32
	want   int // requested slot id or -1
	ch     chan *slot
}

// New makes an engine over a loaded model, its tokenizer and (optionally;
// nil for completion-only use) its chat template. It loads nothing itself and
// creates the Parallel slots' contexts lazily (each a *model.Context with its
// own KV cache and matmul pool). The context size per slot is
// m.ContextSize(o.NCtx) (llama-server's rule). Errors: negative options,
// a tokenizer whose vocabulary size differs from the model's.
func New(m *model.Model, tok tokenizer.Tokenizer, tmpl *chat.Template, o Options) (*Engine, error) {
	if m == nil || tok == nil {
		return nil, errors.New("engine: New needs a model and its tokenizer")
	}
	if o.NCtx < 0 || o.Threads < 0 || o.AttnThreads < 0 || o.Parallel < 0 || o.QueueSize < 0 {
		return nil, fmt.Errorf("engine: negative option in %+v", o)
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
	n, _, err := m.ContextSize(o.NCtx)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Engine{m: m, tok: tok, tmpl: tmpl, o: o, nCtx: n, eogs: tok.EOGs()}
	e.smodl = sample.Model{NVocab: m.HP.NVocab, SuppressTokens: o.SuppressTokens, Vocab: vocabAdapter{tok},
		Grammar: grammar.NewVocab(tok)}
	for i := range o.Parallel {
		e.slots = append(e.slots, &slot{id: i})
	}
	return e, nil
}

// vocabAdapter gives DRY's sequence-breaker preprocessing the tokenizer
// (sample.Vocab: a token's text as llama_vocab::detokenize({id}, false, true),
// tokenization without special tokens).
type vocabAdapter struct{ t tokenizer.Tokenizer }

func (v vocabAdapter) TokenText(id int32) string {
	return string(v.t.Detokenize([]int32{id}, false, true))
}
func (v vocabAdapter) Tokenize(s string) []int32 { return v.t.Tokenize(s, false, false) }

// Close stops every slot's workers. Generate calls in flight must have
// returned; later calls fail with ErrClosed. Closing twice is harmless.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for _, s := range e.slots {
		if s.ctx != nil && !s.busy {
			s.ctx.Close()
			s.ctx = nil
		}
	}
	for _, w := range e.waiters {
		close(w.ch)
	}
	e.waiters = nil
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
}

// Slots reports every slot's state, in id order.
func (e *Engine) Slots() []SlotInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]SlotInfo, len(e.slots))
	for i, s := range e.slots {
		out[i] = SlotInfo{ID: s.id, Busy: s.busy, NPast: len(s.tokens), LastUsed: s.usedAt}
		if s.ctx != nil && !s.busy {
			out[i].KVBytes = s.ctx.KVBytes()
		}
	}
	return out
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

// pick chooses a free slot for prompt as get_available_slot does, or nil.
// want >= 0 restricts the choice to that slot. The caller holds e.mu.
func (e *Engine) pick(prompt []int32, want int) *slot {
	if want >= 0 {
		if s := e.slots[want]; !s.busy {
			return s
		}
		return nil
	}
	var ret *slot
	best := float32(0)
	for _, s := range e.slots {
		if s.busy || len(s.tokens) == 0 {
			continue
		}
		sim := float32(commonPrefix(s.tokens, prompt)) / float32(len(prompt))
		if sim > best && sim > SlotPromptSimilarity {
			best, ret = sim, s
		}
	}
	if ret != nil {
		return ret
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
	return ret
}

// acquire waits for a slot for prompt (ErrQueueFull, ErrClosed, ctx.Err()).
func (e *Engine) acquire(ctx context.Context, prompt []int32, want int) (*slot, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	w := &waiter{prompt: prompt, want: want, ch: make(chan *slot, 1)}
	e.waiters = append(e.waiters, w)
	e.dispatch()
	if len(e.waiters) > e.o.QueueSize && e.waiters[len(e.waiters)-1] == w {
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
	if s.ctx != nil {
		s.tokens = s.ctx.Tokens()
	}
	e.clock++
	s.lastUsed = e.clock
	s.usedAt = time.Now()
	s.busy = false
	if e.closed {
		if s.ctx != nil {
			s.ctx.Close()
			s.ctx = nil
		}
		return
	}
	e.dispatch()
}

// dispatch hands free slots to the waiters in arrival order, each taking
// the slot pick chooses for it (llama-server retries its deferred tasks in
// order). The caller holds e.mu.
func (e *Engine) dispatch() {
	for i := 0; i < len(e.waiters); {
		w := e.waiters[i]
		if t := e.pick(w.prompt, w.want); t != nil {
			t.busy = true
			w.ch <- t
			e.waiters = append(e.waiters[:i], e.waiters[i+1:]...)
			continue
		}
		i++
	}
}

// context returns s's model context, creating it on first use.
func (e *Engine) context(s *slot) (*model.Context, error) {
	if s.ctx == nil {
		c, err := e.m.NewContext(e.nCtx, e.o.Threads)
		if err != nil {
			return nil, fmt.Errorf("engine: slot %d: %w", s.id, err)
		}
		c.SetAttnThreads(e.o.AttnThreads)
		s.ctx = c
	}
	return s.ctx, nil
}
