package engine

import (
	"context"
	"sync"
	"testing"
	"time"
)

// decodeLog records Options.OnDecode's calls.
type decodeLog struct {
	mu   sync.Mutex
	busy []int
}

func (l *decodeLog) add(n int) {
	l.mu.Lock()
	l.busy = append(l.busy, n)
	l.mu.Unlock()
}

func (l *decodeLog) calls() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.busy...)
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
