package engine

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/bankml/bankml/model"
)

// reuseMode is how a prompt job keeps the slot's cache (Request.CachePrompt
// and Options.CacheReuse).
type reuseMode uint8

const (
	reuseNone   reuseMode = iota // evaluate the whole prompt
	reuseExact                   // model.Context.ExactPrefix: the answer equals a fresh evaluation's
	reuseServer                  // model.ReusablePrefix: llama-server's rule, micro-batches from the kept prefix
)

// job is one piece of work a request hands the scheduler: a prompt to
// evaluate after the slot's reusable prefix, or a sampled token to decode.
// Fields below done are the scheduler's.
type job struct {
	s      *slot
	prompt []int32 // a prompt job; nil for a decode job
	reuse  reuseMode
	// cacheRAM: a prompt job on a slot picked by least-recent use, or one
	// that keeps under half of the slot's tokens (Engine.pick), which
	// updates the prompt cache (--cache-ram) first.
	cacheRAM bool
	tok      int32 // a decode job's token
	// act, when set, makes the job a slot action (save, restore, erase)
	// run on the slot's context between steps.
	act func(c *model.Context) error
	// embd, when set, makes the job an embedding input (Embed): evaluated
	// in ectx, a fresh context of its own, with every row an output.
	embd      []int32
	ectx      *model.Context
	ebytes    uint64 // ectx's share of Engine.embedLive (released by dropEmbed)
	done      chan jobResult
	cancelled atomic.Bool

	started     bool
	pos, origin int // the next prompt position; the position its micro-batches start from
	kept        int
}

// jobResult is what a job gives back.
type jobResult struct {
	logits []float32 // the prompt's last row, or the decoded token's
	kept   int       // a prompt job: positions kept from the cache (cache_n)
	nPast  int       // positions the slot's cache holds after the job
	embd   Embedding // an embedding job's result
	err    error
}

// stragglerWait bounds how long a step waits for the requests that got
// logits from the previous step to hand in their next token (sampling,
// onToken) before it runs without them: they join the next step. Which
// step a row runs in changes no bit.
const stragglerWait = 10 * time.Millisecond

// settleRows bounds the rows of one settling step (see settle), so that a
// request arriving meanwhile waits for at most that much work.
const settleRows = 64

// submit hands j to the scheduler and waits for its result, ctx's
// cancellation (then the job is dropped or its result discarded:
// ctx.Err()) or the engine's closing (ErrClosed).
func (e *Engine) submit(ctx context.Context, j *job) (jobResult, error) {
	j.done = make(chan jobResult, 1)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return jobResult{}, ErrClosed
	}
	if j.s != nil {
		j.s.awaiting = time.Time{}
	}
	e.queue = append(e.queue, j)
	e.mu.Unlock()
	e.signal()
	select {
	case r := <-j.done:
		return r, r.err
	case <-ctx.Done():
		j.cancelled.Store(true)
		e.signal()
		return jobResult{}, ctx.Err()
	}
}

// signal wakes the scheduler.
func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// loop is the scheduler, llama-server's update_slots: each step one
// forward pass (model.Runner.Decode) over the next token of every
// generating request and the prompt rows of requests in prompt processing,
// at most Options.BatchSize prompt rows per step taken in arrival order,
// every row with the arithmetic of its request's fresh evaluation; then
// each finished job's logits go back to its request, which samples with
// its own chain. When no request has work, idle slots settle (settle). The
// loop owns every slot's model.Context.
func (e *Engine) loop() {
	defer close(e.loopDone)
	for {
		e.mu.Lock()
		if e.closed {
			q := e.queue
			e.queue = nil
			e.mu.Unlock()
			for _, j := range q {
				j.done <- jobResult{err: ErrClosed}
			}
			return
		}
		live := e.queue[:0]
		for _, j := range e.queue {
			if !j.cancelled.Load() {
				live = append(live, j)
			} else {
				e.dropEmbed(j)
			}
		}
		clear(e.queue[len(live):])
		e.queue = live
		jobs := append([]*job(nil), live...)
		// Wait for the requests still sampling from the last step, a
		// little, when others have work.
		var wait time.Duration
		for _, s := range e.slots {
			if !s.awaiting.IsZero() {
				if d := stragglerWait - time.Since(s.awaiting); d > wait {
					wait = d
				}
			}
		}
		e.mu.Unlock()
		if len(jobs) == 0 || wait > 0 {
			if len(jobs) == 0 && wait <= 0 && e.settle() {
				continue
			}
			if wait <= 0 {
				<-e.wake
				continue
			}
			timer := time.NewTimer(wait)
			select {
			case <-e.wake:
				timer.Stop()
			case <-timer.C:
				e.mu.Lock()
				for _, s := range e.slots {
					s.awaiting = time.Time{} // late: the next step runs without them
				}
				e.mu.Unlock()
			}
			continue
		}
		if jobs = e.actions(jobs); len(jobs) > 0 {
			e.step(jobs)
		}
	}
}

// actions runs the slot actions among jobs and returns the others.
func (e *Engine) actions(jobs []*job) []*job {
	rest := jobs[:0]
	var done []*job
	var errs []error
	for _, j := range jobs {
		if j.act == nil {
			rest = append(rest, j)
			continue
		}
		done, errs = append(done, j), append(errs, e.runAction(j))
	}
	if len(done) == 0 {
		return rest
	}
	e.mu.Lock()
	q := e.queue[:0]
	for _, j := range e.queue {
		if !slices.Contains(done, j) {
			q = append(q, j)
		}
	}
	clear(e.queue[len(q):])
	e.queue = q
	e.snapshot()
	e.mu.Unlock()
	for i, j := range done {
		j.done <- jobResult{err: errs[i]}
	}
	return rest
}

// step runs one forward pass over jobs (decode jobs first, then prompt
// rows up to the batch size) and hands back the finished jobs' results.
func (e *Engine) step(jobs []*job) {
	var spans []model.Span
	var owners []*job
	var failed []*job
	var failErr []error
	var stats DecodeStats // Options.OnDecode's
	budget := e.o.BatchSize
	for _, j := range jobs {
		if j.prompt != nil || j.embd != nil {
			continue
		}
		c := j.s.ctx
		if c == nil || c.NPast()+1 > c.NCtx() {
			failed, failErr = append(failed, j), append(failErr, fmt.Errorf("engine: slot %d: no cell for the next token: %w", j.s.id, ErrContextFull))
			continue
		}
		spans = append(spans, model.Span{Ctx: c, Tokens: []int32{j.tok}, UBatch: 1, Outputs: 1})
		owners = append(owners, j)
	}
	for _, j := range jobs {
		if j.prompt == nil || budget <= 0 {
			continue
		}
		if !j.started {
			if err := e.startPrompt(j); err != nil {
				failed, failErr = append(failed, j), append(failErr, err)
				continue
			}
			stats.PromptCached += j.kept
		}
		end := min(len(j.prompt), j.pos+budget)
		// Cut inside the prompt at a multiple of the attention tile when
		// possible, so that the tiled kernel's masked cells of a row's last
		// tile hold what the fresh evaluation's micro-batch holds there.
		if a := end / 64 * 64; end < len(j.prompt) && a > j.pos {
			end = a
		}
		for _, sp := range model.PromptSpans(j.s.ctx, j.prompt, j.pos, end, j.origin, true) {
			spans = append(spans, sp)
			owners = append(owners, j)
		}
		budget -= end - j.pos
		j.pos = end
	}
	spans, owners, failed, failErr = e.embedSpans(jobs, budget, spans, owners, failed, failErr)
	var err error
	if len(spans) > 0 {
		t := time.Now()
		err = e.runner.Decode(spans)
		if err == nil {
			// metrics_post_decode: the batch's prompt tokens (an embedding input's too) and the sequences'
			// lengths after the pass.
			stats.Decoded = true
			for i, sp := range spans {
				if sp.Embed || owners[i].prompt != nil {
					stats.PromptTokens += len(sp.Tokens)
				}
				stats.MaxTokens = max(stats.MaxTokens, sp.Ctx.NPast())
			}
			if stats.PromptTokens > 0 {
				stats.PromptTime = time.Since(t)
			}
		}
	}
	type delivery struct {
		j *job
		r jobResult
	}
	var out []delivery
	for i, j := range failed {
		out = append(out, delivery{j, jobResult{err: failErr[i]}})
	}
	for i, sp := range spans {
		j := owners[i]
		switch {
		case err != nil:
			if i == 0 || owners[i-1] != j {
				out = append(out, delivery{j, jobResult{err: fmt.Errorf("engine: %w", err)}})
			}
		case sp.Embed:
			if r, done := e.embedded(j, sp); done {
				out = append(out, delivery{j, r})
			}
		case sp.Logits != nil:
			out = append(out, delivery{j, jobResult{logits: sp.Logits, kept: j.kept, nPast: j.s.ctx.NPast()}})
		}
	}
	e.mu.Lock()
	if len(spans) > 0 {
		seqs := map[*model.Context]bool{}
		for _, sp := range spans {
			seqs[sp.Ctx] = true
		}
		e.stats.steps++
		e.stats.rows += len(spans)
		if len(seqs) > 1 {
			e.stats.shared++
		}
		e.stats.maxSeqs = max(e.stats.maxSeqs, len(seqs))
	}
	if stats.Decoded && e.o.OnDecode != nil {
		for _, s := range e.slots {
			if s.busy {
				stats.BusySlots++
			}
		}
		for i, sp := range spans {
			if sp.Embed && (i == 0 || owners[i-1] != owners[i]) {
				stats.BusySlots++
			}
		}
	}
	e.stats.maxEmbed = max(e.stats.maxEmbed, e.embedLive)
	done := map[*job]bool{}
	for _, d := range out {
		done[d.j] = true
		e.dropEmbed(d.j)
	}
	q := e.queue[:0]
	for _, j := range e.queue {
		if !done[j] {
			q = append(q, j)
		}
	}
	clear(e.queue[len(q):])
	e.queue = q
	now := time.Now()
	for _, d := range out {
		if d.r.err == nil && !d.j.cancelled.Load() && d.j.s != nil {
			d.j.s.awaiting = now
		}
	}
	e.snapshot()
	if stats.Decoded {
		// metrics_post_decode's n_tokens_max is over every slot, idle ones too.
		for _, s := range e.slots {
			stats.MaxTokens = max(stats.MaxTokens, len(s.tokens))
		}
	}
	e.mu.Unlock()
	if e.o.OnDecode != nil && (stats.Decoded || stats.PromptCached > 0) {
		e.o.OnDecode(stats)
	}
	for _, d := range out {
		d.j.done <- d.r
	}
}

// dropEmbed releases an embedding job's context (leaving the queue: done,
// failed or cancelled) from Engine.embedLive.
func (e *Engine) dropEmbed(j *job) {
	e.embedLive -= j.ebytes
	j.ebytes, j.ectx = 0, nil
}

// ensureContext makes the slot's context on its first use (the runner's
// NewContext of the slot's size, attention over AttnThreads).
func (e *Engine) ensureContext(s *slot) error {
	if s.ctx != nil {
		return nil
	}
	c, err := e.runner.NewContextTypes(e.nCtx, e.o.CacheTypes)
	if err != nil {
		return fmt.Errorf("engine: slot %d: %w", s.id, err)
	}
	c.SetAttnThreads(e.o.AttnThreads)
	s.ctx = c
	return nil
}

// startPrompt applies the job's reuse rule to its slot's cache (creating
// the slot's context on first use) and sets where its evaluation starts.
func (e *Engine) startPrompt(j *job) error {
	s := j.s
	if err := e.ensureContext(s); err != nil {
		return err
	}
	c := s.ctx
	s.settle, s.settleOff = nil, false
	if j.cacheRAM {
		// get_available_slot's prompt cache update: the slot's prompt
		// saved, the cached prompt that keeps most of the new one loaded.
		e.pcache.save(c)
		if !e.pcache.load(c, j.prompt) {
			_ = c.Truncate(0)
		}
		e.pcache.update()
	}
	kept := 0
	switch j.reuse {
	case reuseExact:
		kept = c.ExactPrefix(j.prompt)
	case reuseServer:
		kept = model.ReusablePrefix(c.Tokens(), j.prompt)
	}
	if err := c.Truncate(kept); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	j.started, j.kept, j.pos = true, kept, kept
	if j.reuse == reuseServer {
		j.origin = kept
	}
	return nil
}

// settle runs one step of re-evaluating an idle slot's cells in the class
// a fresh evaluation of a longer prompt gives them (model.Context.Unsettled,
// model.SettleSpans): a turn's generated tokens, computed one row at a
// time, become reusable by the conversation's next turn (ExactPrefix). It
// reports whether it ran a step. Only with Options.CacheReuse "exact" and
// not Options.NoSettle.
func (e *Engine) settle() bool {
	e.mu.Lock()
	var s *slot
	for _, x := range e.slots {
		if e.o.NoSettle || e.o.CacheReuse != CacheReuseExact {
			break
		}
		if x.busy || x.ctx == nil || x.settleOff {
			continue
		}
		if x.settle == nil {
			if u := x.ctx.Unsettled(); u < x.ctx.NPast() {
				x.settle = x.ctx.Tokens()[u:]
				_ = x.ctx.Truncate(u)
			}
		}
		if len(x.settle) > 0 {
			s = x
			break
		}
	}
	if s == nil {
		e.quiet = e.releases
		e.mu.Unlock()
		return false
	}
	// The slot stays free: a request that takes it meanwhile waits for this
	// step, then drops the rest (startPrompt).
	c := s.ctx
	n := settleStep(c.NPast(), len(s.settle))
	toks := s.settle[:n]
	e.mu.Unlock()
	err := e.runner.Decode(model.SettleSpans(c, toks, c.NPast()))
	e.mu.Lock()
	if err != nil {
		s.settle, s.settleOff = nil, true // not again until the slot's next request
	} else if s.settle = s.settle[n:]; len(s.settle) == 0 {
		s.settle = nil
	}
	e.snapshot()
	e.mu.Unlock()
	return true
}

// settleStep is how many of the rest tokens still to settle after the
// nPast a slot holds one settling step re-evaluates: at most settleRows,
// ending at a multiple of 64 unless it ends the rest.
func settleStep(nPast, rest int) int {
	n := min(rest, settleRows)
	if a := (nPast + n) / 64 * 64; n < rest && a > nPast {
		n = a - nPast
	}
	return n
}

// snapshot records every slot's cache for slot choice and Slots (the
// tokens a settling slot holds or is about to hold again). The caller
// holds e.mu and is the scheduler.
func (e *Engine) snapshot() {
	for _, s := range e.slots {
		if s.ctx == nil {
			continue
		}
		s.tokens = append(s.ctx.Tokens(), s.settle...)
		s.kvBytes = s.ctx.KVBytes()
	}
}

// stepStats count the scheduler's forward passes (tests and benchmarks).
type stepStats struct {
	steps   int // forward passes of requests' work
	shared  int // of them, passes over more than one slot's rows
	rows    int // spans evaluated
	maxSeqs int // the most slots in one pass
	// maxEmbed: the most KV bytes the embedding inputs' contexts held at
	// the end of a step (Engine.embedLive).
	maxEmbed uint64
}
