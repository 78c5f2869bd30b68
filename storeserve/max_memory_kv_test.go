package storeserve_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/storeserve"
)

// TestMaxMemoryCountsEachModelsKVCachesForItsSlots: --max-memory counts a model's file and the full KV caches
// of the slots the server gives it (-np slots of their -c share at -ctk/-ctv), as Ollama's scheduler counts a
// model with its context; a model that cannot fit is refused naming both parts, and /api/ps reports the sum and the context the model runs
// with.
func TestMaxMemoryCountsEachModelsKVCachesForItsSlots(t *testing.T) {
	const (
		file    = 1185376 // stories260K.gguf
		perCell = 640     // f16 K and V: 5 layers × 4 KV heads × 8 values × 2 bytes × 2
	)
	for _, tc := range []struct {
		name   string
		o      storeserve.Options
		want   string // "" loads; else the 500's text
		psSize int64  // /api/ps size once loaded
		psCtx  int    // /api/ps context_length once loaded: a slot's context, as a single-model server reports it
	}{
		{name: "a model whose file fits but not its KV cache is refused naming both parts",
			o:    storeserve.Options{MaxMemory: file + 2048*perCell - 1},
			want: "the model's 2496096 bytes (its file's 1185376 and the KV caches' 1310720: -np 1 of 2048 tokens at -ctk f16 -ctv f16) exceed this server's --max-memory of 2496095 bytes"},
		{name: "a model whose file and KV cache fit exactly loads and /api/ps reports both",
			o: storeserve.Options{MaxMemory: file + 2048*perCell}, psSize: file + 2048*perCell, psCtx: 2048},
		{name: "two slots of 2048 tokens count two caches",
			o:    storeserve.Options{MaxMemory: file + 2*2048*perCell - 1, Serve: serve.Options{NCtx: 4096, Parallel: 2}},
			want: "-np 2 of 2048 tokens"},
		{name: "two slots of 2048 tokens that fit load",
			o: storeserve.Options{MaxMemory: file + 2*2048*perCell, Serve: serve.Options{NCtx: 4096, Parallel: 2}}, psSize: file + 2*2048*perCell, psCtx: 2048},
		{name: "a smaller context counts a smaller cache",
			o: storeserve.Options{MaxMemory: file + 256*perCell, Serve: serve.Options{NCtx: 256}}, psSize: file + 256*perCell, psCtx: 256},
		{name: "without a limit /api/ps still reports the file and the caches",
			o: storeserve.Options{}, psSize: file + 2048*perCell, psCtx: 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.o)
			st, b := f.post(t, "/api/generate", `{"model":"stories260K","prompt":"Once","options":{"num_predict":1},"stream":false}`)
			if tc.want != "" {
				if st != http.StatusInternalServerError || !strings.Contains(string(b), tc.want) {
					t.Fatalf("%d %s; want a 500 containing %q", st, b, tc.want)
				}
				return
			}
			if st != http.StatusOK {
				t.Fatalf("%d %s", st, b)
			}
			var ps api.ProcessResponse
			if err := json.Unmarshal(f.get(t, "/api/ps"), &ps); err != nil {
				t.Fatal(err)
			}
			if len(ps.Models) != 1 || ps.Models[0].Size != tc.psSize || ps.Models[0].ContextLength != tc.psCtx {
				t.Errorf("/api/ps = %+v; want one model of size %d and context_length %d", ps.Models, tc.psSize, tc.psCtx)
			}
		})
	}
}
