package engine

import (
	"strings"
	"testing"

	"github.com/bankml/bankml/model"
)

// TestNewChecksEverySlotsCacheOnce: New checks, before any slot's context exists, that the model's weights
// and every slot's full KV cache fit the memory bound (a fake one here, whatever the machine; the process's
// own for a size no machine holds), and refuses naming the bytes and the flags to change.
func TestNewChecksEverySlotsCacheOnce(t *testing.T) {
	tm := stories(t)
	m := tm.m
	w := m.WeightBytes()
	// f16 K and V over every layer, by hand: 2 bytes × 2 × n_layer × n_embd_k_gqa per cell.
	perCell := uint64(4 * m.HP.NLayer * m.HP.NHeadKV * m.HP.HeadDim)
	nTrain := uint64(m.HP.NCtxTrain)
	bound := func(n uint64) model.MemoryBound { return func() (uint64, string) { return n, "" } }
	for _, tc := range []struct {
		name string
		o    Options
		want []string // nil: New succeeds
	}{
		{name: "four slots whose caches together exceed the bound are refused at New, naming -np",
			o:    Options{Parallel: 4, MemoryBound: bound(w + 4*nTrain*perCell - 1)},
			want: []string{"engine: model: ", "4 slots' KV caches of 2048 tokens each", "fewer slots (-np)", "(-c)", "-ctk/-ctv"}},
		{name: "four slots whose caches together fit the bound are made",
			o: Options{Parallel: 4, MemoryBound: bound(w + 4*nTrain*perCell)}},
		{name: "a context past the training size (perplexity's) is counted at its own size",
			o:    Options{NCtx: 8192, PastTrainingContext: true, MemoryBound: bound(w + 8192*perCell - 1)},
			want: []string{"a KV cache of 8192 tokens"}},
		{name: "the process's own bound refuses slots no machine holds before any context exists",
			o:    Options{NCtx: 1 << 30, PastTrainingContext: true, Parallel: 64},
			want: []string{"64 slots' KV caches of 1073741824 tokens each", "-np"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.SuppressTokens = tm.suppress
			e, err := New(m, tm.tok, nil, tc.o)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				e.Close()
				return
			}
			if err == nil {
				e.Close()
				t.Fatalf("New succeeded; want an error with %q", tc.want)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}
