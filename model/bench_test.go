package model

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/sample"
)

// benchPrompt is "<s>Once upon a time" in stories260K's vocabulary.
var benchPrompt = []int32{1, 403, 407, 261, 378}

// BenchmarkGreedyStories260K times a 5-token prompt and 64 greedy tokens on
// one thread; BenchmarkReferenceGreedyStories260K runs the same on the
// reference. Run both in one invocation to compare them side by side:
//
//	go test -run '^$' -bench 'GreedyStories260K' -count 5 ./model/
func BenchmarkGreedyStories260K(b *testing.B) {
	m := loadModel(b, filepath.Join(modelsDir(b), "stories260K.gguf"))
	for b.Loop() {
		c := newCtx(b, m, len(benchPrompt)+64, 1)
		logits, err := c.Decode(benchPrompt)
		if err != nil {
			b.Fatal(err)
		}
		for range 63 {
			if logits, err = c.Decode([]int32{sample.Greedy(logits)}); err != nil {
				b.Fatal(err)
			}
		}
		c.Close()
	}
}

func BenchmarkReferenceGreedyStories260K(b *testing.B) {
	lib := refLib(b)
	rm, err := lib.LoadModel(filepath.Join(modelsDir(b), "stories260K.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	defer rm.Close()
	for b.Loop() {
		if _, err := rm.Greedy(benchPrompt, 64, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQwen3Speed measures prompt and decode tokens/s of bankml and of
// the reference on synthetic qwen3 files (real Qwen3 vocabulary, YaRN), in
// one run, alternating: every iteration evaluates the same prompt (64 tokens,
// 32 at the bonsai-1.7b shape) and greedy tokens (16, or 8) with bankml,
// then with the reference, on the same thread count ($BANKML_BENCH_THREADS,
// default 1). The metrics are the medians over the iterations; the
// bankml/ref ratios are of those medians. Select files with -bench, e.g.
// 'Qwen3Speed/tiny' or 'Qwen3Speed/bonsai':
//
//	go test -run '^$' -bench 'Qwen3Speed' -benchtime 5x ./model/
func BenchmarkQwen3Speed(b *testing.B) {
	lib := refLib(b)
	threads := 1
	if s := os.Getenv("BANKML_BENCH_THREADS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("BANKML_BENCH_THREADS=%q: want a positive integer", s)
		}
		threads = n
	}
	for _, s := range []synthModel{
		{arch: "qwen3", preset: "tiny", typ: gguf.Q1_0, yarn: true, seed: 1},
		{arch: "qwen3", preset: "tiny", typ: gguf.Q2_0, yarn: true, seed: 2},
		{arch: "qwen3", preset: "tiny", typ: gguf.TQ2_0, yarn: true, seed: 3},
		{arch: "qwen3", preset: "tiny", typ: gguf.F16, yarn: true, seed: 4},
		{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.Q1_0, yarn: true, seed: 12},
		{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.Q2_0, yarn: true, seed: 11},
	} {
		b.Run(s.String(), func(b *testing.B) {
			p := loadPair(b, lib, s)
			np, gen := 64, 16
			if s.preset != "tiny" {
				np, gen = 32, 8 // seconds per token with portable kernels
			}
			prompt := p.tokenize(b, chatML("You are a helpful assistant.", longChat(2)))[:np]
			var bp, bd, rp, rd []float64
			for b.Loop() {
				c := newCtx(b, p.m, len(prompt)+gen, threads)
				t0 := time.Now()
				logits, err := c.Decode(prompt)
				if err != nil {
					b.Fatal(err)
				}
				tp := time.Since(t0)
				t0 = time.Now()
				for range gen - 1 {
					if logits, err = c.Decode([]int32{sample.Greedy(logits)}); err != nil {
						b.Fatal(err)
					}
				}
				td := time.Since(t0)
				c.Close()
				_, tm, err := p.ref.GreedyTimed(prompt, gen, threads)
				if err != nil {
					b.Fatal(err)
				}
				bp = append(bp, float64(len(prompt))/tp.Seconds())
				bd = append(bd, float64(gen-1)/td.Seconds())
				rp = append(rp, float64(len(prompt))/tm.Prompt.Seconds())
				rd = append(rd, tm.TokensPerSecond())
			}
			med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
			mbp, mbd, mrp, mrd := med(bp), med(bd), med(rp), med(rd)
			b.ReportMetric(mbp, "bankml-prompt-tok/s")
			b.ReportMetric(mrp, "ref-prompt-tok/s")
			b.ReportMetric(mbd, "bankml-decode-tok/s")
			b.ReportMetric(mrd, "ref-decode-tok/s")
			b.ReportMetric(mbp/mrp, "prompt-bankml/ref")
			b.ReportMetric(mbd/mrd, "decode-bankml/ref")
		})
	}
}

// BenchmarkBonsai8B loads a Bonsai-8B-shaped file ($BANKML_BENCH_MODEL,
// default /tmp/b8-Q1_0.gguf; see TestQwen3Bonsai8BMatchesReference for the
// command that makes it), decodes an 8-token prompt and 2 tokens in a
// context of the model's default size, and reports the load time (gguf.Open
// and Load: the warm cost when the file is in the page cache), the prompt and
// decode times, the KV cache held and the process's peak resident set
// (VmHWM), on $BANKML_BENCH_THREADS threads (default 2):
//
//	go test -run '^$' -bench Bonsai8B -benchtime 1x ./model/
func BenchmarkBonsai8B(b *testing.B) {
	path := bonsai8BPath(b)
	threads := 2
	if s := os.Getenv("BANKML_BENCH_THREADS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			threads = n
		}
	}
	prompt := make([]int32, 8)
	for i := range prompt {
		prompt[i] = int32(100 + i*4099) // ids inside the vocabulary; their values do not matter here
	}
	var load, pp, tg time.Duration
	var kv uint64
	for b.Loop() {
		t0 := time.Now()
		f, err := gguf.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		m, err := Load(f)
		if err != nil {
			b.Fatal(err)
		}
		load += time.Since(t0)
		size, _, _ := m.ContextSize(0)
		c, err := m.NewContext(size, threads)
		if err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		logits, err := c.Decode(prompt)
		if err != nil {
			b.Fatal(err)
		}
		pp += time.Since(t0)
		t0 = time.Now()
		for range 2 {
			if logits, err = c.Decode([]int32{sample.Greedy(logits)}); err != nil {
				b.Fatal(err)
			}
		}
		tg += time.Since(t0)
		kv = c.KVBytes()
		c.Close()
		f.Close()
	}
	n := float64(b.N)
	b.ReportMetric(load.Seconds()*1000/n, "load-ms")
	b.ReportMetric(float64(len(prompt))*n/pp.Seconds(), "prompt-tok/s")
	b.ReportMetric(2*n/tg.Seconds(), "decode-tok/s")
	b.ReportMetric(float64(kv)/(1<<20), "KV-MiB")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MiB")
}

// bonsai8BPath is the Bonsai-8B-shaped file the 8B benchmarks run on:
// $BANKML_BENCH_MODEL, default /tmp/b8-Q1_0.gguf; the benchmark is skipped
// when it is missing (see TestQwen3Bonsai8BMatchesReference for the command
// that makes it).
func bonsai8BPath(b *testing.B) string {
	path := os.Getenv("BANKML_BENCH_MODEL")
	if path == "" {
		path = "/tmp/b8-Q1_0.gguf"
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("%v (make it with bankml synth, see TestQwen3Bonsai8BMatchesReference)", err)
	}
	return path
}

// peakRSS is the process's peak resident set size in bytes (VmHWM of
// /proc/self/status), or 0 when unknown.
func peakRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// BenchmarkLoadBonsai8B times gguf.Open and Load (packing included) or
// LoadBackground (packing after it returns, as bankml run and serve load) of a
// Bonsai-8B-shaped file ($BANKML_BENCH_MODEL, default /tmp/b8-Q1_0.gguf) over
// and over: the warm load (the file in the page cache; the weights are
// mapped, not read).
//
//	go test -run '^$' -bench LoadBonsai8B ./model/
func BenchmarkLoadBonsai8B(b *testing.B) {
	path := bonsai8BPath(b)
	for _, l := range []struct {
		name string
		load func(*gguf.File) (*Model, error)
	}{{"Load", Load}, {"LoadBackground", LoadBackground}} {
		b.Run(l.name, func(b *testing.B) {
			for b.Loop() {
				f, err := gguf.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				m, err := l.load(f)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				m.Close()
				f.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkBatchedDecode8B times decode steps of 1, 2, 4 and 8 sequences in
// one forward pass (Runner.Decode, each sequence after an 8-token prompt)
// on the Bonsai-8B-shaped file of bonsai8BPath, on $BANKML_BENCH_THREADS
// threads (default 2), alternating the sequence counts round by round, and
// reports each count's aggregate decode tokens/s and its ratio to one
// sequence's (only ratios measured side by side count):
//
//	go test -run '^$' -bench BatchedDecode8B -benchtime 1x ./model/
func BenchmarkBatchedDecode8B(b *testing.B) {
	path := bonsai8BPath(b)
	threads := 2
	if s := os.Getenv("BANKML_BENCH_THREADS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			threads = n
		}
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m, err := Load(f)
	if err != nil {
		b.Fatal(err)
	}
	run, err := m.NewRunner(threads)
	if err != nil {
		b.Fatal(err)
	}
	defer run.Close()
	counts := []int{1, 2, 4, 8}
	const steps = 3
	// Eight sequences after an 8-token prompt each (one pass), cut back to
	// their prompts after every measurement.
	var all []Span
	for s := range counts[len(counts)-1] {
		c, err := run.NewContext(256)
		if err != nil {
			b.Fatal(err)
		}
		prompt := make([]int32, 8)
		for i := range prompt {
			prompt[i] = int32(100 + i*4099 + s*7)
		}
		all = append(all, Span{Ctx: c, Tokens: prompt, UBatch: 8, Outputs: 1})
	}
	if err := run.Decode(all); err != nil {
		b.Fatal(err)
	}
	tot := make([]time.Duration, len(counts))
	for b.Loop() {
		for round := range 2 {
			for k := range counts {
				ci := k
				if round == 1 {
					ci = len(counts) - 1 - k
				}
				spans := make([]Span, counts[ci])
				for s := range spans {
					spans[s] = Span{Ctx: all[s].Ctx, Tokens: []int32{int32(500 + s)}, UBatch: 1, Outputs: 1}
				}
				t0 := time.Now()
				for range steps {
					if err := run.Decode(spans); err != nil {
						b.Fatal(err)
					}
				}
				tot[ci] += time.Since(t0)
				for _, sp := range spans {
					if err := sp.Ctx.Truncate(8); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	for ci, n := range counts {
		tps := float64(n*steps*2*b.N) / tot[ci].Seconds()
		b.ReportMetric(tps, fmt.Sprintf("tok/s-%d-seqs", n))
		if ci > 0 {
			b.ReportMetric(tps/(float64(steps*2*b.N)/tot[0].Seconds()), fmt.Sprintf("x-%d-seqs", n))
		}
	}
}

// BenchmarkPromptTiny evaluates a 128-token prompt (two of the tiled
// attention kernel's 64-row blocks per KV head) on synth's tiny qwen3 shape
// in F16 (tinyBLAS's f16 tiles) and Q8_0, at every level this CPU has and
// with the reference, alternating within each iteration on the same file
// and thread count ($BANKML_BENCH_THREADS, default 1), and reports the
// median prompt rates and their ratios (the SIMD levels against generic, the
// Go twins of every kernel; bankml against the reference):
//
//	go test -run '^$' -bench PromptTiny -benchtime 5x ./model/
func BenchmarkPromptTiny(b *testing.B) {
	lib := refLib(b)
	threads := 1
	if s := os.Getenv("BANKML_BENCH_THREADS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("BANKML_BENCH_THREADS=%q: want a positive integer", s)
		}
		threads = n
	}
	levels := quant.Levels()
	for _, s := range []synthModel{
		{arch: "qwen3", preset: "tiny", typ: gguf.F16, yarn: true, seed: 4},
		{arch: "qwen3", preset: "tiny", typ: gguf.Q8_0, yarn: true, seed: 9},
	} {
		b.Run(s.String(), func(b *testing.B) {
			p := loadPair(b, lib, s)
			prompt := p.tokenize(b, chatML("You are a helpful assistant.", longChat(4)))
			if len(prompt) < 128 {
				b.Fatalf("the prompt is %d tokens, want 128", len(prompt))
			}
			prompt = prompt[:128]
			rates := make([][]float64, len(levels)+1) // per level, then the reference
			for b.Loop() {
				for li, l := range levels {
					p.m.Level = l // F16 and Q8_0 matrices are not repacked: any level runs them
					c := newCtx(b, p.m, len(prompt), threads)
					t0 := time.Now()
					if _, err := c.Decode(prompt); err != nil {
						b.Fatal(err)
					}
					rates[li] = append(rates[li], float64(len(prompt))/time.Since(t0).Seconds())
					c.Close()
				}
				_, tm, err := p.ref.GreedyTimed(prompt, 1, threads)
				if err != nil {
					b.Fatal(err)
				}
				rates[len(levels)] = append(rates[len(levels)], float64(len(prompt))/tm.Prompt.Seconds())
			}
			p.m.Level = levels[len(levels)-1]
			med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
			gen, ref := med(rates[0]), med(rates[len(levels)])
			for li, l := range levels {
				v := med(rates[li])
				b.ReportMetric(v, l.String()+"-prompt-tok/s")
				if li > 0 {
					b.ReportMetric(v/gen, l.String()+"/generic")
				}
				b.ReportMetric(v/ref, l.String()+"/ref")
			}
			b.ReportMetric(ref, "ref-prompt-tok/s")
		})
	}
}
