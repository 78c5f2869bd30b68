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

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/sample"
)

// TestStopStringsHeldBackAndCut feeds pieces to process_token's text logic.
// The expected texts follow llama-server's specification: text that may
// begin a stop string is held back (nothing is released with that token),
// the text is cut before the earliest stop string once a token completes one,
// and the text released over the stream is the full text up to it; no text is
// released while the generated text ends inside a UTF-8 sequence.
func TestStopStringsHeldBackAndCut(t *testing.T) {
	cases := []struct {
		name    string
		stops   []string
		pieces  []string
		eog     int // index of an end-of-generation piece, -1 for none
		want    []string
		pending []bool
		word    string
		text    string
	}{
		{name: "three tokens", stops: []string{"END"}, pieces: []string{"Hello ", "E", "N", "D"}, eog: -1,
			want: []string{"Hello ", "", "", ""}, word: "END", text: "Hello "},
		{name: "inside one token", stops: []string{"\n\n"}, pieces: []string{"a\n", "\nb"}, eog: -1,
			want: []string{"", "a"}, word: "\n\n", text: "a"},
		{name: "partial then not", stops: []string{"xyz"}, pieces: []string{"ab x", "yq", "r"}, eog: -1,
			want: []string{"", "ab xyq", "r"}, text: "ab xyqr"},
		{name: "earliest of two", stops: []string{"cd", "bc"}, pieces: []string{"a", "b", "cd"}, eog: -1,
			want: []string{"a", "", ""}, word: "bc", text: "a"},
		{name: "utf-8 held", pieces: []string{"caf", "\xc3", "\xa9!"}, eog: -1,
			want: []string{"caf", "", "é!"}, pending: []bool{false, true, false}, text: "café!"},
		{name: "utf-8 lead byte of 4", stops: []string{"!"}, pieces: []string{"\xf0\x9f", "\x98", "\x80!"}, eog: -1,
			want: []string{"", "", "😀"}, pending: []bool{true, true, false}, word: "!", text: "😀"},
		{name: "eog releases a partial", stops: []string{"END"}, pieces: []string{"x E", ""}, eog: 1,
			want: []string{"", "x E"}, text: "x E"},
		{name: "stop at the start", stops: []string{"Hi"}, pieces: []string{"Hi there"}, eog: -1,
			want: []string{""}, word: "Hi", text: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := stopper{stops: c.stops}
			var released strings.Builder
			for i, p := range c.pieces {
				got, pending := st.add(p, i == c.eog)
				released.WriteString(got)
				if got != c.want[i] {
					t.Errorf("piece %d %q: released %q, want %q", i, p, got, c.want[i])
				}
				if want := c.pending != nil && c.pending[i]; pending != want {
					t.Errorf("piece %d: pending %v, want %v", i, pending, want)
				}
				if st.stopped != (i == len(c.pieces)-1 && c.word != "") {
					t.Errorf("piece %d: stopped %v", i, st.stopped)
				}
			}
			if st.word != c.word || string(st.text) != c.text {
				t.Errorf("word %q text %q, want %q %q", st.word, st.text, c.word, c.text)
			}
			if c.word != "" && released.String() != c.text {
				t.Errorf("released %q, text %q", released.String(), c.text)
			}
		})
	}
}

// sharedPrefix is a test prompt a little longer than one micro-batch on
// stories260K (about 530 tokens), so that a later prompt can reuse an
// aligned prefix.
func sharedPrefix() string {
	return strings.Repeat("Once upon a time, there was a little girl named Lily. She loved to play outside in the park. ", 17) + "One day, "
}

// TestAnswersUnderLoadEqualSingle checks the determinism contract: 8
// requests (4 distinct, each twice) sent at once to an engine with two slots
// give, each, the answer a fresh engine gives to it alone, while the slots
// reuse their caches.
func TestAnswersUnderLoadEqualSingle(t *testing.T) {
	tm := stories(t)
	o := Options{NCtx: 1024, Parallel: 2, QueueSize: 8}
	var reqs []Request
	for i := range 4 {
		p := withParams(func(p *sample.Params) { p.Seed = uint32(100 + i) })
		text := sharedPrefix() + []string{"she saw a cat", "Tom", "the dog was sad", "Mom said"}[i]
		reqs = append(reqs, Request{Prompt: Prompt{Text: text}, Sampling: p, NPredict: 24, CachePrompt: true, Slot: -1})
	}
	single := make([]Result, len(reqs))
	for i, r := range reqs {
		e := newEngine(t, tm, o)
		res, err := e.Generate(context.Background(), r, nil)
		if err != nil {
			t.Fatal(err)
		}
		single[i] = res
		e.Close()
	}
	e := newEngine(t, tm, o)
	type out struct {
		i   int
		res Result
		err error
	}
	results := make(chan out)
	sem := make(chan struct{}, 8)
	for k := range 2 * len(reqs) {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			i := k % len(reqs)
			res, err := e.Generate(context.Background(), reqs[i], nil)
			results <- out{i, res, err}
		}()
	}
	cached, equal := 0, 0
	for range 2 * len(reqs) {
		o := <-results
		if o.err != nil {
			t.Fatalf("request %d: %v", o.i, o.err)
		}
		if o.res.CachedTokens > 0 {
			cached++
		}
		if !slices.Equal(o.res.Tokens, single[o.i].Tokens) || o.res.Text != single[o.i].Text || o.res.FinishReason != single[o.i].FinishReason {
			t.Errorf("request %d under load (slot %d, %d cached): %q, alone: %q", o.i, o.res.Slot, o.res.CachedTokens, o.res.Text, single[o.i].Text)
			continue
		}
		equal++
	}
	t.Logf("%d of %d answers under load equal to their single-request answers; %d reused a cached prefix", equal, 2*len(reqs), cached)
	if cached == 0 {
		t.Error("no request reused a slot's cache: the test does not exercise reuse")
	}
}

// blocker is an onToken that signals the first token and then waits.
type blocker struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}), release: make(chan struct{})}
}

func (b *blocker) onToken(Token) error {
	b.once.Do(func() { close(b.started) })
	<-b.release
	return nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func shortRequest(text string) Request {
	return Request{Prompt: Prompt{Text: text}, Sampling: greedyParams(), NPredict: 4, CachePrompt: true, Slot: -1}
}

// TestQueueBoundAndCancel: with every slot busy, requests wait in a queue of
// QueueSize; one more is refused with ErrQueueFull at once; a waiting request
// whose context is cancelled leaves the queue with ctx.Err().
func TestQueueBoundAndCancel(t *testing.T) {
	tm := stories(t)
	for _, qs := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("queue-%d", qs), func(t *testing.T) {
			e := newEngine(t, tm, Options{NCtx: 256, Parallel: 1, QueueSize: qs})
			b := newBlocker()
			done := make(chan error, 1+qs)
			go func() {
				_, err := e.Generate(context.Background(), shortRequest("Once"), b.onToken)
				done <- err
			}()
			<-b.started
			for range qs {
				go func() {
					_, err := e.Generate(context.Background(), shortRequest("Lily"), nil)
					done <- err
				}()
			}
			waitFor(t, "the queue to fill", func() bool { return e.QueueLen() == qs })
			if _, err := e.Generate(context.Background(), shortRequest("Tom"), nil); !errors.Is(err, ErrQueueFull) {
				t.Fatalf("with %d waiting: %v, want ErrQueueFull", qs, err)
			}
			close(b.release)
			for range 1 + qs {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			if e.QueueLen() != 0 || e.Slots()[0].Busy {
				t.Fatalf("after all answers: queue %d, slots %+v", e.QueueLen(), e.Slots())
			}
		})
	}
	t.Run("free-slot-past-a-waiter", func(t *testing.T) {
		// A waiter for a busy id_slot does not hold back a request that a
		// free slot can take.
		e := newEngine(t, tm, Options{NCtx: 256, Parallel: 2, QueueSize: 2})
		b := newBlocker()
		done := make(chan error, 2)
		pinned := func(text string, slot int, on func(Token) error) {
			r := shortRequest(text)
			r.Slot = slot
			_, err := e.Generate(context.Background(), r, on)
			done <- err
		}
		go pinned("Once", 1, b.onToken)
		<-b.started
		go pinned("Lily", 1, nil)
		waitFor(t, "the request for slot 1 to queue", func() bool { return e.QueueLen() == 1 })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := e.Generate(ctx, shortRequest("Tom"), nil)
		if err != nil || res.Slot != 0 {
			t.Fatalf("slot %d, error %v; want slot 0 at once", res.Slot, err)
		}
		close(b.release)
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("cancel-while-waiting", func(t *testing.T) {
		e := newEngine(t, tm, Options{NCtx: 256, Parallel: 1, QueueSize: 2})
		b := newBlocker()
		done := make(chan error, 1)
		go func() {
			_, err := e.Generate(context.Background(), shortRequest("Once"), b.onToken)
			done <- err
		}()
		<-b.started
		ctx, cancel := context.WithCancel(context.Background())
		waited := make(chan error, 1)
		go func() {
			_, err := e.Generate(ctx, shortRequest("Lily"), nil)
			waited <- err
		}()
		waitFor(t, "the request to queue", func() bool { return e.QueueLen() == 1 })
		cancel()
		if err := <-waited; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled while waiting: %v", err)
		}
		if e.QueueLen() != 0 {
			t.Fatalf("queue %d after the cancel", e.QueueLen())
		}
		close(b.release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestGenerationStops: a cancelled context or an error from onToken stops
// generation before the next token is evaluated, and the result so far comes
// back with the error.
func TestGenerationStops(t *testing.T) {
	tm := stories(t)
	e := newEngine(t, tm, Options{NCtx: 512})
	errStop := errors.New("client went away")
	cases := []struct {
		name  string
		after int // tokens before the stop
		stop  func(cancel context.CancelFunc) error
		want  error
	}{
		{name: "cancel", after: 3, stop: func(cancel context.CancelFunc) error { cancel(); return nil }, want: context.Canceled},
		{name: "onToken error", after: 2, stop: func(context.CancelFunc) error { return errStop }, want: errStop},
		{name: "cancel on first", after: 1, stop: func(cancel context.CancelFunc) error { cancel(); return nil }, want: context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := shortRequest("Once upon a time")
			req.NPredict, req.IgnoreEOS = -1, true
			n := 0
			res, err := e.Generate(ctx, req, func(Token) error {
				if n++; n == c.after {
					return c.stop(cancel)
				}
				return nil
			})
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if len(res.Tokens) != c.after || res.FinishReason != "" || res.StopType != "none" {
				t.Fatalf("%d tokens, finish %q, stop_type %q; want %d tokens, no finish reason, none", len(res.Tokens), res.FinishReason, res.StopType, c.after)
			}
		})
	}
	t.Run("cancelled before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.Generate(ctx, shortRequest("Once"), nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v", err)
		}
	})
}

// TestContextLimit: a prompt of n_ctx tokens or more is refused with
// llama-server's exceed_context_size_error numbers and message; a prompt one
// token shorter gets one token and "length" (no context shift).
func TestContextLimit(t *testing.T) {
	tm := stories(t)
	e := newEngine(t, tm, Options{NCtx: 256})
	if e.NCtx() != 256 {
		t.Fatalf("NCtx %d", e.NCtx())
	}
	filler := tm.tok.Tokenize(strings.Repeat(" Lily", 400), false, false)
	for _, n := range []int{254, 255, 256, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			req := shortRequest("")
			req.Prompt = Prompt{Tokens: filler[:n]}
			req.NPredict = -1
			req.IgnoreEOS = true
			res, err := e.Generate(context.Background(), req, nil)
			if n >= 256 {
				var ce *ContextError
				if !errors.As(err, &ce) || !errors.Is(err, ErrContextFull) || ce.NPromptTokens != n || ce.NCtx != 256 {
					t.Fatalf("error %v (%#v), want a ContextError{%d, 256}", err, ce, n)
				}
				want := fmt.Sprintf("request (%d tokens) exceeds the available context size (256 tokens), try increasing it", n)
				if err.Error() != want {
					t.Fatalf("message %q, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tokens) != 256-n || res.FinishReason != "length" || !res.Truncated || res.StopType != "limit" {
				t.Fatalf("%d tokens, finish %q, truncated %v, stop_type %q; want %d, length, true, limit", len(res.Tokens), res.FinishReason, res.Truncated, res.StopType, 256-n)
			}
			// tokens_cached: the prompt and every sampled token but the last, never evaluated.
			if res.NTokensCached != n+len(res.Tokens)-1 {
				t.Fatalf("NTokensCached %d, want %d", res.NTokensCached, n+len(res.Tokens)-1)
			}
		})
	}
}

// TestSlotChoice follows get_available_slot: an empty engine takes the least
// recently used slot (ties to the highest id), a prompt sharing more than
// 10% of its tokens with a free slot's cache goes there, id_slot picks a slot.
func TestSlotChoice(t *testing.T) {
	tm := stories(t)
	e := newEngine(t, tm, Options{NCtx: 256, Parallel: 2})
	run := func(text string, slot int) Result {
		t.Helper()
		r := shortRequest(text)
		r.Slot = slot
		res, err := e.Generate(context.Background(), r, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	steps := []struct {
		text string
		slot int
		want int
	}{
		{"Once upon a time, there was a little girl", -1, 1},         // both unused: the last of equals
		{"The dog ran to the big tree and sat down under it", -1, 0}, // only BOS in common (under 10%): least recently used
		{"Once upon a time, there was a boy", -1, 1},                 // shares its prefix with slot 1
		{"The dog ran to the big tree and sat down", -1, 0},
		{"Once upon a time", 0, 0}, // id_slot
	}
	for i, s := range steps {
		if got := run(s.text, s.slot).Slot; got != s.want {
			t.Fatalf("step %d (%q): slot %d, want %d", i, s.text, got, s.want)
		}
	}
	if _, err := e.Generate(context.Background(), Request{Prompt: Prompt{Text: "x"}, Sampling: greedyParams(), Slot: 2}, nil); err == nil {
		t.Fatal("id_slot 2 of 2 accepted")
	}
	info := e.Slots()
	if len(info) != 2 || info[0].NPast == 0 || info[1].NPast == 0 || info[0].Busy || info[0].LastUsed.IsZero() {
		t.Fatalf("slots %+v", info)
	}
}

// TestTokenizeSegments: segments without control-token texts in the
// request's parts tokenize as llama-server tokenizes the whole prompt; a
// marker typed in a message stays text.
func TestTokenizeSegments(t *testing.T) {
	tm := qwen3(t)
	e := newEngine(t, tm, Options{NCtx: 256})
	plain := []chat.Segment{{Text: "<|im_start|>user\n", Special: true}, {Text: "Hello there"}, {Text: "<|im_end|>\n<|im_start|>assistant\n", Special: true}}
	got, err := e.Tokenize(Prompt{Segments: plain})
	if err != nil {
		t.Fatal(err)
	}
	if want := tm.tok.Tokenize("<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n", true, true); !slices.Equal(got, want) {
		t.Fatalf("plain segments %v, whole prompt %v", got, want)
	}
	marked := slices.Clone(plain)
	marked[1].Text = "say <|im_end|> now"
	got, err = e.Tokenize(Prompt{Segments: marked})
	if err != nil {
		t.Fatal(err)
	}
	end := tm.tok.Tokenize("<|im_end|>", false, true)
	if len(end) != 1 {
		t.Fatalf("<|im_end|> is %v", end)
	}
	if n := countID(got, end[0]); n != 1 {
		t.Fatalf("<|im_end|> occurs %d times, want once (the typed marker must stay text): %v", n, got)
	}
	for _, bad := range []Prompt{{}, {Text: "a", Tokens: []int32{1}}, {Tokens: []int32{-1}}, {Tokens: []int32{int32(tm.tok.NVocab())}}} {
		if _, err := e.Tokenize(bad); err == nil {
			t.Errorf("Tokenize(%+v) accepted", bad)
		}
	}
}

func countID(ids []int32, id int32) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}
