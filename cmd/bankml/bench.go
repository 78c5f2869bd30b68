package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/quant"
)

type benchCmd struct {
	Kernels benchKernelsCmd `cmd:"" help:"Time bankml's Q1_0, Q2_0 and TQ2_0 dot products next to the reference's exported kernels, alternating in one process."`
}

// benchKernelsCmd times, for each low-bit format and Qwen3-8B row length,
// bankml's vec_dot against the reference's ggml_vec_dot_* on the same rows,
// in alternating samples (DESIGN.md §7: ratios measured side by side hold
// where absolute times drift).
type benchKernelsCmd struct {
	Rows   int `name:"rows" default:"64" help:"Distinct weight rows per timed sample (dotted one after another with one activation row, as in a matmul)."`
	Rounds int `name:"rounds" default:"101" help:"Rounds; each times one bankml sample and one reference sample, in alternating order."`
}

// benchKernel is one format under test: how its weights are made, the
// activation format it is dotted with, bankml's dot product and the
// reference's exported symbol.
type benchKernel struct {
	typ      gguf.GGMLType
	quantize func(x []float32, dst []byte)
	actBlock int
	actSize  int
	actQuant func(x []float32, dst []byte)
	dot      func(w, a []byte, nb int) float32
	ref      string
}

var benchKernels = []benchKernel{
	{gguf.Q1_0, quant.QuantizeRowQ1_0, quant.QK8_0, quant.BlockQ8_0Size, quant.QuantizeRowQ8_0, quant.VecDotQ1_0Q8_0, "ggml_vec_dot_q1_0_q8_0"},
	{gguf.Q2_0, quant.QuantizeRowQ2_0, quant.QK8_0, quant.BlockQ8_0Size, quant.QuantizeRowQ8_0, quant.VecDotQ2_0Q8_0, "ggml_vec_dot_q2_0_q8_0"},
	{gguf.TQ2_0, quant.QuantizeTQ2_0Ref, quant.QK_K, quant.BlockQ8_KSize, quant.QuantizeRowQ8_K, quant.VecDotTQ2_0Q8_K, "ggml_vec_dot_tq2_0_q8_K"},
}

// benchRowLengths are Qwen3-8B's n_embd (the input of Q, K, V, gate and up)
// and n_ff (the input of down).
var benchRowLengths = []int{4096, 12288}

func (b *benchKernelsCmd) Run(stdout io.Writer) error {
	if b.Rows < 1 || b.Rounds < 1 {
		return fmt.Errorf("bench kernels: --rows %d, --rounds %d: both must be at least 1", b.Rows, b.Rounds)
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

	fmt.Fprintf(stdout, "bench kernels: %d weight rows per sample, %d rounds alternating bankml and the reference (haswell), ns per weight block\n\n", b.Rows, b.Rounds)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "type\trow\tblocks\tbankml min / median / max\treference min / median / max\tbankml/ref\tref call ns\tequal\t")
	for _, bk := range benchKernels {
		ref, err := k.VecDotKRaw(bk.ref)
		if err != nil {
			return fmt.Errorf("bench kernels: %w", err)
		}
		for _, n := range benchRowLengths {
			r := b.kernelRow(bk, ref, n)
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f / %.1f / %.1f\t%.1f / %.1f / %.1f\t%.2f\t%.0f\t%d/%d\t\n",
				bk.typ, n, r.blocks, r.mine[0], r.mine[1], r.mine[2], r.theirs[0], r.theirs[1], r.theirs[2],
				r.mine[1]/r.theirs[1], r.callNs, r.equal, b.Rows)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "\nbankml/ref is the ratio of the medians. The reference is called through purego.SyscallN; its\n"+
		"per-call overhead (median of calls with n = 0, column \"ref call ns\") is included in its times, not subtracted.\n"+
		"equal: rows whose bankml result has the reference's bits. Weights and activations are gaussian, quantized\n"+
		"by bankml's quantizers (seeded, the same every run).\n")
	return err
}

type benchRow struct {
	blocks       int
	mine, theirs [3]float64 // ns per block: min, median, max over rounds
	callNs       float64    // median ns of one reference call with n = 0
	equal        int
}

var benchSink float32

// kernelRow times one format at row length n.
func (b *benchKernelsCmd) kernelRow(bk benchKernel, ref func(n int, x, y []byte) float32, n int) benchRow {
	rng := rand.New(rand.NewPCG(uint64(bk.typ), uint64(n)))
	gauss := func() []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	nb := n / bk.typ.BlockSize()
	rb := nb * bk.typ.TypeSize()
	w := make([]byte, b.Rows*rb)
	for i := range b.Rows {
		bk.quantize(gauss(), w[i*rb:(i+1)*rb])
	}
	a := make([]byte, n/bk.actBlock*bk.actSize)
	bk.actQuant(gauss(), a)

	res := benchRow{blocks: nb}
	for i := range b.Rows { // warm-up, and the results checked
		row := w[i*rb : (i+1)*rb]
		if math.Float32bits(bk.dot(row, a, nb)) == math.Float32bits(ref(n, row, a)) {
			res.equal++
		}
	}
	mineSample := func() float64 {
		t0 := time.Now()
		for i := range b.Rows {
			benchSink += bk.dot(w[i*rb:(i+1)*rb], a, nb)
		}
		return float64(time.Since(t0).Nanoseconds()) / float64(b.Rows*nb)
	}
	refSample := func() float64 {
		t0 := time.Now()
		for i := range b.Rows {
			benchSink += ref(n, w[i*rb:(i+1)*rb], a)
		}
		return float64(time.Since(t0).Nanoseconds()) / float64(b.Rows*nb)
	}
	mine := make([]float64, 0, b.Rounds)
	theirs := make([]float64, 0, b.Rounds)
	calls := make([]float64, 0, b.Rounds)
	for round := range b.Rounds {
		if round%2 == 0 {
			mine = append(mine, mineSample())
			theirs = append(theirs, refSample())
		} else {
			theirs = append(theirs, refSample())
			mine = append(mine, mineSample())
		}
		t0 := time.Now()
		for i := range b.Rows {
			benchSink += ref(0, w[i*rb:(i+1)*rb], a)
		}
		calls = append(calls, float64(time.Since(t0).Nanoseconds())/float64(b.Rows))
	}
	res.mine, res.theirs = minMedMax(mine), minMedMax(theirs)
	res.callNs = minMedMax(calls)[1]
	return res
}

// minMedMax returns the minimum, median (the upper one for an even count)
// and maximum of v.
func minMedMax(v []float64) [3]float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return [3]float64{s[0], s[len(s)/2], s[len(s)-1]}
}
