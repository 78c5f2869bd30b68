//go:build !nobench

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"strconv"
	"strings"
	"time"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/membw"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/tokenizer"
)

// benchModelCmd times whole forward passes of bankml and of the reference
// (libllama in-process, haswell variant) on Bonsai-8B-shaped synthetic files
// (Qwen3-8B shapes, the real Qwen3 vocabulary, one weight type for every
// matrix): the prompt (one llama_decode of Prompt tokens) and the decode
// (Gen-1 one-token decodes after it, greedy), at each thread count, bankml's
// through its engine (a greedy request on one slot, timed by the engine's
// Timings as llama-server times a slot),
// alternating bankml and the reference round by round on the same file and
// the same token ids (docs/PERFORMANCE.md: only ratios measured side by
// side count). It also checks that both generate the same tokens, and measures
// the memory read bandwidth that bounds a decoded token from below.
type benchModelCmd struct {
	match       quant.Match // from bench's --match (benchCmd.AfterApply)
	Dir         string      `name:"dir" help:"Folder of the files b8-Q1_0.gguf, b8-Q2_0.gguf, b8-TQ2_0.gguf; a missing one is written there with bankml synth (--arch qwen3 --preset bonsai-8b --vocab qwen3, seed 0). Default: the system's temporary folder." type:"path"`
	Types       string      `name:"types" default:"q1_0,q2_0,tq2_0" help:"Comma-separated weight types (q1_0, q2_0, tq2_0)."`
	Threads     string      `name:"threads" default:"1,2" help:"Comma-separated thread counts."`
	Rounds      int         `name:"rounds" default:"3" help:"Rounds; each runs bankml and the reference once per thread count, alternating which goes first."`
	Prompt      int         `name:"prompt" default:"128" help:"Prompt tokens (one micro-batch; at most 512)."`
	Gen         int         `name:"gen" default:"64" help:"Generated tokens (the decode timing covers the Gen-1 after the first)."`
	RefQ2Prompt int         `name:"ref-q2-prompt" default:"16" help:"Prompt tokens for the reference on Q2_0 (its scalar kernel takes seconds per token); bankml's Q2_0 prompt keeps --prompt."`
	RefQ2Gen    int         `name:"ref-q2-gen" default:"4" help:"Generated tokens for the reference on Q2_0."`
	RefQ2Rounds int         `name:"ref-q2-rounds" default:"1" help:"Rounds of the reference on Q2_0 (bankml keeps --rounds)."`
	BWMiB       int         `name:"bw-mib" default:"1024" help:"Buffer size in MiB for the bandwidth measurement."`
}

// benchAllCmd is `bankml bench`: the kernel table, then the model table,
// in one process (docs/PERFORMANCE.md comes from one such run).
type benchAllCmd struct {
	Kernels benchKernelsCmd `embed:"" prefix:"kernels-"`
	Model   benchModelCmd   `embed:"" prefix:"model-"`
}

func (b *benchAllCmd) Run(stdout io.Writer, sigs *signals) error {
	start := time.Now()
	fmt.Fprintf(stdout, "bankml bench, %s UTC\n\n", start.UTC().Format("2006-01-02 15:04"))
	if err := b.Kernels.Run(stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	if err := b.Model.Run(stdout, sigs); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nbankml bench: %.0f s\n", time.Since(start).Seconds())
	return nil
}

// benchModelTypes are the weight types bench model knows, with their file
// names.
var benchModelTypes = []gguf.GGMLType{gguf.Q1_0, gguf.Q2_0, gguf.TQ2_0}

func (b *benchModelCmd) Run(stdout io.Writer, sigs *signals) error {
	if err := checkRanges(
		intRange{"--rounds", b.Rounds, 1, inf, ""},
		intRange{"--prompt", b.Prompt, 1, model.NUbatch, "one micro-batch"},
		intRange{"--gen", b.Gen, 2, inf, ""},
		intRange{"--ref-q2-prompt", b.RefQ2Prompt, 1, model.NUbatch, "one micro-batch"},
		intRange{"--ref-q2-gen", b.RefQ2Gen, 2, inf, ""},
		intRange{"--ref-q2-rounds", b.RefQ2Rounds, 1, inf, ""},
		intRange{"--bw-mib", b.BWMiB, 1, inf, ""},
	); err != nil {
		return fmt.Errorf("bench model: %w", err)
	}
	level, err := quant.DefaultLevel()
	if err != nil {
		return fmt.Errorf("bench model: %w", err)
	}
	types, err := pick(benchModelTypes, b.Types, func(t gguf.GGMLType) string { return t.String() })
	if err != nil {
		return fmt.Errorf("bench model: --types: %w", err)
	}
	var threads []int
	for _, s := range strings.Split(b.Threads, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("bench model: --threads: %q is not an integer", s)
		}
		if err := checkRanges(intRange{"--threads", n, 1, maxThreads, ""}); err != nil {
			return fmt.Errorf("bench model: %w", err)
		}
		threads = append(threads, n)
	}
	dir := b.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	lib, err := reference.Load()
	if err != nil {
		if errors.Is(err, reference.ErrNotInstalled) {
			return fmt.Errorf("bench model: the reference is absent, nothing to compare with: %w", err)
		}
		return fmt.Errorf("bench model: %w", err)
	}
	host, _ := os.Hostname()
	fmt.Fprintf(stdout, "bench model: Bonsai-8B-shaped files in %s, bankml at level %s against the reference (%s backend), %d rounds alternating, %s, GOMAXPROCS %d, %s\n\n",
		dir, level, lib.CPUBackend(), b.Rounds, runtime.Version(), runtime.GOMAXPROCS(0), host)

	bw := b.bandwidth(threads)
	var rows []benchModelRow
	for _, typ := range types {
		path := filepath.Join(dir, "b8-"+strings.ToUpper(typ.String())+".gguf")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stdout, "%s is missing: writing it (bankml synth %s --arch qwen3 --preset bonsai-8b --type %s --vocab qwen3)\n", path, path, typ)
			sc := &synthCmd{Out: path, Arch: "qwen3", Preset: "bonsai-8b", Type: typ.String(), Vocab: "qwen3"}
			if err := sc.Run(stdout, sigs); err != nil {
				return fmt.Errorf("bench model: %w", err)
			}
		}
		r, err := b.file(stdout, lib, path, typ, threads, bw)
		if err != nil {
			return fmt.Errorf("bench model: %s: %w", path, err)
		}
		rows = append(rows, r...)
	}
	b.table(stdout, rows, bw, threads)
	return nil
}

// benchModelRow is one file at one thread count.
type benchModelRow struct {
	typ                gguf.GGMLType
	threads            int
	refPrompt, refGen  int // the reference's token counts (Q2_0: fewer)
	refRounds          int
	bp, bd, rp, rd     []float64 // tokens/s: bankml prompt, decode; reference prompt, decode
	bpc, bdc, rpc, rdc []float64 // process CPU seconds per token, the same four
	same, compared     int       // leading generated tokens equal / compared
	refToks            []int32   // the reference's tokens of its first round
	weightBytes        int64     // bytes of the projections streamed per decoded token
	packedBytes        int
	load               time.Duration
	dispatchNs         float64 // one empty pool.Run on this many threads
	dispatchesPerToken int
}

// bandwidth measures the read bandwidth (bytes/s medians) per thread count.
func (b *benchModelCmd) bandwidth(threads []int) map[int][]float64 {
	buf := make([]byte, b.BWMiB<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12)
	}
	out := map[int][]float64{}
	for _, th := range threads {
		membw.Measure(buf, th)
		for range 9 {
			out[th] = append(out[th], membw.Measure(buf, th))
		}
	}
	return out
}

// file runs every round on one file.
func (b *benchModelCmd) file(stdout io.Writer, lib *reference.Lib, path string, typ gguf.GGMLType, threads []int, bw map[int][]float64) ([]benchModelRow, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	am, err := admit.Open(path, admit.Options{Pin: admit.AllowUnpinned})
	if errors.Is(err, admit.ErrRefused) { // exit 2, as openModel
		return nil, cannotRun(err)
	}
	if err != nil {
		return nil, err
	}
	defer am.Close()
	m := am.Model
	packedBytes, err := m.WaitPacked()
	if err != nil {
		return nil, err
	}
	load := time.Since(t0)
	rss := residentBytes()
	rm, err := lib.LoadModel(path)
	if err != nil {
		return nil, err
	}
	defer rm.Close()
	var weightBytes int64
	for _, l := range m.Linears() {
		for _, p := range l.Planes {
			weightBytes += int64(p.Rows) * int64(p.RowBytes())
		}
	}
	fmt.Fprintf(stdout, "%s (%.0f MiB): bankml admitted it (guard, sha256, load) in %.1fs, packed copies %.0f MiB, process resident set then %.0f MiB; %.0f MiB of projection weights per token\n",
		filepath.Base(path), float64(st.Size())/(1<<20), load.Seconds(), float64(packedBytes)/(1<<20), float64(rss)/(1<<20), float64(weightBytes)/(1<<20))

	// Token ids spread over the vocabulary (their values do not matter for
	// the timing; both runtimes get the same ones).
	prompt := make([]int32, b.Prompt)
	for i := range prompt {
		prompt[i] = int32((100 + i*4099) % m.HP.NVocab)
	}
	refPrompt, refGen, refRounds := prompt, b.Gen, b.Rounds
	if typ == gguf.Q2_0 {
		refPrompt, refGen, refRounds = prompt[:min(b.RefQ2Prompt, len(prompt))], b.RefQ2Gen, b.RefQ2Rounds
	}
	var rows []benchModelRow
	for _, th := range threads {
		row, err := b.threadRow(m, am.Tokenizer, rm, prompt, refPrompt, refGen, refRounds, typ, th, weightBytes, packedBytes, load)
		if err != nil {
			return nil, err
		}
		fmt.Fprintln(stdout, b.rowLine(row, bw)) // as each finishes: a cut run keeps its rows
		rows = append(rows, row)
	}
	return rows, nil
}

// threadRow runs every round of one file at one thread count: bankml through an engine of its own
// (closed before the next thread count runs, so that no idle workers remain), the reference alternating.
func (b *benchModelCmd) threadRow(m *model.Model, tok tokenizer.Tokenizer, rm *reference.Model, prompt, refPrompt []int32, refGen, refRounds int,
	typ gguf.GGMLType, th int, weightBytes int64, packedBytes int, load time.Duration) (benchModelRow, error) {
	row := benchModelRow{typ: typ, threads: th, refPrompt: len(refPrompt), refGen: refGen, refRounds: refRounds,
		weightBytes: weightBytes, packedBytes: packedBytes, load: load, dispatchesPerToken: m.HP.NLayer*9 + 1}
	row.dispatchNs = dispatchCost(th)
	// One engine slot holding the longest run; each request evaluates its whole prompt.
	e, err := engine.New(m, tok, nil, engine.Options{NCtx: len(prompt) + max(b.Gen, refGen), Threads: th})
	if err != nil {
		return row, err
	}
	defer e.Close()
	// Warm-up, untimed: page in the weights for both.
	if _, err := benchBankml(e, prompt[:1], 2); err != nil {
		return row, err
	}
	if _, err := benchRef(rm, refPrompt[:1], 2, th); err != nil {
		return row, err
	}
	var bankmlToks []int32
	for round := range b.Rounds {
		runRef := round < refRounds
		order := []bool{round%2 == 0, round%2 != 0} // true: bankml
		for _, bankmlTurn := range order {
			if bankmlTurn {
				g, err := benchBankml(e, prompt, b.Gen)
				if err != nil {
					return row, err
				}
				if round == 0 {
					bankmlToks = g.toks
				}
				g.add(&row.bp, &row.bd, &row.bpc, &row.bdc)
				continue
			}
			if !runRef {
				continue
			}
			g, err := benchRef(rm, refPrompt, refGen, th)
			if err != nil {
				return row, err
			}
			g.add(&row.rp, &row.rd, &row.rpc, &row.rdc)
			if round == 0 {
				row.refToks = g.toks
			}
		}
	}
	// Token identity: bankml's greedy tokens against the reference's, on
	// the reference's prompt and length.
	bt := bankmlToks
	if len(refPrompt) != len(prompt) || refGen != b.Gen {
		g, err := benchBankml(e, refPrompt, refGen)
		if err != nil {
			return row, err
		}
		bt = g.toks
	}
	row.compared = len(row.refToks)
	row.same = 0
	for i := range row.refToks {
		if i >= len(bt) || bt[i] != row.refToks[i] { // bankml's engine stops at an end-of-generation token
			break
		}
		row.same++
	}
	return row, nil
}

// greedyRun is one timed greedy generation: the tokens, and the wall-clock
// and process CPU time of the prompt's decode and of the one-token decodes
// after it.
type greedyRun struct {
	toks                     []int32
	nPrompt                  int
	wallP, wallD, cpuP, cpuD time.Duration
}

// add appends the run's tokens/s and CPU seconds per token.
func (g *greedyRun) add(p, d, pc, dc *[]float64) {
	nd := float64(len(g.toks) - 1)
	*p = append(*p, float64(g.nPrompt)/g.wallP.Seconds())
	*d = append(*d, nd/g.wallD.Seconds())
	*pc = append(*pc, g.cpuP.Seconds()/float64(g.nPrompt))
	*dc = append(*dc, g.cpuD.Seconds()/nd)
}

// timedGreedy decodes prompt, then gen-1 single tokens, each the argmax of
// the last logits (sample.Greedy: the first maximum, llama_sampler_greedy's
// rule), timing both phases by the wall clock and by the process's CPU time
// (every thread of the process: the runtime under test is the only one
// working while it runs).
func timedGreedy(decode func([]int32) ([]float32, error), prompt []int32, gen int) (greedyRun, error) {
	g := greedyRun{nPrompt: len(prompt)}
	t0, c0 := time.Now(), processCPU()
	logits, err := decode(prompt)
	if err != nil {
		return g, err
	}
	g.wallP, g.cpuP = time.Since(t0), processCPU()-c0
	g.toks = []int32{sample.Greedy(logits)}
	t0, c0 = time.Now(), processCPU()
	for len(g.toks) < gen {
		if logits, err = decode(g.toks[len(g.toks)-1:]); err != nil {
			return g, err
		}
		g.toks = append(g.toks, sample.Greedy(logits))
	}
	g.wallD, g.cpuD = time.Since(t0), processCPU()-c0
	return g, nil
}

// benchGreedy are the sampling parameters of bench's greedy requests: the
// temperature stage alone at 0, which keeps the most likely token.
func benchGreedy() sample.Params {
	p := sample.DefaultParams()
	p.Temp, p.Seed, p.Samplers = 0, 1, []sample.Type{sample.Temperature}
	return p
}

// benchBankml runs a greedy request of prompt and gen tokens on e's slot,
// the whole prompt evaluated (no cache reuse): the wall-clock times are the
// engine's Timings (prompt_ms: the prompt's decode to the first token;
// predicted_ms: the gen-1 decodes after it), the CPU times the process's
// over the same spans (from the request to the first token, from there to
// the end). The engine stops early at an end-of-generation token.
func benchBankml(e *engine.Engine, prompt []int32, gen int) (greedyRun, error) {
	g := greedyRun{nPrompt: len(prompt)}
	c0 := processCPU()
	var c1 time.Duration
	res, err := e.Generate(context.Background(), engine.Request{
		Prompt: engine.Prompt{Tokens: prompt}, Sampling: benchGreedy(), NPredict: gen, Slot: -1,
	}, func(t engine.Token) error {
		if c1 == 0 {
			c1 = processCPU()
		}
		return nil
	})
	if err != nil {
		return g, err
	}
	c2 := processCPU()
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	g.toks = res.Tokens
	g.wallP, g.wallD = ms(res.Timings.PromptMS), ms(res.Timings.PredictedMS)
	g.cpuP, g.cpuD = c1-c0, c2-c1
	return g, nil
}

// benchRef runs timedGreedy in a fresh reference session of len(prompt)+gen
// positions on threads threads (llama_context_default_params, the prompt in
// one llama_decode: what GreedyTimed and llama-server do).
func benchRef(rm *reference.Model, prompt []int32, gen, threads int) (greedyRun, error) {
	s, err := rm.NewSession(len(prompt)+gen, threads)
	if err != nil {
		return greedyRun{}, err
	}
	defer s.Close()
	return timedGreedy(s.Decode, prompt, gen)
}

// nopBenchJob is an empty parallel.Job.
type nopBenchJob struct{}

func (*nopBenchJob) Do(_, _, _ int) {}

// dispatchCost is the median time of one empty Run on a pool of threads
// workers (chunks as MatMul hands out for a 4096-row matrix): the fixed
// cost the pool adds to each matmul and attention call.
func dispatchCost(threads int) float64 {
	p := parallel.New(threads)
	defer p.Close()
	var j nopBenchJob
	var v []float64
	for range 9 {
		t0 := time.Now()
		for range 2000 {
			p.Run(4096, max(1, 4096/(16*threads)), &j)
		}
		v = append(v, float64(time.Since(t0).Nanoseconds())/2000)
	}
	return minMedMax(v)[1]
}

// fmtMMM formats min / median / max (or "-" for no samples).
func fmtMMM(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	mm := minMedMax(v)
	return fmt.Sprintf("%.2f / %.2f / %.2f", mm[0], mm[1], mm[2])
}

// rowLine formats one row of the markdown table (bw: the bandwidth samples
// per thread count).
func (b *benchModelCmd) rowLine(r benchModelRow, bw map[int][]float64) string {
	bwMed := minMedMax(bw[r.threads])[1]
	floor := bwMed / float64(r.weightBytes)
	ratio := func(a, b []float64) string {
		if len(a) == 0 || len(b) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f×", minMedMax(a)[1]/minMedMax(b)[1])
	}
	refNote := ""
	if r.refPrompt != b.Prompt || r.refGen != b.Gen || r.refRounds != b.Rounds {
		refNote = fmt.Sprintf(" (%d-token prompt, %d tokens, %d round)", r.refPrompt, r.refGen, r.refRounds)
	}
	bdMed := minMedMax(r.bd)[1]
	nsPerByte := 1e9 / bdMed / float64(r.weightBytes)
	dispatch := float64(r.dispatchesPerToken) * r.dispatchNs
	return fmt.Sprintf("| %s | %d | %s | %s%s | %s | %s | %s | %s%s | %s | %s | %.1f | %.4f | %d × %.2f µs = %.2f ms (%.1f%%) | %d/%d |",
		r.typ, r.threads, fmtMMM(r.bp), fmtMMM(r.rp), refNote, ratio(r.bp, r.rp), ratio(r.rpc, r.bpc),
		fmtMMM(r.bd), fmtMMM(r.rd), refNote, ratio(r.bd, r.rd), ratio(r.rdc, r.bdc),
		floor, nsPerByte, r.dispatchesPerToken, r.dispatchNs/1e3, dispatch/1e6, 100*dispatch/(1e9/bdMed), r.same, r.compared)
}

// table prints the markdown table and the notes.
func (b *benchModelCmd) table(stdout io.Writer, rows []benchModelRow, bw map[int][]float64, threads []int) {
	fmt.Fprintf(stdout, "\n| type | threads | bankml prompt tok/s | ref prompt tok/s | prompt ratio | prompt CPU ratio | bankml decode tok/s | ref decode tok/s | decode ratio | decode CPU ratio | decode floor tok/s | bankml ns/weight byte | dispatch per token | tokens equal |\n")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintln(stdout, b.rowLine(r, bw))
	}
	fmt.Fprintf(stdout, "\nmemory read bandwidth (%d MiB buffer, 9 samples), GB/s min / median / max:", b.BWMiB)
	for _, th := range threads {
		fmt.Fprintf(stdout, " %d thread(s) %s;", th, fmtMMM(scale(bw[th], 1e-9)))
	}
	fmt.Fprintf(stdout, "\n\nprompt: one decode of --prompt %d token ids (one micro-batch); decode: the %d one-token decodes after it, greedy\n"+
		"(tok/s = (gen-1)/time, as the reference's GreedyTimed counts). Ratios are bankml's median over the reference's;\n"+
		"CPU ratios are the reference's median process CPU seconds per token over bankml's (spinning workers included:\n"+
		"on a machine shared with other work they hold where wall-clock ratios follow each runtime's share of the cores).\n"+
		"decode floor: the median bandwidth over the bytes of the projection weights (every matrix but token_embd, read\n"+
		"once per token). ns/weight byte: bankml's median decode token time over those bytes. dispatch: pool Runs per\n"+
		"decoded token (7 matmul Runs, 1 attention Run and 1 swiglu Run per layer, 1 output) times one empty Run's median on that many\n"+
		"threads, and its share of bankml's median decode token. tokens equal: leading greedy tokens of bankml equal to\n"+
		"the reference's (its first round; for Q2_0 on its shorter prompt).\n", b.Prompt, b.Gen-1)
}

func scale(v []float64, f float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * f
	}
	return out
}

// residentBytes is the process's resident set (VmRSS of /proc/self/status),
// 0 when unknown.
func residentBytes() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
