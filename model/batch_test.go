package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/sample"
)

// batchModels are the models of the batching tests: every class-dependent
// path (stories260K's F32 and the qwen3 F16 weights: tinyBLAS from two
// columns on; Q4_K: the repacked gemm and gemv; Q4_0: the repacked rows),
// and the packed Q1_0, Q2_0 and TQ2_0 tiles, at head sizes 8 (stories260K:
// no tiled kernel) and 64.
// The qwen3 F16 and Q4_K models run their class-dependent matmuls in the
// portable kernels: they are long only (the prompts past 100 tokens) under
// BANKML_ORACLE_HEAVY=1.
func batchModels(t *testing.T) []batchModel {
	t.Helper()
	dir := modelsDir(t)
	var ps []batchModel
	for _, f := range []string{"stories260K.gguf", "derived/stories260K-Q4_0.gguf"} {
		ps = append(ps, batchModel{&pair{name: f, m: loadModel(t, filepath.Join(dir, f))}, true})
	}
	for i, typ := range []gguf.GGMLType{gguf.Q1_0, gguf.Q2_0, gguf.TQ2_0, gguf.F16, gguf.Q4_K} {
		s := synthModel{arch: "qwen3", preset: "tiny", typ: typ, yarn: true, seed: uint64(1 + i)}
		long := heavy() || typ != gguf.F16 && typ != gguf.Q4_K
		ps = append(ps, batchModel{&pair{name: s.String(), m: loadModel(t, s.path(t))}, long})
	}
	return ps
}

// batchModel is a model of the batching tests and whether its sequences
// include the long prompts.
type batchModel struct {
	*pair
	long bool
}

// batchSeq is one sequence of a batching test: its prompt, the greedy
// tokens to generate after it, and the step at which it arrives.
type batchSeq struct {
	prompt []int32
	gen    int
	start  int
}

// batchSeqs are prompts of 3, 40, 64, 100, 300 and 530 tokens (one-row,
// one-chunk and tiled attention, a second micro-batch of 18 rows; decodes
// past 256 positions run split-KV), arriving at staggered steps; without
// long, the first four.
func batchSeqs(nVocab int, long bool) []batchSeq {
	var seqs []batchSeq
	lens := []int{3, 40, 64, 100, 300, 530}
	if !long {
		lens = lens[:4]
	}
	for i, n := range lens {
		p := make([]int32, n)
		for j := range p {
			p[j] = int32(1 + (j*7+i*13+j*j)%(nVocab-1))
		}
		seqs = append(seqs, batchSeq{prompt: p, gen: 6, start: []int{0, 0, 2, 5, 1, 3}[i]})
	}
	return seqs
}

// aloneLogits evaluates seq alone in a fresh context (its prompt by Decode,
// then its greedy tokens one at a time) and returns the logits of the
// prompt's last row and of each generated token but the last.
func aloneLogits(t *testing.T, m *Model, seq batchSeq, nCtx int) [][]float32 {
	t.Helper()
	c := newCtx(t, m, nCtx, 2)
	logits, err := c.Decode(seq.prompt)
	if err != nil {
		t.Fatal(err)
	}
	out := [][]float32{logits}
	for len(out) < seq.gen {
		if logits, err = c.Decode([]int32{sample.Greedy(logits)}); err != nil {
			t.Fatal(err)
		}
		out = append(out, logits)
	}
	return out
}

// batchedLogits runs seqs together on one Runner: every step one Decode of
// each generating sequence's next token and a chunk of random length (cut
// anywhere, micro-batch boundaries included) of each sequence in its
// prompt, with the spans of PromptSpans.
func batchedLogits(t *testing.T, m *Model, seqs []batchSeq, nCtx int, r *rand.Rand) [][][]float32 {
	t.Helper()
	run, err := m.NewRunner(2)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	ctxs := make([]*Context, len(seqs))
	pos := make([]int, len(seqs))
	next := make([]int32, len(seqs))
	out := make([][][]float32, len(seqs))
	for i := range seqs {
		if ctxs[i], err = run.NewContext(nCtx); err != nil {
			t.Fatal(err)
		}
		ctxs[i].SetAttnThreads(2)
	}
	for step := 0; ; step++ {
		var spans []Span
		for i, s := range seqs {
			switch {
			case step < s.start || len(out[i]) == s.gen:
				continue
			case pos[i] < len(s.prompt):
				end := min(len(s.prompt), pos[i]+1+r.IntN(200))
				for _, sp := range PromptSpans(ctxs[i], s.prompt, pos[i], end, 0, true) {
					spans = append(spans, sp)
				}
				pos[i] = end
			default:
				spans = append(spans, Span{Ctx: ctxs[i], Tokens: []int32{next[i]}, UBatch: 1, Outputs: 1})
			}
		}
		if len(spans) == 0 {
			if step > seqs[len(seqs)-1].start+10 {
				break
			}
			continue
		}
		// Shuffle the sequences' order in the batch (a sequence's spans keep
		// theirs).
		perm := r.Perm(len(seqs))
		slices.SortStableFunc(spans, func(a, b Span) int { return perm[idx(ctxs, a.Ctx)] - perm[idx(ctxs, b.Ctx)] })
		if err := run.Decode(spans); err != nil {
			t.Fatal(err)
		}
		for _, sp := range spans {
			if sp.Logits == nil {
				continue
			}
			i := idx(ctxs, sp.Ctx)
			out[i] = append(out[i], sp.Logits)
			next[i] = sample.Greedy(sp.Logits)
		}
	}
	return out
}

func idx(cs []*Context, c *Context) int { return slices.Index(cs, c) }

// TestBatchedSequencesEqualAlone: sequences evaluated together on one
// Runner — prompts cut into chunks of random length beside other sequences'
// prompt chunks and decode rows, arriving at staggered steps, in shuffled
// order — give, bit for bit, the logits each gives alone, for every model of
// batchModels.
func TestBatchedSequencesEqualAlone(t *testing.T) {
	const nCtx = 1024
	total, equal := 0, 0
	for mi, p := range batchModels(t) {
		t.Run(p.name, func(t *testing.T) {
			seqs := batchSeqs(p.m.HP.NVocab, p.long)
			got := batchedLogits(t, p.m, seqs, nCtx, rand.New(rand.NewPCG(uint64(mi), 7)))
			for i, s := range seqs {
				want := aloneLogits(t, p.m, s, nCtx)
				total++
				if len(got[i]) != len(want) {
					t.Errorf("sequence %d: %d outputs batched, %d alone", i, len(got[i]), len(want))
					continue
				}
				same := true
				for o := range want {
					if k := firstDiff(got[i][o], want[o]); k >= 0 {
						t.Errorf("sequence %d (%d prompt tokens), output %d: logit %d = %g batched, %g alone", i, len(s.prompt), o, k, got[i][o][k], want[o][k])
						same = false
						break
					}
				}
				if same {
					equal++
				}
			}
		})
	}
	t.Logf("%d of %d sequences batched equal to their evaluation alone (every output's logits)", equal, total)
}

func firstDiff(a, b []float32) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestBatchedSequencesMatchReference: the batched logits of stories260K
// and a qwen3 Q1_0 model equal the reference's for each sequence in a
// llama_context of its own (prompt in micro-batches of 512, then one token
// at a time), bit for bit.
func TestBatchedSequencesMatchReference(t *testing.T) {
	lib := refLib(t)
	const nCtx = 1024
	total, equal := 0, 0
	for mi, s := range []any{"stories260K.gguf", synthModel{arch: "qwen3", preset: "tiny", typ: gguf.Q1_0, yarn: true, seed: 1}} {
		var p *pair
		switch s := s.(type) {
		case string:
			path := filepath.Join(modelsDir(t), s)
			rm, err := lib.LoadModel(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rm.Close)
			p = &pair{name: s, m: loadModel(t, path), ref: rm}
		case synthModel:
			p = loadPair(t, lib, s)
		}
		seqs := batchSeqs(p.m.HP.NVocab, true)
		got := batchedLogits(t, p.m, seqs, nCtx, rand.New(rand.NewPCG(uint64(mi), 9)))
		for i, sq := range seqs {
			want := refLogits(t, p.ref, sq, nCtx)
			total++
			ok := len(got[i]) == len(want)
			for o := 0; ok && o < len(want); o++ {
				if k := firstDiff(got[i][o], want[o]); k >= 0 {
					t.Errorf("%s sequence %d (%d prompt tokens), output %d: logit %d = %g batched, reference %g", p.name, i, len(sq.prompt), o, k, got[i][o][k], want[o][k])
					ok = false
				}
			}
			if ok {
				equal++
			}
		}
	}
	t.Logf("%d of %d batched sequences equal to the reference's evaluation of each alone", equal, total)
}

// refLogits is aloneLogits on the reference (2 threads, as the batched
// contexts' split-KV mirrors).
func refLogits(t *testing.T, rm *reference.Model, seq batchSeq, nCtx int) [][]float32 {
	t.Helper()
	s, err := rm.NewSession(nCtx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var logits []float32
	for p := 0; p < len(seq.prompt); p += NUbatch {
		if logits, err = s.Decode(seq.prompt[p:min(len(seq.prompt), p+NUbatch)]); err != nil {
			t.Fatal(err)
		}
	}
	out := [][]float32{logits}
	for len(out) < seq.gen {
		if logits, err = s.Decode([]int32{sample.Greedy(logits)}); err != nil {
			t.Fatal(err)
		}
		out = append(out, logits)
	}
	return out
}

// TestExactPrefixIsTheFreshEvaluation: a conversation's next turn keeps
// ExactPrefix of the cache and evaluates the rest with PromptSpans; its
// logits (prompt and greedy continuation) equal a fresh context's bit for
// bit. Before settling, the previous turn's generated cells are not kept
// (computed one row at a time); after SettleSpans from Unsettled they are,
// except where the fresh evaluation's last micro-batch is too short for the
// tiled kernel.
func TestExactPrefixIsTheFreshEvaluation(t *testing.T) {
	const nCtx = 1024
	cases := []struct {
		name            string
		first, gen, add int
	}{
		{"short first prompt", 20, 30, 25},  // one-chunk prompt cells, settled into tiled ones
		{"tiled first prompt", 90, 20, 30},  // the prompt's cells kept even unsettled
		{"past a micro-batch", 480, 20, 30}, // the next prompt's second micro-batch has 18 rows
		{"whole prompt cached", 70, 1, 0},   // the same prompt again: all but its last token kept
	}
	total, equal := 0, 0
	for _, p := range batchModels(t) {
		for _, tc := range cases {
			if tc.first+tc.gen+tc.add > 200 && !p.long {
				continue
			}
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				seq := batchSeqs(p.m.HP.NVocab, true)[5]
				prompt1 := seq.prompt[:tc.first]
				c := newCtx(t, p.m, nCtx, 2)
				logits, err := c.Decode(prompt1)
				if err != nil {
					t.Fatal(err)
				}
				for range tc.gen - 1 {
					if logits, err = c.Decode([]int32{sample.Greedy(logits)}); err != nil {
						t.Fatal(err)
					}
				}
				prompt2 := append(c.Tokens(), sample.Greedy(logits))
				prompt2 = append(prompt2, seq.prompt[tc.first:tc.first+tc.add]...)
				if tc.add == 0 {
					prompt2 = slices.Clone(prompt1)
				}
				want := aloneLogits(t, p.m, batchSeq{prompt: prompt2, gen: 4}, nCtx)
				for _, settle := range []bool{false, true} {
					if settle {
						u := c.Unsettled()
						toks := c.Tokens()[u:]
						if err := c.Truncate(u); err != nil {
							t.Fatal(err)
						}
						if len(toks) > 0 {
							if err := c.r.Decode(SettleSpans(c, toks, u)); err != nil {
								t.Fatal(err)
							}
						}
						if c.Unsettled() != c.NPast() {
							t.Fatalf("after settling, position %d of %d is unsettled", c.Unsettled(), c.NPast())
						}
					}
					saved := c.Tokens()
					kept := c.ExactPrefix(prompt2)
					got := continueFrom(t, c, prompt2, kept, 4)
					total++
					same := len(got) == len(want)
					for o := 0; same && o < len(want); o++ {
						if k := firstDiff(got[o], want[o]); k >= 0 {
							t.Errorf("settled %v, %d kept of %d: output %d logit %d = %g, fresh %g", settle, kept, len(prompt2), o, k, got[o][k], want[o][k])
							same = false
						}
					}
					if same {
						equal++
					}
					t.Logf("settled %v: %d of %d prompt tokens kept (%d cached)", settle, kept, len(prompt2), len(saved))
					// Restore the cache to the first turn's for the settled run.
					if err := c.Truncate(0); err != nil {
						t.Fatal(err)
					}
					if _, err := c.Decode(prompt1); err != nil {
						t.Fatal(err)
					}
					if rest := saved[tc.first:]; len(rest) > 0 && !settle {
						for _, tok := range rest {
							if _, err := c.Decode([]int32{tok}); err != nil {
								t.Fatal(err)
							}
						}
					}
				}
			})
		}
	}
	t.Logf("%d of %d continuations after ExactPrefix equal to the fresh evaluation", equal, total)
}

// continueFrom keeps kept positions of c, evaluates the rest of prompt
// with PromptSpans in chunks of 37 rows, then n-1 greedy tokens, and
// returns the logits of the prompt's last row and of each token.
func continueFrom(t *testing.T, c *Context, prompt []int32, kept, n int) [][]float32 {
	t.Helper()
	if err := c.Truncate(kept); err != nil {
		t.Fatal(err)
	}
	var logits []float32
	for p := kept; p < len(prompt); p += 37 {
		spans := PromptSpans(c, prompt, p, min(len(prompt), p+37), 0, true)
		if err := c.r.Decode(spans); err != nil {
			t.Fatal(err)
		}
		if l := spans[len(spans)-1].Logits; l != nil {
			logits = l
		}
	}
	out := [][]float32{logits}
	for len(out) < n {
		var err error
		if logits, err = c.Decode([]int32{sample.Greedy(logits)}); err != nil {
			t.Fatal(err)
		}
		out = append(out, logits)
	}
	return out
}

// TestDecodeRefusesBadSpans: a span of another runner, an empty one, a
// geometry outside its micro-batch or a context overflow is refused by
// name, and no context changes.
func TestDecodeRefusesBadSpans(t *testing.T) {
	m := loadModel(t, filepath.Join(modelsDir(t), "stories260K.gguf"))
	run, err := m.NewRunner(1)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	c, err := run.NewContext(8)
	if err != nil {
		t.Fatal(err)
	}
	other := newCtx(t, m, 8, 1)
	for _, tc := range []struct {
		name string
		span Span
	}{
		{"another runner's context", Span{Ctx: other, Tokens: []int32{1}, UBatch: 1}},
		{"no tokens", Span{Ctx: c, UBatch: 1}},
		{"rows past the micro-batch", Span{Ctx: c, Tokens: []int32{1, 2}, UBatch: 2, First: 1}},
		{"more outputs than rows", Span{Ctx: c, Tokens: []int32{1}, UBatch: 1, Outputs: 2}},
		{"past the context", Span{Ctx: c, Tokens: make([]int32, 9), UBatch: 9}},
		{"a token outside the vocabulary", Span{Ctx: c, Tokens: []int32{int32(m.HP.NVocab)}, UBatch: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run.Decode([]Span{{Ctx: c, Tokens: []int32{1}, UBatch: 1, Outputs: 1}, tc.span})
			if err == nil {
				t.Fatal("no error")
			}
			if c.NPast() != 0 {
				t.Fatalf("the context holds %d positions after a refused batch", c.NPast())
			}
			t.Log(fmt.Sprint(err))
		})
	}
}
