package engine

import "testing"

// TestTimingsRates checks Timings' derived rates against server_slot_stats (tools/server/server-common.h at
// the reference's commit): n_gen_steps = n_gen-1 (0 for n_gen 0), n_gen_tps = 1e3/t_gen_ms*n_gen_steps
// (0 when t_gen_ms is not positive), n_prompt_tps = 1e3/t_prompt_ms*n_prompt_processed.
func TestTimingsRates(t *testing.T) {
	for _, c := range []struct {
		t                  Timings
		steps              int
		predicted, prompts float64
	}{
		{Timings{}, 0, 0, 0},
		{Timings{PredictedN: 1, PredictedMS: 0.001, PromptN: 4, PromptMS: 8}, 0, 0, 500},
		{Timings{PredictedN: 2, PredictedMS: 100}, 1, 10, 0},
		{Timings{PredictedN: 5, PredictedMS: 100, PromptN: 3, PromptMS: 0}, 4, 40, 0},
		{Timings{PredictedN: 9, PredictedMS: 0, PromptN: 1, PromptMS: 250}, 8, 0, 4},
	} {
		if got := c.t.PredictedSteps(); got != c.steps {
			t.Errorf("%+v: PredictedSteps %d, want %d", c.t, got, c.steps)
		}
		if got := c.t.PredictedPerSecond(); got != c.predicted {
			t.Errorf("%+v: PredictedPerSecond %v, want %v", c.t, got, c.predicted)
		}
		if got := c.t.PromptPerSecond(); got != c.prompts {
			t.Errorf("%+v: PromptPerSecond %v, want %v", c.t, got, c.prompts)
		}
	}
}
