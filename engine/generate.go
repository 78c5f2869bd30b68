package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/sample"
)

// Prompt is one of: Tokens (already tokenized, used as given), Segments (a
// chat prompt from chat.Template.Apply) or Text (a raw completion prompt).
// Exactly one must be set.
type Prompt struct {
	Tokens   []int32
	Segments []chat.Segment
	Text     string
}

// Tokenize turns a prompt into tokens as llama-server does:
//
//   - Text: tokenize_mixed(vocab, prompt, add_special = true,
//     parse_special = true), as /completion, /v1/completions and (on the
//     rendered prompt) /v1/chat/completions tokenize;
//   - Segments: when no segment that came from the request (Special false)
//     holds the text of a special token, the same tokens as Text on their
//     concatenation (so exactly llama-server's); otherwise bankml's
//     deliberate difference: each segment tokenized alone (Special ones with
//     parse_special, the others without), BOS and EOS added once as the
//     vocabulary asks, so that a "<|im_end|>" typed in a message stays text;
//   - Tokens: a copy, each id checked against the vocabulary.
//
// An empty result is an error (llama-server refuses an empty prompt).
func (e *Engine) Tokenize(p Prompt) ([]int32, error) {
	n := 0
	if p.Tokens != nil {
		n++
	}
	if p.Segments != nil {
		n++
	}
	if p.Text != "" {
		n++
	}
	if n > 1 {
		return nil, errors.New("engine: a prompt has Tokens, Segments or Text, not several")
	}
	var toks []int32
	switch {
	case p.Tokens != nil:
		for i, t := range p.Tokens {
			if t < 0 || int(t) >= e.tok.NVocab() {
				return nil, fmt.Errorf("engine: prompt token %d is %d, outside the vocabulary of %d", i, t, e.tok.NVocab())
			}
		}
		toks = slices.Clone(p.Tokens)
	case p.Segments != nil:
		toks = e.tokenizeSegments(p.Segments)
	default:
		toks = e.tok.Tokenize(p.Text, true, true)
	}
	if len(toks) == 0 {
		return nil, errors.New("engine: the prompt is empty")
	}
	return toks, nil
}

func (e *Engine) tokenizeSegments(segs []chat.Segment) []int32 {
	var all strings.Builder
	plain := true
	for _, s := range segs {
		all.WriteString(s.Text)
		if !s.Special && plain && !slices.Equal(e.tok.Tokenize(s.Text, false, true), e.tok.Tokenize(s.Text, false, false)) {
			plain = false
		}
	}
	if plain {
		return e.tok.Tokenize(all.String(), true, true)
	}
	var toks []int32
	if e.tok.AddBOS() && e.tok.BOS() != -1 {
		toks = append(toks, e.tok.BOS())
	}
	for _, s := range segs {
		toks = append(toks, e.tok.Tokenize(s.Text, false, s.Special)...)
	}
	if e.tok.AddEOS() && e.tok.EOS() != -1 {
		toks = append(toks, e.tok.EOS())
	}
	return toks
}

// Request is one completion.
type Request struct {
	Prompt Prompt
	// Sampling are the sampler settings, already limited by the caller
	// (sample.Params.ApplyServerLimits) with the model's defaults applied.
	Sampling sample.Params
	// PostSamplingProbs is llama-server's post_sampling_probs: Token.Probs
	// from the chain's candidates instead of the raw logits' softmax.
	PostSamplingProbs bool
	// NPredict is llama-server's n_predict (max_tokens): -1 until an
	// end-of-generation token or the context is full; n >= 0 stops after n
	// tokens with "length" (0 samples one token, as in llama-server).
	NPredict int
	// Stop are the stop strings (antiprompt): the text is cut before the
	// first one found, and text that may begin one is held back. An empty
	// stop string is an error.
	Stop []string
	// IgnoreEOS bans every end-of-generation token (a -Inf logit bias after
	// Sampling.LogitBias, as llama-server's ignore_eos appends its
	// logit_bias_eog); the caller must not add them itself.
	IgnoreEOS bool
	// CachePrompt is llama-server's cache_prompt (its default is true):
	// reuse the slot's cached common prefix by Options.CacheReuse's rule
	// (by default as far as the answer stays the fresh evaluation's; all of
	// llama-server's with CacheReuseServer). False evaluates the whole
	// prompt.
	CachePrompt bool
	// Slot is id_slot: -1 chooses as llama-server does (longest common
	// prefix above SlotPromptSimilarity, else least recently used);
	// 0..Parallel-1 waits for that slot.
	Slot int
}

// Token is one generated token as the caller may stream it.
type Token struct {
	ID int32
	// Slot is the id of the slot generating (llama-server's id_slot of a
	// streamed chunk).
	Slot int
	// Text is the text released with this token (process_token's
	// text_to_send): "" while a stop-string prefix is pending; the text
	// before the stop string for the token that completes one.
	Text string
	// Pending is set while the generated text ends inside a UTF-8 sequence:
	// llama-server then neither streams a chunk for the token nor keeps its
	// probabilities (send_partial_response and add_token are skipped).
	Pending bool
	// Probs are the token's probabilities when Sampling.NProbs > 0.
	Probs *sample.Probs
}

// Timings are llama-server's timings object (server_slot_stats::to_json),
// in milliseconds, plus the time to the first token.
type Timings struct {
	PromptN     int     // prompt_n: prompt tokens evaluated (the prompt less CacheN)
	CacheN      int     // cache_n: prompt tokens taken from the slot's cache
	PredictedN  int     // predicted_n: tokens sampled, EOG included
	PromptMS    float64 // prompt_ms: from the start of prompt processing to the first sampled token
	PredictedMS float64 // predicted_ms: from the first sampled token to the last (at least 1 µs once a token exists)
	TTFTMS      float64 // from Generate's call (queue wait and tokenization included) to the first token
}

// PromptPerSecond is prompt_per_second (0 when unknown).
func (t Timings) PromptPerSecond() float64 {
	if t.PromptMS <= 0 {
		return 0
	}
	return 1e3 / t.PromptMS * float64(t.PromptN)
}

// PredictedSteps is server_slot_stats::n_gen_steps (tools/server/server-common.h): the decode steps
// between the first sampled token and the last, PredictedN-1 (0 when PredictedN <= 1). PredictedMS spans
// exactly these steps.
func (t Timings) PredictedSteps() int { return max(t.PredictedN-1, 0) }

// PredictedPerSecond is predicted_per_second, server_slot_stats::n_gen_tps: 1e3/PredictedMS times
// PredictedSteps (not PredictedN), 0 when PredictedMS is not positive; so 0 for one token or none.
func (t Timings) PredictedPerSecond() float64 {
	if t.PredictedMS <= 0 {
		return 0
	}
	return 1e3 / t.PredictedMS * float64(t.PredictedSteps())
}

// Result is a finished (or stopped) completion.
type Result struct {
	// Text is the answer as llama-server's non-streamed content: the
	// generated text, cut before the stop string that ended it. It can end
	// with text a stream never released (Unsent).
	Text string
	// Unsent is the tail of Text that was held back and never released in
	// a Token (a pending stop-string prefix or an incomplete UTF-8
	// sequence when generation ended otherwise): llama-server's streamed
	// chunks never carry it.
	Unsent string
	// Tokens are the sampled tokens, an end-of-generation token included
	// (completion_tokens as llama-server counts them).
	Tokens []int32
	// Probs are llama-server's probs_output for a non-streamed answer when
	// Sampling.NProbs > 0: one entry per token that was not Pending,
	// less as many trailing entries as the stopping word has tokens.
	Probs []sample.Probs
	// FinishReason is "stop" (an end-of-generation token or a stop string)
	// or "length" (n_predict or the context); "" when Generate failed.
	FinishReason string
	// StoppingWord is the stop string that ended generation, if one did.
	StoppingWord string
	// StopType is llama-server's stop_type (stop_type_to_str): "eos" (an
	// end-of-generation token), "word" (a stop string), "limit" (n_predict
	// or the context), "none" (generation did not end by itself: an error
	// or a cancellation).
	StopType string
	// NTokensCached is llama-server's tokens_cached (slot.prompt.n_tokens()
	// when the answer is sent): the tokens in the slot's KV cache after
	// generation, the prompt and every sampled token but the last (a token
	// is evaluated only when another one is to follow).
	NTokensCached int
	// Truncated is llama-server's truncated: generation stopped because the
	// context was full.
	Truncated bool
	// PromptTokens is the number of prompt tokens (usage.prompt_tokens).
	PromptTokens int
	// CachedTokens are the prompt tokens taken from the slot's cache
	// (timings.cache_n, usage.prompt_tokens_details.cached_tokens).
	CachedTokens int
	// Seed is the seed of the draw (sample.Chain.Seed).
	Seed    uint32
	Timings Timings
	// Slot is the id of the slot that ran the request.
	Slot int
}

// Generate runs one completion. It tokenizes the prompt, refuses one that
// does not fit a slot (a *ContextError, wrapping ErrContextFull), waits for a
// slot (ErrQueueFull when QueueSize requests already wait; ctx.Err() if
// cancelled while waiting), keeps the cached prefix (CachePrompt), evaluates
// the rest, builds a fresh sample.Chain for the request and samples token by
// token, calling onToken (may be nil) for each. An error from onToken, or ctx
// cancelled, stops the generation: the result so far is returned with that
// error (ctx.Err()). Sampling parameters that sample.New refuses give its
// error (a *sample.ParamError). docs/design.md, "Package engine", has
// llama-server's rules.
func (e *Engine) Generate(ctx context.Context, req Request, onToken func(Token) error) (Result, error) {
	t0 := time.Now()
	if e.m.Encoder() {
		return Result{}, fmt.Errorf("engine: %w", ErrEncoder)
	}
	if req.Slot < -1 || req.Slot >= len(e.slots) {
		return Result{}, fmt.Errorf("engine: id_slot %d outside [-1, %d)", req.Slot, len(e.slots))
	}
	if req.NPredict < -1 {
		return Result{}, fmt.Errorf("engine: n_predict %d < -1", req.NPredict)
	}
	prompt, err := e.Tokenize(req.Prompt)
	if err != nil {
		return Result{}, err
	}
	if len(prompt) >= e.nCtx {
		return Result{PromptTokens: len(prompt)}, &ContextError{NPromptTokens: len(prompt), NCtx: e.nCtx}
	}
	sp := req.Sampling
	if req.IgnoreEOS {
		sp.LogitBias = slices.Clone(sp.LogitBias)
		for _, t := range e.eogs {
			sp.LogitBias = append(sp.LogitBias, sample.LogitBias{Token: t, Bias: float32(math.Inf(-1))})
		}
	}
	chain, err := sample.New(sp, e.smodl)
	if err != nil {
		return Result{}, fmt.Errorf("engine: %w", err)
	}
	for _, w := range req.Stop {
		if w == "" {
			return Result{}, errors.New("engine: an empty stop string")
		}
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	s, err := e.acquire(ctx, prompt, req.Slot, false)
	if err != nil {
		return Result{PromptTokens: len(prompt)}, err
	}
	defer e.release(s)
	e.mu.Lock()
	lru := s.lru
	e.tasks++
	s.task = &slotTask{SlotTask: SlotTask{ID: e.tasks, Sampling: req.Sampling, NPredict: req.NPredict, IgnoreEOS: req.IgnoreEOS,
		PostSamplingProbs: req.PostSamplingProbs, PromptTokens: len(prompt), HasNext: true}, prompt: prompt}
	task := s.task
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		task.HasNext = false
		e.mu.Unlock()
	}()
	res := Result{PromptTokens: len(prompt), Slot: s.id, Seed: chain.Seed(), StopType: stopNone.String()}
	err = e.run(ctx, s, prompt, req, chain, onToken, t0, lru, &res)
	if e.o.OnPrediction != nil && len(res.Tokens) > 0 {
		e.o.OnPrediction(res.Timings)
	}
	return res, err
}

// run is Generate on an acquired slot: its prompt and then each sampled
// token go to the scheduler as jobs (submit), which evaluates them beside
// the other slots' work.
func (e *Engine) run(ctx context.Context, s *slot, prompt []int32, req Request, chain *sample.Chain, onToken func(Token) error, t0 time.Time, lru bool, res *Result) error {
	tStart := time.Now()
	mode := reuseNone
	if req.CachePrompt {
		mode = reuseExact
		if e.o.CacheReuse == CacheReuseServer {
			mode = reuseServer
		}
	}
	// The prompt is evaluated in the micro-batches of its fresh evaluation
	// (from position 0; from the kept prefix under CacheReuseServer, as
	// llama-server's n_batch 2048 splits it), over as many steps as the
	// batch size needs; a cancellation drops it between steps.
	r, err := e.submit(ctx, &job{s: s, prompt: prompt, reuse: mode, cacheRAM: lru && e.pcache != nil})
	if err != nil {
		if errors.Is(err, ErrContextFull) || errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("engine: prompt: %w", err)
	}
	kept := r.kept
	e.mu.Lock()
	s.task.PromptCached, s.task.PromptProcessed = kept, len(prompt)-kept
	e.mu.Unlock()
	res.CachedTokens = kept
	res.Timings.CacheN = kept
	res.Timings.PromptN = len(prompt) - kept
	res.NTokensCached = r.nPast
	logits := r.logits
	for _, t := range prompt {
		chain.Accept(t)
	}

	st := stopper{stops: req.Stop}
	nProbs := int(req.Sampling.NProbs)
	var tPrompt, tGen time.Time
	for {
		tok, err := chain.Sample(logits)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		chain.Accept(tok)
		now := time.Now()
		res.Tokens = append(res.Tokens, tok)
		if len(res.Tokens) == 1 {
			tPrompt = now
			res.Timings.PromptMS = ms(tPrompt.Sub(tStart))
			res.Timings.TTFTMS = ms(now.Sub(t0))
		}
		tGen = now
		res.Timings.PredictedN = len(res.Tokens)
		res.Timings.PredictedMS = max(ms(tGen.Sub(tPrompt)), 1e-3)

		out := Token{ID: tok, Slot: s.id}
		if nProbs > 0 {
			p := chain.Probs(tok, logits, nProbs, req.PostSamplingProbs)
			out.Probs = &p
		}
		eog := e.tok.IsEOG(tok)
		// preserved tokens show their text, as llama-server's accept_special_token renders them
		piece := e.tok.TokenToPiece(tok, slices.Contains(req.Sampling.PreservedTokens, tok))
		out.Text, out.Pending = st.add(string(piece), eog)
		e.mu.Lock()
		s.task.Decoded++
		s.task.gen = append(s.task.gen, piece...)
		e.mu.Unlock()
		if !out.Pending && out.Probs != nil {
			res.Probs = append(res.Probs, *out.Probs)
		}
		// process_token's order: a stop string, then the context (no
		// context shift, llama-server's default: stop when the next token
		// would have no cell), the n_predict budget, an EOG token; a later
		// reason overrides an earlier one.
		more, stop := !st.stopped, stopNone
		if st.stopped {
			stop = stopWord
		}
		if res.NTokensCached+1 >= e.nCtx {
			more, stop, res.Truncated = false, stopLimit, true
		}
		if more && req.NPredict != -1 && len(res.Tokens) >= req.NPredict {
			more, stop = false, stopLimit
		}
		if eog {
			more, stop = false, stopEOS
		}
		if onToken != nil {
			if err := onToken(out); err != nil {
				e.finish(res, &st, stopNone)
				return err
			}
		}
		if !more {
			e.finish(res, &st, stop)
			return nil
		}
		if err := ctx.Err(); err != nil {
			e.finish(res, &st, stopNone)
			return err
		}
		r, err := e.submit(ctx, &job{s: s, tok: tok})
		if err != nil {
			e.finish(res, &st, stopNone)
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return err
			}
			return fmt.Errorf("engine: %w", err)
		}
		logits, res.NTokensCached = r.logits, r.nPast
	}
}

// stopType is llama-server's stop_type.
type stopType int

const (
	stopNone  stopType = iota // STOP_TYPE_NONE: still generating (or failed)
	stopEOS                   // STOP_TYPE_EOS: an end-of-generation token
	stopWord                  // STOP_TYPE_WORD: a stop string
	stopLimit                 // STOP_TYPE_LIMIT: n_predict or the context
)

// String is stop_type_to_str's name.
func (t stopType) String() string {
	switch t {
	case stopEOS:
		return "eos"
	case stopWord:
		return "word"
	case stopLimit:
		return "limit"
	}
	return "none"
}

// finishReason is the OpenAI finish_reason llama-server gives a stop type.
func (t stopType) finishReason() string {
	switch t {
	case stopEOS, stopWord:
		return "stop"
	case stopLimit:
		return "length"
	}
	return ""
}

// finish fills the result's text fields once generation has ended.
func (e *Engine) finish(res *Result, st *stopper, stop stopType) {
	res.Text = string(st.text)
	res.Unsent = string(st.text[min(st.sent, len(st.text)):])
	res.StoppingWord = st.word
	res.FinishReason = stop.finishReason()
	res.StopType = stop.String()
	if stop == stopWord && len(res.Probs) > 0 {
		n := min(len(res.Probs), len(e.tok.Tokenize(st.word, false, false)))
		res.Probs = res.Probs[:len(res.Probs)-n]
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
