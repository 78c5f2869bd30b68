package perplexity

import "testing"

// TestPlanForRefusesAContextThatScoresNothing: a chunk's tokens n_ctx/2+1 .. n_ctx-1 are scored, none for
// n_ctx 1 or 2 (NaN estimates), so PlanFor and Compute refuse a context below MinNCtx, 3, which scores one.
func TestPlanForRefusesAContextThatScoresNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		nCtx int
		ok   bool
	}{
		{"a context of 1 is refused", 1, false},
		{"a context of 2, which scores no token, is refused", 2, false},
		{"a context of 3 scores one token per chunk", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanFor(100, Options{NCtx: tc.nCtx})
			if (err == nil) != tc.ok {
				t.Fatalf("PlanFor with n_ctx %d: error %v, want ok %v", tc.nCtx, err, tc.ok)
			}
			r, err := Compute(&fakeEval{nVocab: 3}, make([]int32, 100), Options{NCtx: tc.nCtx}, nil)
			if (err == nil) != tc.ok {
				t.Fatalf("Compute with n_ctx %d: error %v, want ok %v", tc.nCtx, err, tc.ok)
			}
			if tc.ok && r.Count != r.Chunks {
				t.Fatalf("n_ctx %d: %d tokens scored in %d chunks, want one per chunk", tc.nCtx, r.Count, r.Chunks)
			}
		})
	}
}
