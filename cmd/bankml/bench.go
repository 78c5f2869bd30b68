//go:build !nobench

package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/membw"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/quant"
)

type benchCmd struct {
	matchFlag
	All     benchAllCmd     `cmd:"" default:"withargs" help:"The default: bench kernels, then bench model, in one invocation (their flags prefixed --kernels- and --model-)."`
	Kernels benchKernelsCmd `cmd:"" help:"Time bankml's Q1_0, Q2_0 and TQ2_0 matvec kernels (each CPU level) next to the reference's exported vec_dot and its mul_mat, alternating in one process, on Qwen3-8B projection shapes; plus the memory read bandwidth floor."`
	Serve   benchServeCmd   `cmd:"" help:"Time 1, 2, 4 and 8 concurrent greedy streams through the engine (one forward pass per step over all of them) on Bonsai-8B-shaped files, beside the reference decoding as many sequences in one context; every answer checked against its single-stream answer."`
	Model   benchModelCmd   `cmd:"" help:"Time prompt and decode tokens/s of bankml and the reference, alternating in one process, on Bonsai-8B-shaped Q1_0, Q2_0 and TQ2_0 files (made with synth when missing), at 1 and 2 threads; plus the bandwidth floor and the pool's dispatch cost per token."`
}

// AfterApply resolves --match for the chosen subcommand (a refused variant
// is a usage error) and points the reference at the same variant
// (BANKML_REFERENCE_VARIANT), so that both sides of each ratio compute the
// same chains.
func (b *benchCmd) AfterApply() error {
	m, err := b.resolve("bench", os.Stderr)
	if err != nil {
		return err
	}
	b.All.Kernels.match, b.All.Model.match, b.Kernels.match, b.Model.match = m, m, m, m
	return os.Setenv(reference.EnvVariant, m.Variant.String())
}

// benchKernelsCmd times, for each low-bit format and Qwen3-8B projection
// shape, bankml's matvec (Work.MatMul on a Repack'ed matrix, one column, one
// thread) at every CPU level against the reference's ggml_vec_dot_* called
// row by row and its ggml_mul_mat graph (one thread), in alternating samples
// (docs/PERFORMANCE.md: ratios measured side by side hold where absolute
// times drift), and the machine's memory read bandwidth.
type benchKernelsCmd struct {
	match   quant.Match // from bench's --match (benchCmd.AfterApply)
	Rounds  int         `name:"rounds" default:"9" help:"Rounds; each times every contender once, in rotating order."`
	RefRows int         `name:"ref-rows" default:"1024" help:"Rows per sample for the slow contenders (the reference's vec_dot called row by row, bankml's generic level): the first RefRows rows of the same matrix."`
	Types   string      `name:"types" default:"q1_0,q2_0,tq2_0" help:"Comma-separated weight types."`
	Shapes  string      `name:"shapes" default:"q,kv,o,gate_up,down,output" help:"Comma-separated projection shapes of Qwen3-8B (q, kv, o, gate_up, down, output)."`
	BWBytes int         `name:"bw-mib" default:"1024" help:"Buffer size in MiB for the bandwidth measurement (0: skip it)."`
}

// benchShape is one Qwen3-8B projection: rows (ne[1]) by row length (ne[0]).
type benchShape struct {
	name       string
	rows, cols int
}

var benchShapes = []benchShape{
	{"q", 4096, 4096}, {"kv", 1024, 4096}, {"o", 4096, 4096},
	{"gate_up", 12288, 4096}, {"down", 4096, 12288}, {"output", 151936, 4096},
}

// benchTypes are the formats under test with the reference's exported
// vec_dot and bankml's quantizer of its activation format.
type benchType struct {
	typ      gguf.GGMLType
	ref      string
	actBlock int
	actSize  int
	actQuant func(x []float32, dst []byte)
}

var benchTypes = []benchType{
	{gguf.Q1_0, "ggml_vec_dot_q1_0_q8_0", quant.QK8_0, quant.BlockQ8_0Size, quant.QuantizeRowQ8_0},
	{gguf.Q2_0, "ggml_vec_dot_q2_0_q8_0", quant.QK8_0, quant.BlockQ8_0Size, quant.QuantizeRowQ8_0},
	{gguf.TQ2_0, "ggml_vec_dot_tq2_0_q8_K", quant.QK_K, quant.BlockQ8_KSize, quant.QuantizeRowQ8_K},
}

func (b *benchKernelsCmd) Run(stdout io.Writer) error {
	if err := checkRanges(
		intRange{"--rounds", b.Rounds, 1, inf, ""},
		intRange{"--ref-rows", b.RefRows, 1, inf, ""},
		intRange{"--bw-mib", b.BWBytes, 0, inf, "0: skip the bandwidth measurement"},
	); err != nil {
		return fmt.Errorf("bench kernels: %w", err)
	}
	if _, err := quant.LevelFromEnv(); err != nil {
		return fmt.Errorf("bench kernels: %w", err)
	}
	shapes, err := pick(benchShapes, b.Shapes, func(s benchShape) string { return s.name })
	if err != nil {
		return fmt.Errorf("bench kernels: --shapes: %w", err)
	}
	types, err := pick(benchTypes, b.Types, func(t benchType) string { return t.typ.String() })
	if err != nil {
		return fmt.Errorf("bench kernels: --types: %w", err)
	}
	k, err := reference.LoadKernels()
	if err != nil {
		if errors.Is(err, reference.ErrNotInstalled) {
			return fmt.Errorf("bench kernels: the reference is absent, nothing to compare with: %w", err)
		}
		return fmt.Errorf("bench kernels: %w", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	levels := quant.Levels()
	fmt.Fprintf(stdout, "bench kernels: %d rounds alternating bankml (levels %v) and the reference (%s), one thread, ns per weight block (min / median / max)\n\n", b.Rounds, levels, k.Variant())
	var hdr, sep strings.Builder
	hdr.WriteString("| type | shape | rows × cols | blocks/row |")
	for _, l := range levels {
		fmt.Fprintf(&hdr, " bankml %s |", l)
	}
	hdr.WriteString(" ref vec_dot | ref mul_mat | vec_dot / best | mul_mat / best | mul_mat / best (minima) | equal |")
	for range strings.Count(hdr.String(), "|") - 1 {
		sep.WriteString("|---")
	}
	sep.WriteString("|")
	fmt.Fprintln(stdout, hdr.String())
	fmt.Fprintln(stdout, sep.String())
	for _, bt := range types {
		ref, err := k.VecDotKRaw(bt.ref)
		if err != nil {
			return fmt.Errorf("bench kernels: %w", err)
		}
		for _, sh := range shapes {
			row, err := b.kernelRow(k, bt.typ, bt.actBlock, bt.actSize, bt.actQuant, ref, sh, levels)
			if err != nil {
				return fmt.Errorf("bench kernels: %s %s: %w", bt.typ, sh.name, err)
			}
			fmt.Fprintln(stdout, row)
		}
	}
	fmt.Fprintf(stdout, "\nbankml: Work.MatMul of one activation column (its quantization included) on the Repack'ed matrix,\n"+
		"all rows (generic: the plain kernels on the first --ref-rows rows). ref vec_dot: the exported kernel called\n"+
		"row by row through purego on the first --ref-rows rows (its ~0.3 µs per call included, not subtracted);\n"+
		"ref mul_mat: ggml_graph_compute_with_ctx of the whole mul_mat on 1 thread (activation quantization\n"+
		"included). Each timed sample follows an untimed run of the same contender. Ratios are of medians (the last of minima: the least disturbed samples on a shared machine), the reference's time over bankml's best level. equal: rows checked\n"+
		"whose result has the reference vec_dot's bits, at every level. Weights: random codes with f16 scales\n"+
		"of real magnitudes; activations gaussian (seeded, the same every run).\n")
	if b.BWBytes > 0 {
		if err := b.bandwidth(stdout); err != nil {
			return err
		}
	}
	return nil
}

// pick selects the items named in the comma-separated list.
func pick[T any](all []T, list string, name func(T) string) ([]T, error) {
	var out []T
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		i := slices.IndexFunc(all, func(t T) bool { return strings.EqualFold(name(t), s) })
		if i < 0 {
			var names []string
			for _, t := range all {
				names = append(names, name(t))
			}
			return nil, fmt.Errorf("unknown %q (want some of %s)", s, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

//lint:ignore U1000 a sink: the reference calls must not be optimised away
var benchSink float32

// randWeights fills rows of typ with random codes and f16 scales of real
// magnitudes (|d| in [2^-9, 2^-3)).
func randWeights(rng *rand.Rand, typ gguf.GGMLType, rows, cols int) []byte {
	bs, ts := typ.BlockSize(), typ.TypeSize()
	nb := rows * cols / bs
	w := make([]byte, nb*ts)
	for i := 0; i+8 <= len(w); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			w[i+j] = byte(v >> (8 * j))
		}
	}
	dOff := 0
	if typ == gguf.TQ2_0 {
		dOff = 64
	}
	for b := range nb {
		h := uint16(rng.IntN(2))<<15 | uint16(0x1800+rng.IntN(0x1800))
		w[b*ts+dOff], w[b*ts+dOff+1] = byte(h), byte(h>>8)
	}
	return w
}

// kernelRow measures one type at one shape and formats its table row.
func (b *benchKernelsCmd) kernelRow(k *reference.Kernels, typ gguf.GGMLType, actBlock, actSize int,
	actQuant func([]float32, []byte), ref func(n int, x, y []byte) float32, sh benchShape, levels []quant.Level) (string, error) {
	rng := rand.New(rand.NewPCG(uint64(typ), uint64(sh.rows*sh.cols)))
	w := randWeights(rng, typ, sh.rows, sh.cols)
	m := &quant.Matrix{Name: sh.name, Type: typ, Rows: sh.rows, Cols: sh.cols, Data: w}
	if _, err := m.Repack(); err != nil {
		return "", err
	}
	refRows := min(b.RefRows, sh.rows)
	sub := &quant.Matrix{Name: sh.name, Type: typ, Rows: refRows, Cols: sh.cols, Data: w[:refRows*m.RowBytes()]}
	x := make([]float32, sh.cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	a := make([]byte, sh.cols/actBlock*actSize)
	actQuant(x, a)
	nb := sh.cols / typ.BlockSize()
	rb := m.RowBytes()

	works := make([]*quant.Work, len(levels))
	outs := make([][]float32, len(levels))
	for i, l := range levels {
		var err error
		if works[i], err = quant.NewWork(l, nil); err != nil {
			return "", err
		}
		outs[i] = make([]float32, sh.rows)
	}
	g, err := k.NewMulMatGraph(int32(typ), sh.rows, sh.cols, 1, len(w))
	if err != nil {
		return "", err
	}
	defer g.Close()
	if err := g.SetWeights(w); err != nil {
		return "", err
	}
	if err := g.SetInput(x); err != nil {
		return "", err
	}

	// Contenders: each level, the reference's vec_dot, its mul_mat graph.
	type contender struct {
		run    func()
		blocks int // blocks per sample
	}
	var cs []contender
	for i, l := range levels {
		mm := m
		if l == quant.LevelGeneric {
			mm = sub
		}
		cs = append(cs, contender{func() { works[i].MatMul(mm, x, 1, outs[i][:mm.Rows]) }, mm.Rows * nb})
	}
	cs = append(cs, contender{func() {
		for r := range refRows {
			benchSink += ref(sh.cols, w[r*rb:(r+1)*rb], a)
		}
	}, refRows * nb})
	var graphErr error
	cs = append(cs, contender{func() {
		if err := g.Compute(1); err != nil {
			graphErr = err
		}
	}, sh.rows * nb})

	// Warm-up and the bit check against vec_dot.
	for _, c := range cs {
		c.run()
	}
	if graphErr != nil {
		return "", graphErr
	}
	equal, checked := 0, 0
	gout := make([]float32, sh.rows)
	g.Output(gout)
	for r := range refRows {
		want := ref(sh.cols, w[r*rb:(r+1)*rb], a)
		ok := math.Float32bits(gout[r]) == math.Float32bits(want)
		for i := range levels {
			ok = ok && math.Float32bits(outs[i][r]) == math.Float32bits(want)
		}
		checked++
		if ok {
			equal++
		}
	}
	samples := make([][]float64, len(cs))
	for round := range b.Rounds {
		for i := range cs {
			c := cs[(i+round)%len(cs)]
			// An untimed run first: every contender is timed warm (its data
			// in whatever cache holds it, AVX-512 units powered up), as in a
			// forward pass where the matmuls follow each other.
			c.run()
			t0 := time.Now()
			c.run()
			samples[(i+round)%len(cs)] = append(samples[(i+round)%len(cs)], float64(time.Since(t0).Nanoseconds())/float64(c.blocks))
		}
	}
	var s strings.Builder
	fmt.Fprintf(&s, "| %s | %s | %d × %d | %d |", typ, sh.name, sh.rows, sh.cols, nb)
	best, bestMin := math.Inf(1), math.Inf(1)
	for i := range levels {
		mm := minMedMax(samples[i])
		best, bestMin = min(best, mm[1]), min(bestMin, mm[0])
		fmt.Fprintf(&s, " %.2f / %.2f / %.2f |", mm[0], mm[1], mm[2])
	}
	rv, rg := minMedMax(samples[len(levels)]), minMedMax(samples[len(levels)+1])
	fmt.Fprintf(&s, " %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.1f× | %.1f× | %.1f× | %d/%d |",
		rv[0], rv[1], rv[2], rg[0], rg[1], rg[2], rv[1]/best, rg[1]/best, rg[0]/bestMin, equal, checked)
	return s.String(), nil
}

// bandwidth prints the memory read bandwidth on 1 and 2 goroutines.
func (b *benchKernelsCmd) bandwidth(stdout io.Writer) error {
	buf := make([]byte, b.BWBytes<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12)
	}
	runtime.UnlockOSThread()
	defer runtime.LockOSThread()
	fmt.Fprintf(stdout, "\nmemory read bandwidth (%d MiB buffer, %d rounds), GB/s min / median / max, and the floor it puts under\none weight block streamed once (ns/block = block bytes / bandwidth):\n\n", b.BWBytes, b.Rounds)
	fmt.Fprintln(stdout, "| threads | GB/s | Q1_0 floor (18 B) | Q2_0 floor (18 B) | TQ2_0 floor (66 B) |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|")
	for _, th := range []int{1, 2} {
		var v []float64
		membw.Measure(buf, th)
		for range b.Rounds {
			v = append(v, membw.Measure(buf, th)/1e9)
		}
		mm := minMedMax(v)
		fmt.Fprintf(stdout, "| %d | %.1f / %.1f / %.1f | %.2f ns | %.2f ns | %.2f ns |\n", th, mm[0], mm[1], mm[2],
			18/mm[1], 18/mm[1], 66/mm[1])
	}
	return nil
}

// minMedMax returns the minimum, median (the upper one for an even count)
// and maximum of v.
func minMedMax(v []float64) [3]float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return [3]float64{s[0], s[len(s)/2], s[len(s)-1]}
}

// Help implements kong.HelpProvider: `bankml bench` with flags runs bench all, whose flags kong lists under
// `bench all --help` only; bench's own help names them.
func (benchCmd) Help() string {
	return "bankml bench alone runs bench all, which takes bench kernels' flags prefixed --kernels- (" +
		strings.Join(flagNames(benchKernelsCmd{}, "--kernels-"), ", ") + ") and bench model's prefixed --model- (" +
		strings.Join(flagNames(benchModelCmd{}, "--model-"), ", ") + "): bankml bench all --help describes them, " +
		"bankml bench kernels --help and bankml bench model --help describe each one's without the prefix."
}

// flagNames are the kong flag names (the name tags) of a command struct's fields, with prefix.
func flagNames(cmd any, prefix string) []string {
	var names []string
	t := reflect.TypeOf(cmd)
	for i := range t.NumField() {
		if n := t.Field(i).Tag.Get("name"); n != "" && t.Field(i).IsExported() {
			names = append(names, prefix+n)
		}
	}
	return names
}
