package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankml/bankml/engine"
)

// referenceDecodeSeries are the series of server_task_result_metrics::to_metrics (tools/server/server-task.cpp)
// that count decodes and throughputs, with the reference's help texts and types.
var referenceDecodeSeries = []struct{ name, help, typ string }{
	{"llamacpp:n_decode_total", "Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding", "counter"},
	{"llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s", "gauge"},
	{"llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s", "gauge"},
	{"llamacpp:n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", "gauge"},
}

// TestMetricsDecodeSeries checks that /metrics has llama-server's n_decode_total, prompt_tokens_seconds,
// predicted_tokens_seconds and n_busy_slots_per_decode with its HELP and TYPE lines, at 0 before any request
// as llama-server reports them from its start, in a Server's own registry (no label) and in a shared one
// (the model label).
func TestMetricsDecodeSeries(t *testing.T) {
	cases := []struct {
		name   string
		shared bool
		sample string // the sample's name and labels
	}{
		{"a server's own registry has every series without a label", false, "%s"},
		{"a shared registry has every series under the model's label", true, `%s{model="stories260K"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Options{Alias: []string{"stories260K"}}
			if c.shared {
				o.Metrics = NewMetrics()
			}
			ts := newTestServer(t, storiesPath(t), AdmitOptions{}, o)
			st, b := ts.get(t, "/metrics")
			if st != 200 {
				t.Fatalf("/metrics: %d %s", st, b)
			}
			for _, s := range referenceDecodeSeries {
				for _, want := range []string{
					"# HELP " + s.name + " " + s.help + "\n",
					"# TYPE " + s.name + " " + s.typ + "\n",
					strings.Replace(c.sample, "%s", s.name, 1) + " 0\n",
				} {
					if !strings.Contains(string(b), want) {
						t.Errorf("/metrics lacks %q:\n%s", want, b)
					}
				}
			}
		})
	}
}

// TestMetricsBusySlotsPerDecode runs three requests together on --parallel 3 (each holds its first token
// until all three have one, so that the rest of their tokens are decoded together) and checks that
// llamacpp:n_decode_total counts the passes and llamacpp:n_busy_slots_per_decode, n_busy_slots /
// max(n_decode, 1) (server-task.cpp), shows several slots decoded together.
func TestMetricsBusySlotsPerDecode(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Parallel: 3})
	const n = 3
	var first, wg sync.WaitGroup
	first.Add(n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := engine.Request{Prompt: engine.Prompt{Text: "Once upon a time"}, Sampling: ts.base, NPredict: 16, IgnoreEOS: true, Slot: -1}
			k := 0
			_, errs[i] = ts.eng.Generate(context.Background(), req, func(engine.Token) error {
				if k++; k == 1 {
					first.Done()
					first.Wait()
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	decodes, perDecode := metricValue(t, ts, "llamacpp:n_decode_total"), metricValue(t, ts, "llamacpp:n_busy_slots_per_decode")
	if decodes <= 0 || perDecode <= 1 || perDecode > n {
		t.Errorf("n_decode_total %v, n_busy_slots_per_decode %v: want decodes, and more than 1 and at most %d busy slots per decode", decodes, perDecode, n)
	}
}

// TestMetricsThroughputBuckets checks llamacpp:prompt_tokens_seconds and llamacpp:predicted_tokens_seconds
// against one answer: with one answer in the window, the prompt's is its evaluated tokens (prompt_n) over the
// time of the passes that evaluated them, which add_prompt adds to the bucket and to the totals alike
// (prompt_tokens_total / prompt_seconds_total), and the generation's is its predicted_per_second
// (bucket::n_per_second over n_gen_steps, the formula of server_slot_stats::n_gen_tps); a scrape resets them
// to 0 (get_metrics: reset_bucket after rendering), while llamacpp:n_decode_total keeps counting.
func TestMetricsThroughputBuckets(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	st, b := ts.post(t, "/completion", []byte(`{"prompt": "Once upon a time", "n_predict": 12, "ignore_eos": true, "temperature": 0}`))
	if st != 200 {
		t.Fatalf("/completion: %d %s", st, b)
	}
	var a struct {
		Timings struct {
			PromptN            int     `json:"prompt_n"`
			PredictedN         int     `json:"predicted_n"`
			PromptPerSecond    float64 `json:"prompt_per_second"`
			PredictedPerSecond float64 `json:"predicted_per_second"`
		} `json:"timings"`
	}
	if err := json.Unmarshal(b, &a); err != nil || a.Timings.PromptN == 0 || a.Timings.PredictedN != 12 {
		t.Fatalf("/completion: %v %s", err, b)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }
	cases := []struct {
		name             string
		promptTotals     bool // the prompt's throughput is prompt_tokens_total / prompt_seconds_total, else 0
		predict          float64
		decodesUnchanged bool
	}{
		{"the first scrape after one answer reports its prompt and generation throughputs", true, a.Timings.PredictedPerSecond, false},
		{"the next scrape reports 0 for both: the scrape reset the buckets", false, 0, true},
	}
	var decodes float64
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b := ts.get(t, "/metrics")
			if st != 200 {
				t.Fatalf("/metrics: %d %s", st, b)
			}
			v := func(name string) float64 {
				for _, line := range strings.Split(string(b), "\n") {
					if s, ok := strings.CutPrefix(line, name+" "); ok {
						var f float64
						if err := json.Unmarshal([]byte(s), &f); err != nil {
							t.Fatalf("%s: %v", line, err)
						}
						return f
					}
				}
				t.Fatalf("/metrics lacks %s:\n%s", name, b)
				return 0
			}
			prompt := 0.0
			if c.promptTotals {
				if n := v("llamacpp:prompt_tokens_total"); n != float64(a.Timings.PromptN) {
					t.Errorf("prompt_tokens_total %v, want prompt_n %d", n, a.Timings.PromptN)
				}
				prompt = v("llamacpp:prompt_tokens_total") / v("llamacpp:prompt_seconds_total")
			}
			if p, g := v("llamacpp:prompt_tokens_seconds"), v("llamacpp:predicted_tokens_seconds"); !near(p, prompt) || !near(g, c.predict) || (c.promptTotals && p <= 0) {
				t.Errorf("prompt_tokens_seconds %v, predicted_tokens_seconds %v; want %v, %v", p, g, prompt, c.predict)
			}
			d := v("llamacpp:n_decode_total")
			if d <= 0 || (c.decodesUnchanged && d != decodes) {
				t.Errorf("n_decode_total %v (before: %v)", d, decodes)
			}
			decodes = d
		})
	}
}

// TestMetricsCountPromptsWhenEvaluated checks that the prompt series count when the engine evaluates the
// prompt, as llama-server's update_slots does (tools/server/server-context.cpp: add_prompt after each
// llama_decode of prompt tokens, add_prompt_cached when the prompt starts), not when the answer ends: a
// scrape while a generation runs already shows its prompt tokens and a prompt throughput, and a streamed
// request whose client goes away after the first token has counted its whole prompt.
func TestMetricsCountPromptsWhenEvaluated(t *testing.T) {
	const text = "Once upon a time there was a little girl named Lily"
	cases := []struct {
		name string
		rate bool                                                  // the scrape is the first since the prompt ran
		run  func(t *testing.T, ts *testServer) map[string]float64 // the series read while or after the request runs
	}{
		{"a scrape while a generation runs already shows its prompt tokens and throughput", true, func(t *testing.T, ts *testServer) map[string]float64 {
			scraped := map[string]float64{}
			req := engine.Request{Prompt: engine.Prompt{Text: text}, Sampling: ts.base, NPredict: 4, IgnoreEOS: true, Slot: -1}
			k := 0
			if _, err := ts.eng.Generate(context.Background(), req, func(engine.Token) error {
				if k++; k == 1 {
					scraped = scrape(t, ts)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			return scraped
		}},
		{"a request whose client goes away after its first token has counted its prompt and its generated tokens", false, func(t *testing.T, ts *testServer) map[string]float64 {
			req, err := http.NewRequest(http.MethodPost, ts.url+"/completion",
				strings.NewReader(`{"prompt": "`+text+`", "n_predict": -1, "ignore_eos": true, "stream": true}`))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			resp.Body.Close() // the client goes away
			if err != nil || !strings.HasPrefix(line, "data: ") {
				t.Fatalf("first event %q: %v", line, err)
			}
			for deadline := time.Now().Add(10 * time.Second); metricValue(t, ts, "llamacpp:requests_processing") != 0; {
				if time.Now().After(deadline) {
					t.Fatal("the generation did not stop after the client went away")
				}
				time.Sleep(5 * time.Millisecond)
			}
			// llama-server counts a cancelled request's generated tokens when its slot is reset
			// (callback_on_reset: metrics_on_prediction when n_gen > 0); short of the context, it was cut.
			// (The prompt is 14 tokens with the BOS: a run to the context's end would sample n_ctx-14.)
			var props struct {
				Settings struct {
					NCtx int `json:"n_ctx"`
				} `json:"default_generation_settings"`
			}
			if st, b := ts.get(t, "/props"); st != 200 || json.Unmarshal(b, &props) != nil || props.Settings.NCtx == 0 {
				t.Fatalf("/props: %d %s", st, b)
			}
			nCtx := props.Settings.NCtx
			if n := metricValue(t, ts, "llamacpp:tokens_predicted_total"); n < 1 || n >= float64(nCtx-16) {
				t.Fatalf("tokens_predicted_total %v: want the tokens sampled before the client went away, short of the context's %d", n, nCtx)
			}
			return scrape(t, ts)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
			// llama-server's /completion tokenizes a string prompt with add_special (the BOS).
			st, b := ts.post(t, "/tokenize", []byte(`{"content": "`+text+`", "add_special": true}`))
			var tv struct{ Tokens []int32 }
			if st != 200 || json.Unmarshal(b, &tv) != nil || len(tv.Tokens) == 0 {
				t.Fatalf("/tokenize: %d %s", st, b)
			}
			got := c.run(t, ts)
			if n := got["llamacpp:prompt_tokens_total"]; n != float64(len(tv.Tokens)) {
				t.Errorf("prompt_tokens_total %v, want the prompt's %d tokens", n, len(tv.Tokens))
			}
			if got["llamacpp:prompt_seconds_total"] <= 0 || (c.rate && got["llamacpp:prompt_tokens_seconds"] <= 0) {
				t.Errorf("prompt_seconds_total %v, prompt_tokens_seconds %v: want the prompt's time and throughput",
					got["llamacpp:prompt_seconds_total"], got["llamacpp:prompt_tokens_seconds"])
			}
		})
	}
}

// scrape reads every unlabelled sample of one GET /metrics (one scrape: it resets the throughput buckets).
func scrape(t *testing.T, ts *testServer) map[string]float64 {
	t.Helper()
	st, b := ts.get(t, "/metrics")
	if st != 200 {
		t.Fatalf("/metrics: %d %s", st, b)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") || strings.Contains(name, "{") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out[name] = f
	}
	return out
}
