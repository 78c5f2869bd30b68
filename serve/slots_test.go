package serve

import (
	"strings"
	"testing"
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
