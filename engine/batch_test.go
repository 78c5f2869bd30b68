package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/sample"
)

// batchRequest is one request of the batching tests and what it must
// answer.
type batchRequest struct {
	req    Request
	prompt []int32
	delay  time.Duration // its arrival after the first
	cancel int           // > 0: cancelled after this many tokens
}

// batchRequests are n requests over prompts of 1 to about 300 tokens
// (one-row, one-chunk and tiled attention; decodes past 256 cells run
// split-KV), greedy and seeded with assorted chains, staggered by 3 ms.
func batchRequests(tm *testModel, n int) []batchRequest {
	words := strings.Fields(strings.Repeat("Once upon a time there was a little girl named Lily who loved to play in the park with her dog . ", 12))
	chains := []func(p *sample.Params){
		func(p *sample.Params) { p.Temp = 0 },
		func(p *sample.Params) {},
		func(p *sample.Params) { p.Temp, p.TopK, p.TopP, p.MinP = 1.3, 0, 1, 0 },
		func(p *sample.Params) { p.TopK, p.PenaltyRepeat, p.PenaltyFreq, p.PenaltyPresent = 5, 1.3, 0.5, 0.4 },
		func(p *sample.Params) { p.DryMultiplier, p.XTCProbability, p.XTCThreshold, p.Temp = 0.8, 0.5, 0.1, 1 },
	}
	var out []batchRequest
	for i := range n {
		nw := []int{1, 4, 12, 40, 70, 150, 230}[i%7] + i%5
		text := strings.Join(words[i%9:i%9+nw], " ")
		p := sample.DefaultParams()
		p.Seed = uint32(1000 + i)
		chains[i%len(chains)](&p)
		req := Request{Prompt: Prompt{Text: text}, Sampling: p, NPredict: 12 + i%3*8, CachePrompt: true, Slot: -1}
		br := batchRequest{req: req, prompt: tm.tok.Tokenize(text, true, true), delay: time.Duration(i*3) * time.Millisecond}
		if i == n/2 {
			br.req.NPredict, br.req.IgnoreEOS, br.cancel = -1, true, 5
		}
		out = append(out, br)
	}
	return out
}

// TestBatchedAnswersMatchReference: 40 requests (greedy and seeded, prompts
// of 1 to about 300 tokens, arriving 3 ms apart, one cancelled after its
// fifth token) over 4 slots of one engine, its scheduler evaluating their
// prompts and tokens together, give each the tokens, text and finish reason
// of the request alone in a fresh engine and of the reference (a fresh
// llama_context per request, llama-server's slot loop); the cancelled one
// the first five tokens of its answer alone.
func TestBatchedAnswersMatchReference(t *testing.T) {
	tm := stories(t).withRef(t)
	const nCtx = 512
	o := Options{NCtx: nCtx, Parallel: 4, QueueSize: 64, Threads: 2, AttnThreads: 1}
	reqs := batchRequests(tm, 40)
	e := newEngine(t, tm, o)
	type out struct {
		res Result
		err error
	}
	outs := make([]out, len(reqs))
	var wg sync.WaitGroup
	for i, br := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(br.delay)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			res, err := e.Generate(ctx, br.req, func(Token) error {
				if n++; n == br.cancel {
					cancel()
				}
				return nil
			})
			outs[i] = out{res, err}
		}()
	}
	wg.Wait()
	e.mu.Lock()
	st := e.stats
	e.mu.Unlock()
	t.Logf("%d forward passes, %d of them over several slots (at most %d)", st.steps, st.shared, st.maxSeqs)
	if st.shared == 0 {
		t.Error("no forward pass held two slots' rows: nothing was batched")
	}
	alone, ref := 0, 0
	for i, br := range reqs {
		o := outs[i]
		single := newEngine(t, tm, Options{NCtx: nCtx, AttnThreads: 1})
		sreq := br.req
		if br.cancel > 0 {
			sreq.NPredict = br.cancel
		}
		want, err := single.Generate(context.Background(), sreq, nil)
		if err != nil {
			t.Fatal(err)
		}
		single.Close()
		s, err := tm.ref.NewSession(nCtx, 1)
		if err != nil {
			t.Fatal(err)
		}
		ra, err := reftest.Generate(tm.ref, s, reftest.Turn{Prompt: br.prompt, Sampling: sreq.Sampling, NPredict: sreq.NPredict, IgnoreEOS: sreq.IgnoreEOS})
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if br.cancel > 0 {
			if !errors.Is(o.err, context.Canceled) || !slices.Equal(o.res.Tokens, want.Tokens) {
				t.Errorf("request %d, cancelled after %d tokens: error %v, tokens %v; alone %v", i, br.cancel, o.err, o.res.Tokens, want.Tokens)
				continue
			}
			alone++
			if slices.Equal(o.res.Tokens, ra.Tokens) {
				ref++
			}
			continue
		}
		if o.err != nil {
			t.Errorf("request %d: %v", i, o.err)
			continue
		}
		if !slices.Equal(o.res.Tokens, want.Tokens) || o.res.Text != want.Text || o.res.FinishReason != want.FinishReason {
			t.Errorf("request %d (%d prompt tokens, slot %d, %d cached): %v %q %s; alone %v %q %s", i, len(br.prompt), o.res.Slot,
				o.res.CachedTokens, o.res.Tokens, o.res.Text, o.res.FinishReason, want.Tokens, want.Text, want.FinishReason)
		} else {
			alone++
		}
		if !slices.Equal(o.res.Tokens, ra.Tokens) || o.res.Text != ra.Text || o.res.FinishReason != ra.Finish {
			t.Errorf("request %d (%d prompt tokens): %v %q %s; reference %v %q %s", i, len(br.prompt), o.res.Tokens, o.res.Text, o.res.FinishReason, ra.Tokens, ra.Text, ra.Finish)
		} else {
			ref++
		}
	}
	t.Logf("%d of %d batched answers equal to the request alone, %d of %d to the reference's", alone, len(reqs), ref, len(reqs))
}

// waitQuiet waits until the engine has nothing to do: no job queued, no
// slot busy, and the scheduler found nothing to settle since the last
// release.
func waitQuiet(t *testing.T, e *Engine) {
	t.Helper()
	waitFor(t, "the engine to settle", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, s := range e.slots {
			if s.busy {
				return false
			}
		}
		return len(e.queue) == 0 && e.quiet == e.releases
	})
}

// TestConversationsReuseExactly: 3 conversations of 3 turns (each turn's
// prompt: the last prompt, its answer's tokens and a new user message)
// interleaved over 1, 2 and 3 slots, the slots settling between turns: each
// answer equals the request's answer in a fresh engine and the reference's,
// cache_n is reported, and a conversation whose slot ran nothing else since
// its previous turn reuses at least 90% of that turn's tokens (over 3 slots
// each conversation keeps one).
func TestConversationsReuseExactly(t *testing.T) {
	tm := stories(t).withRef(t)
	const nCtx = 512
	users := [][]string{
		{"Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day, she saw", " Then the dog ran to", " Lily said"},
		{"Tom had a big red ball. He liked to throw it high in the sky and catch it again. His mom called him and said", " The sun was", " They went home and"},
		{"The little bird sat on a tree. It was cold and the wind was strong. The bird wanted to", " A boy came", " At the end"},
	}
	total, equal := 0, 0
	for _, parallel := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("%d slots", parallel), func(t *testing.T) {
			e := newEngine(t, tm, Options{NCtx: nCtx, Parallel: parallel, AttnThreads: 1})
			prompts := make([][]int32, len(users))
			ran := map[int]int{} // slot: the conversation it ran last
			for turn := range 3 {
				for c := range users {
					user := tm.tok.Tokenize(users[c][turn], turn == 0, false)
					prev := len(prompts[c])
					prompts[c] = append(prompts[c], user...)
					req := Request{Prompt: Prompt{Tokens: prompts[c]}, Sampling: withParams(func(p *sample.Params) { p.Seed = uint32(7 + c) }),
						NPredict: 24, CachePrompt: true, Slot: -1}
					res, err := e.Generate(context.Background(), req, nil)
					if err != nil {
						t.Fatal(err)
					}
					waitQuiet(t, e)
					fresh := newEngine(t, tm, Options{NCtx: nCtx, AttnThreads: 1})
					want, err := fresh.Generate(context.Background(), req, nil)
					if err != nil {
						t.Fatal(err)
					}
					fresh.Close()
					s, err := tm.ref.NewSession(nCtx, 1)
					if err != nil {
						t.Fatal(err)
					}
					ra, err := reftest.Generate(tm.ref, s, reftest.Turn{Prompt: prompts[c], Sampling: req.Sampling, NPredict: req.NPredict})
					s.Close()
					if err != nil {
						t.Fatal(err)
					}
					total++
					if !slices.Equal(res.Tokens, want.Tokens) || !slices.Equal(res.Tokens, ra.Tokens) || res.Text != want.Text {
						t.Errorf("conversation %d turn %d (%d prompt tokens, %d cached): %v; fresh %v, reference %v", c, turn, len(prompts[c]), res.CachedTokens, res.Tokens, want.Tokens, ra.Tokens)
					} else {
						equal++
					}
					if res.Timings.CacheN != res.CachedTokens || res.Timings.PromptN != len(prompts[c])-res.CachedTokens {
						t.Errorf("cache_n %d, prompt_n %d for %d cached of %d", res.Timings.CacheN, res.Timings.PromptN, res.CachedTokens, len(prompts[c]))
					}
					reuse := 0.0
					if prev > 0 {
						reuse = float64(res.CachedTokens) / float64(prev)
					}
					t.Logf("conversation %d turn %d: %d prompt tokens, cache_n %d (%.0f%% of the previous turn's %d), slot %d",
						c, turn, len(prompts[c]), res.CachedTokens, 100*reuse, prev, res.Slot)
					if kept, ok := ran[res.Slot]; ok && kept == c && turn > 0 && reuse < 0.9 {
						t.Errorf("conversation %d turn %d kept its slot but reused %.0f%% of the previous turn", c, turn, 100*reuse)
					}
					if parallel == 3 && turn > 0 && ran[res.Slot] != c {
						t.Errorf("conversation %d turn %d went to slot %d, which ran conversation %d", c, turn, res.Slot, ran[res.Slot])
					}
					ran[res.Slot] = c
					prompts[c] = append(prompts[c], res.Tokens...)
				}
			}
		})
	}
	t.Logf("%d of %d conversation turns equal to their fresh evaluation and the reference's", equal, total)
}

// TestOnePoolForAllSlots: an engine of 4 slots on 2 threads runs 2 matmul
// workers (llama-server's -np 4 -t 2), and every slot's context is
// evaluated by that one runner: each slot adds its KV cache only.
func TestOnePoolForAllSlots(t *testing.T) {
	tm := stories(t)
	e := newEngine(t, tm, Options{NCtx: 256, Parallel: 4, Threads: 2, QueueSize: 8})
	if e.Workers() != 2 {
		t.Fatalf("%d workers for -np 4 -t 2", e.Workers())
	}
	for s := range 4 {
		r := shortRequest("Once upon a time")
		r.Slot = s
		if _, err := e.Generate(context.Background(), r, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitQuiet(t, e)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.slots {
		if s.ctx == nil || s.ctx.Runner() != e.runner {
			t.Fatalf("slot %d is not evaluated by the engine's runner", s.id)
		}
	}
	t.Logf("4 slots, %d workers, one runner", e.Workers())
}
