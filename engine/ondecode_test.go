package engine

import (
	"context"
	"sync"
	"testing"
	"time"
)

// decodeLog records Options.OnDecode's calls.
type decodeLog struct {
	mu    sync.Mutex
	busy  []int // the passes' busy slots
	stats []DecodeStats
}

func (l *decodeLog) add(st DecodeStats) {
	l.mu.Lock()
	if st.Decoded {
		l.busy = append(l.busy, st.BusySlots)
	}
	l.stats = append(l.stats, st)
	l.mu.Unlock()
}

func (l *decodeLog) calls() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.busy...)
}

// sum is the calls' prompt counts added up, and the largest MaxTokens.
func (l *decodeLog) sum() (s DecodeStats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range l.stats {
		s.PromptCached += st.PromptCached
		s.PromptTokens += st.PromptTokens
		s.PromptTime += st.PromptTime
		s.MaxTokens = max(s.MaxTokens, st.MaxTokens)
		if st.PromptTokens > 0 && st.PromptTime <= 0 {
			s.Decoded = true // a pass over prompt tokens without a time: flagged to the test
		}
	}
	return s
}

func (l *decodeLog) reset() {
	l.mu.Lock()
	l.busy, l.stats = nil, nil
	l.mu.Unlock()
}

// TestOnDecode checks the counts llama-server's metrics_post_decode takes after each llama_decode
// (tools/server/server-context.cpp: n_decode++, n_busy_slots += the slots whose is_processing() holds): a
// request alone with a short prompt decodes its prompt once and each sampled token but the last (update_slots
// samples the last without decoding it), one busy slot each time, and the settling passes after it are not
// counted; three requests held together on three slots make passes over three busy slots.
func TestOnDecode(t *testing.T) {
	tm := stories(t)
	const nPredict = 8
	cases := []struct {
		name     string
		parallel int
		requests int
		check    func(t *testing.T, busy []int)
	}{
		{"one request alone decodes its prompt once and every sampled token but the last, over one busy slot", 1, 1,
			func(t *testing.T, busy []int) {
				if len(busy) != nPredict {
					t.Errorf("%d decodes, want %d (1 prompt pass + %d token passes)", len(busy), nPredict, nPredict-1)
				}
				for i, b := range busy {
					if b != 1 {
						t.Errorf("decode %d: %d busy slots, want 1", i, b)
					}
				}
			}},
		{"three requests held together on three slots share passes over three busy slots", 3, 3,
			func(t *testing.T, busy []int) {
				sum, three := 0, 0
				for i, b := range busy {
					if b < 1 || b > 3 {
						t.Errorf("decode %d: %d busy slots, want 1 to 3", i, b)
					}
					sum += b
					if b == 3 {
						three++
					}
				}
				// After the barrier every request still has nPredict-1 tokens to decode, all three slots busy.
				if len(busy) == 0 || float64(sum)/float64(len(busy)) <= 1 || three < nPredict-2 {
					t.Errorf("busy slots per decode %v: want an average above 1 and at least %d passes over 3", busy, nPredict-2)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log decodeLog
			e := newEngine(t, tm, Options{NCtx: 256, Parallel: c.parallel, OnDecode: log.add})
			var first sync.WaitGroup // every request has its first token: all slots are busy together
			first.Add(c.requests)
			var wg sync.WaitGroup
			errs := make([]error, c.requests)
			for i := range c.requests {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := Request{Prompt: Prompt{Text: "Once upon a time"}, Sampling: greedyParams(), NPredict: nPredict, IgnoreEOS: true, Slot: -1}
					n := 0
					res, err := e.Generate(context.Background(), req, func(Token) error {
						if n++; n == 1 {
							first.Done()
							first.Wait()
						}
						return nil
					})
					if err == nil && len(res.Tokens) != nPredict {
						t.Errorf("request %d: %d tokens, want %d", i, len(res.Tokens), nPredict)
					}
					errs[i] = err
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
			}
			time.Sleep(50 * time.Millisecond) // idle slots settle meanwhile: not counted
			c.check(t, log.calls())
		})
	}
}

// TestOnDecodePromptCounts checks the prompt counts llama-server's update_slots takes when a prompt is
// evaluated (tools/server/server-context.cpp): add_prompt_cached(n_past) when the prompt starts, add_prompt of
// the batch's prompt tokens (is_prompt) with the decode's time after each llama_decode, an embedding input's
// tokens included; and n_tokens_max, the largest slot.prompt.n_tokens() after a decode: the prompt and every
// sampled token but the last, which is never decoded. The counts do not wait for the answer: a request
// cancelled after its first token has counted its whole prompt.
func TestOnDecodePromptCounts(t *testing.T) {
	tm := stories(t)
	const text, nPredict = "Once upon a time there was a little girl named Lily", 6
	cases := []struct {
		name      string
		repeat    bool // the same prompt again on the same slot, cache_prompt
		cancel    bool // the client goes away at the first token
		embedding bool
	}{
		{name: "a fresh prompt counts every token evaluated and none cached, and the longest sequence is the prompt and every sampled token but the last"},
		{name: "a prompt reusing the slot's cache counts its kept prefix as cached and only the rest as evaluated", repeat: true},
		{name: "a request cancelled at its first token has counted its whole prompt", cancel: true},
		{name: "an embedding input counts its tokens as prompt tokens evaluated", embedding: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log decodeLog
			e := newEngine(t, tm, Options{NCtx: 256, Parallel: 1, OnDecode: log.add, NoSettle: true})
			prompt, err := e.Tokenize(Prompt{Text: text})
			if err != nil {
				t.Fatal(err)
			}
			if c.embedding {
				if _, err := e.Embed(context.Background(), [][]int32{prompt}); err != nil {
					t.Fatal(err)
				}
				if s := log.sum(); s.PromptTokens != len(prompt) || s.PromptCached != 0 || s.Decoded {
					t.Errorf("counted %+v; want %d prompt tokens, with a time, none cached", s, len(prompt))
				}
				return
			}
			req := Request{Prompt: Prompt{Text: text}, Sampling: greedyParams(), NPredict: nPredict, IgnoreEOS: true, Slot: 0, CachePrompt: true}
			if c.repeat {
				if _, err := e.Generate(context.Background(), req, nil); err != nil {
					t.Fatal(err)
				}
				log.reset()
			}
			var onToken func(Token) error
			if c.cancel {
				onToken = func(Token) error { return context.Canceled }
			}
			res, err := e.Generate(context.Background(), req, onToken)
			if (err != nil) != c.cancel {
				t.Fatalf("Generate: %v", err)
			}
			s := log.sum()
			if s.PromptCached != res.CachedTokens || s.PromptTokens != len(prompt)-res.CachedTokens || s.Decoded || s.PromptTime <= 0 {
				t.Errorf("counted %+v; want %d cached and %d evaluated with a time", s, res.CachedTokens, len(prompt)-res.CachedTokens)
			}
			if c.repeat && res.CachedTokens == 0 {
				t.Errorf("the repeated prompt kept no prefix")
			}
			if want := len(prompt) + len(res.Tokens) - 1; !c.repeat && s.MaxTokens != want {
				t.Errorf("longest sequence %d, want %d (%d prompt tokens, %d sampled)", s.MaxTokens, want, len(prompt), len(res.Tokens))
			}
		})
	}
}

// TestOnDecodeMaxTokensCountsIdleSlots: metrics_post_decode's n_tokens_max is the most tokens any slot holds
// (tools/server/server-context.cpp: the max of slot.prompt.n_tokens() over every slot), so a short request on
// one slot after a long answer on another reports the long one's tokens.
func TestOnDecodeMaxTokensCountsIdleSlots(t *testing.T) {
	tm := stories(t)
	var log decodeLog
	e := newEngine(t, tm, Options{NCtx: 256, Parallel: 2, OnDecode: log.add})
	long, err := e.Generate(context.Background(), Request{Prompt: Prompt{Text: "Once upon a time"}, Sampling: greedyParams(),
		NPredict: 120, IgnoreEOS: true, CachePrompt: true, Slot: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitQuiet(t, e)
	log.reset()
	if _, err := e.Generate(context.Background(), Request{Prompt: Prompt{Text: "Hi"}, Sampling: greedyParams(),
		NPredict: 2, CachePrompt: true, Slot: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if got := log.sum().MaxTokens; got != long.NTokensCached {
		t.Fatalf("n_tokens_max %d during a short request on slot 1; slot 0 holds %d (tokens_cached)", got, long.NTokensCached)
	}
}
