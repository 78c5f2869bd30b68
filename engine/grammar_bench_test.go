package engine

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bankml/bankml/grammar"
	"github.com/bankml/bankml/sample"
)

// BenchmarkDecodeGrammar times the decode of $BANKML_BENCH_MODEL (an
// 8B-shaped file: `bankml synth /tmp/b8-Q1_0.gguf --arch qwen3 --preset
// bonsai-8b --type q1_0 --vocab qwen3`) through Engine.Generate with the
// JSON-mode grammar and without, alternating request by request: 32 tokens
// after a short prompt, seeded sampling at llama-server's defaults, the end
// of generation banned so that both runs decode as many tokens. On a model
// with random weights the grammar refuses most first draws, so nearly every
// token pays a mask over the whole vocabulary: the worst case. Threads:
// $BANKML_BENCH_THREADS (default 2). The medians of the decode rates, their
// ratio, and the process's CPU time per token (less disturbed than wall
// time on a shared machine) are reported.
func BenchmarkDecodeGrammar(b *testing.B) {
	path := os.Getenv("BANKML_BENCH_MODEL")
	if path == "" {
		b.Skip("set BANKML_BENCH_MODEL to an 8B-shaped GGUF file")
	}
	threads := 2
	if s := os.Getenv("BANKML_BENCH_THREADS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		threads = n
	}
	tm := loadBankml(b, "bench", path)
	e := newEngine(b, tm, Options{NCtx: 256, Threads: threads})
	jsonMode, err := grammar.FromJSONSchema([]byte(`{"type": "object"}`), true)
	if err != nil {
		b.Fatal(err)
	}
	const n = 32
	req := func(g string) Request {
		p := sample.DefaultParams()
		p.Seed = 1
		if g != "" {
			p.Grammar, p.GrammarType = g, sample.GrammarOutputFormat
		}
		return Request{Prompt: Prompt{Text: "Give me a JSON object:"}, Sampling: p, NPredict: n, IgnoreEOS: true, Slot: -1}
	}
	// rate is the decode rate (tokens after the first over the time they
	// took); cpu the process's CPU time per generated token
	run := func(r Request) (rate, cpu float64) {
		c0 := processCPU()
		res, err := e.Generate(context.Background(), r, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Tokens) != n {
			b.Fatalf("%d tokens", len(res.Tokens))
		}
		return float64(res.Timings.PredictedN-1) / (res.Timings.PredictedMS / 1000), (processCPU() - c0).Seconds() * 1000 / n
	}
	t0 := time.Now()
	grammar.NewVocab(tm.tok).NVocab()
	b.Logf("the vocabulary's trie (built once per engine, on the first grammar request): %v", time.Since(t0))
	run(req(jsonMode)) // warm up
	var plain, constrained, plainCPU, constrainedCPU []float64
	for b.Loop() {
		r, c := run(req(""))
		plain, plainCPU = append(plain, r), append(plainCPU, c)
		r, c = run(req(jsonMode))
		constrained, constrainedCPU = append(constrained, r), append(constrainedCPU, c)
	}
	med := func(x []float64) float64 {
		s := slices.Clone(x)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(med(plain), "tok/s-plain")
	b.ReportMetric(med(constrained), "tok/s-json")
	b.ReportMetric(med(constrained)/med(plain), "json/plain")
	b.ReportMetric(med(plainCPU), "cpu-ms/tok-plain")
	b.ReportMetric(med(constrainedCPU), "cpu-ms/tok-json")
}
