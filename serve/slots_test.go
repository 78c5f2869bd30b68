package serve

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/engine"
)

// TestSlotContext checks the per-slot context against llama_context's n_ctx_seq rule (src/llama-context.cpp:
// 289–302: n_ctx padded to 256; without a unified cache n_ctx/n_seq_max padded to 256) and server_context's
// n_ctx_slot cap at the training context, worked by hand from that source.
func TestSlotContext(t *testing.T) {
	cases := []struct {
		nCtx, parallel, train, want int
		err                         string
	}{
		{0, 1, 4096, 4096, ""},
		{0, 4, 4096, 1024, ""},
		{0, 3, 4096, 1536, ""}, // 4096/3 = 1365 → 1536
		{4096, 4, 8192, 1024, ""},
		{1000, 1, 8192, 1024, ""},
		{1000, 3, 8192, 512, ""}, // 1024/3 = 341 → 512
		{256, 2, 8192, 256, ""},  // 128 → 256
		{100, 1, 512, 256, ""},
		{8192, 1, 512, 512, ""}, // capped at the training context
		{8192, 2, 512, 512, ""},
		{256, 300, 8192, 0, "leaves each none"},
		{-1, 1, 512, 0, "must not be negative"},
		{256, 0, 512, 0, "at least 1"},
	}
	for _, c := range cases {
		got, err := SlotContext(c.nCtx, c.parallel, c.train)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("SlotContext(%d, %d, %d): error %v, want %q", c.nCtx, c.parallel, c.train, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("SlotContext(%d, %d, %d) = %d, %v; want %d", c.nCtx, c.parallel, c.train, got, err, c.want)
		}
	}
}

// TestSlotContextServed checks that a server with -c 512 -np 2 on stories260K (trained on 512 tokens) gives
// each slot 256 tokens, as llama-server would, in /props.
func TestSlotContextServed(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{NCtx: 512, Parallel: 2})
	st, b := ts.get(t, "/props")
	if st != 200 || !strings.Contains(string(b), `"n_ctx":256`) {
		t.Errorf("/props: %d %s", st, b)
	}
}

// metricValue is the value of the unlabelled sample name in a /metrics scrape, or -1.
func metricValue(t *testing.T, ts *testServer, name string) float64 {
	t.Helper()
	st, b := ts.get(t, "/metrics")
	if st != 200 {
		t.Fatalf("/metrics: %d %s", st, b)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

// TestRequestsProcessing checks llamacpp:requests_processing and llamacpp:requests_deferred as llama-server
// counts them (server-context.cpp:2503–2514): the busy slots, and the requests waiting for one. One slot is
// held by a generation whose token callback blocks; two HTTP requests then wait for it.
func TestRequestsProcessing(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Parallel: 1, QueueSize: 4})
	check := func(when string, processing, deferred float64) {
		t.Helper()
		if p, d := metricValue(t, ts, "llamacpp:requests_processing"), metricValue(t, ts, "llamacpp:requests_deferred"); p != processing || d != deferred {
			t.Errorf("%s: requests_processing %v, requests_deferred %v; want %v, %v", when, p, d, processing, deferred)
		}
	}
	check("idle", 0, 0)
	hold, started := make(chan struct{}), make(chan struct{}, 1)
	held := make(chan error, 1)
	go func() {
		req := engine.Request{Prompt: engine.Prompt{Text: "Once"}, Sampling: ts.base, NPredict: 2, Slot: -1}
		_, err := ts.eng.Generate(context.Background(), req, func(engine.Token) error {
			select {
			case started <- struct{}{}:
			default:
			}
			<-hold
			return nil
		})
		held <- err
	}()
	<-started
	check("one slot held", 1, 0)
	answers := make(chan int, 2)
	for range 2 {
		go func() {
			st, _ := ts.post(t, "/completion", []byte(`{"prompt": "Once", "n_predict": 2}`))
			answers <- st
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); ts.eng.QueueLen() < 2 && time.Now().Before(deadline); {
		time.Sleep(2 * time.Millisecond)
	}
	check("one slot held, two waiting", 1, 2)
	close(hold)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if st := <-answers; st != 200 {
			t.Errorf("a waiting request: %d", st)
		}
	}
	check("idle again", 0, 0)
}

// TestParallelAutoRefused: a negative slot count, llama-server's auto mode (any negative: common/arg.cpp
// refuses only 0; tools/server/server.cpp:156 makes it 4 slots over a unified KV cache), is refused by New
// with ErrParallelAuto; 0 is one slot.
func TestParallelAutoRefused(t *testing.T) {
	m := admitModel(t, storiesPath(t), AdmitOptions{})
	for _, c := range []struct {
		parallel int
		auto     bool
	}{{-1, true}, {-4, true}, {0, false}, {2, false}} {
		s, err := New(m, Options{NCtx: 512, Parallel: c.parallel})
		if got := errors.Is(err, ErrParallelAuto); got != c.auto || (err == nil) == c.auto {
			t.Errorf("-np %d: %v, want ErrParallelAuto %v", c.parallel, err, c.auto)
		}
		if err == nil {
			if want := max(c.parallel, 1); s.opt.Parallel != want {
				t.Errorf("-np %d: %d slots, want %d", c.parallel, s.opt.Parallel, want)
			}
			s.Close()
		}
	}
}
