package engine

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
	"github.com/bankml/bankml/internal/testdata"
)

// embedModel is a tiny synthetic model of arch (synth.ForArch's settings)
// with every weight of type ty and the vocabulary of
// ../shared/models/vocab/ggml-vocab-<vocab>.gguf (vocab "": synth's).
func embedModel(t testing.TB, arch string, ty gguf.GGMLType, vocab string, seed uint64) *testModel {
	t.Helper()
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	shape = synth.ForArch(arch, shape)
	cfg := synth.Config{Arch: arch, Shape: shape, Weight: ty, Embd: ty, Output: ty, Seed: seed}
	name := arch + "-tiny-" + strings.ToUpper(ty.String())
	if vocab != "" {
		if cfg.Vocab, err = synth.VocabFromGGUF(testdata.Model(t, "vocab/ggml-vocab-"+vocab+".gguf")); err != nil {
			t.Fatal(err)
		}
		name += "-" + vocab
	}
	return loadBankml(t, name, synthcache.File(t, name, cfg))
}

var embedTexts = []string{
	"Hello world",
	"The quick brown fox jumps over the lazy dog.",
	"Embeddings map text to vectors; similar texts get nearby vectors, which retrieval pipelines rank by cosine similarity.",
	"a",
	"Once upon a time there was a little girl named Lily who loved to play outside in the park with her dog.",
}

// TestEmbedBatchesInputsAndMatchesReference: Embed of several inputs runs
// them in one forward pass (the scheduler's step counts), and each vector,
// for each pooling (none: every row), is bit-equal to the reference's
// llama_get_embeddings_seq (_ith) of that input alone, for an encoder (bert)
// and a decoder (qwen3).
func TestEmbedBatchesInputsAndMatchesReference(t *testing.T) {
	n, total := 0, 0
	for _, tm := range []*testModel{
		embedModel(t, synth.ArchBert, gguf.F16, "bert-bge", 91).withRef(t),
		embedModel(t, synth.ArchQwen3, gguf.Q8_0, "", 92).withRef(t),
	} {
		for _, pool := range []embed.Pooling{embed.PoolingNone, embed.PoolingMean, embed.PoolingCLS, embed.PoolingLast} {
			e := newEngine(t, tm, Options{Pooling: pool.String(), BatchSize: 2048})
			var inputs [][]int32
			for _, text := range embedTexts {
				toks, err := tm.ref.Tokenize(text, true, true)
				if err != nil {
					t.Fatal(err)
				}
				inputs = append(inputs, toks)
			}
			got, err := e.Embed(context.Background(), inputs)
			if err != nil {
				t.Fatal(err)
			}
			if e.stats.steps != 1 || e.stats.maxSeqs != len(inputs) {
				t.Errorf("%s %s: %d inputs ran in %d steps (at most %d sequences in one)", tm.name, pool, len(inputs), e.stats.steps, e.stats.maxSeqs)
			}
			for i, in := range inputs {
				total++
				want, err := tm.ref.Embed(in, int(pool), 1)
				if err != nil {
					t.Fatal(err)
				}
				var g, w []float32
				if pool == embed.PoolingNone {
					g = got[i].Rows
					for _, r := range want.Rows {
						w = append(w, r...)
					}
				} else {
					g, w = got[i].Pooled, want.Pooled
				}
				if got[i].Tokens != len(in) || len(g) != len(w) {
					t.Errorf("%s %s input %d: %d tokens, %d values; reference %d values", tm.name, pool, i, got[i].Tokens, len(g), len(w))
					continue
				}
				ok := true
				for k := range g {
					if math.Float32bits(g[k]) != math.Float32bits(w[k]) {
						t.Errorf("%s %s input %d: [%d] = %g, reference %g", tm.name, pool, i, k, g[k], w[k])
						ok = false
						break
					}
				}
				if ok {
					n++
				}
			}
		}
	}
	t.Logf("%d of %d batched embeddings bit-equal to the reference's alone", n, total)
}

// TestEmbedTakesInputsUpToItsPhysicalBatchAndMatchesTheReference: Options.EmbedUBatch is the physical
// batch of an embedding (llama.cpp's n_ubatch): an input past it is refused naming it (512 by default, as
// llama-server's -ub), one within it is one micro-batch whose vector is bit-equal to the reference's with that
// n_ubatch, one past the slot context is refused naming the context, and a causal model pooling the last
// token runs a longer input in micro-batches of EmbedUBatch.
func TestEmbedTakesInputsUpToItsPhysicalBatchAndMatchesTheReference(t *testing.T) {
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	shape = synth.ForArch(synth.ArchBert, shape)
	shape.NCtxTrain = 1024 // room for inputs past 512 tokens (bert's positions are learned, n_ctx_train of them)
	cfg := synth.Config{Arch: synth.ArchBert, Shape: shape, Weight: gguf.F16, Embd: gguf.F16, Output: gguf.F16, Seed: 94}
	if cfg.Vocab, err = synth.VocabFromGGUF(testdata.Model(t, "vocab/ggml-vocab-bert-bge.gguf")); err != nil {
		t.Fatal(err)
	}
	const bertName = "bert-tiny-F16-bert-bge-ctx1024"
	bert := loadBankml(t, bertName, synthcache.File(t, bertName, cfg)).withRef(t)
	qwen := embedModel(t, synth.ArchQwen3, gguf.Q8_0, "", 92).withRef(t)
	long := strings.Repeat(embedTexts[4]+" ", 60)
	for _, tc := range []struct {
		name     string
		tm       *testModel
		pool     embed.Pooling
		ubatch   int // Options.EmbedUBatch
		tokens   int // the input's length
		want     string
		checkRef bool
	}{
		{"the default physical batch of 512 refuses 600 tokens", bert, embed.PoolingMean, 0, 600, "input (600 tokens) is too large to process. increase the physical batch size (current batch size: 512)", false},
		{"a physical batch of 1024 takes 600 tokens as the reference does", bert, embed.PoolingMean, 1024, 600, "", true},
		{"a physical batch of 600 takes exactly 600 tokens", bert, embed.PoolingCLS, 600, 600, "", true},
		{"a physical batch of 599 refuses 600 tokens", bert, embed.PoolingMean, 599, 600, "(current batch size: 599)", false},
		{"past the context is refused naming the context", bert, embed.PoolingMean, 2048, 1100, "input (1100 tokens) is larger than the max context size (1024 tokens). skipping", false},
		{"a decoder takes 700 tokens with a physical batch of 1024 as the reference does", qwen, embed.PoolingMean, 1024, 700, "", true},
		{"a decoder pooling the last token splits 700 tokens into micro-batches", qwen, embed.PoolingLast, 0, 700, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.tm, Options{Pooling: tc.pool.String(), BatchSize: 2048, NCtx: 1024, EmbedUBatch: tc.ubatch})
			toks, err := tc.tm.ref.Tokenize(long, true, true)
			if err != nil {
				t.Fatal(err)
			}
			for len(toks) < tc.tokens {
				toks = append(toks, toks[1:]...)
			}
			in := toks[:tc.tokens]
			got, err := e.Embed(context.Background(), [][]int32{in})
			if tc.want != "" {
				var le *EmbedLengthError
				if !errors.As(err, &le) || !errors.Is(err, ErrEmbedInput) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%v; want an EmbedLengthError saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Tokens != tc.tokens || len(got[0].Pooled) == 0 {
				t.Fatalf("%d tokens, %d values", got[0].Tokens, len(got[0].Pooled))
			}
			if !tc.checkRef {
				return
			}
			want, err := tc.tm.ref.Embed(in, int(tc.pool), 1) // n_batch = n_ubatch = the input's length
			if err != nil {
				t.Fatal(err)
			}
			for k := range want.Pooled {
				if math.Float32bits(got[0].Pooled[k]) != math.Float32bits(want.Pooled[k]) {
					t.Fatalf("[%d] = %g, reference %g", k, got[0].Pooled[k], want.Pooled[k])
				}
			}
		})
	}
}

func TestEmbedRefusesBadInputs(t *testing.T) {
	tm := embedModel(t, synth.ArchBert, gguf.Q8_0, "bert-bge", 93)
	e := newEngine(t, tm, Options{})
	long := make([]int32, 513)
	for _, tc := range []struct {
		name  string
		input []int32
		want  string
	}{
		{"empty", []int32{}, "Input content cannot be empty"},
		{"past a micro-batch", long, "input (513 tokens) is too large to process. increase the physical batch size (current batch size: 512)"},
		{"outside the vocabulary", []int32{101, 40000}, "token id 40000 outside the vocabulary"},
	} {
		_, err := e.Embed(context.Background(), [][]int32{{101, 102}, tc.input})
		if !errors.Is(err, ErrEmbedInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	if _, err := e.Generate(context.Background(), Request{Prompt: Prompt{Text: "hi"}, Sampling: greedyParams()}, nil); !errors.Is(err, ErrEncoder) {
		t.Errorf("Generate on bert: %v", err)
	}
	if _, err := New(tm.m, tm.tok, nil, Options{Pooling: "rank"}); err == nil || !strings.Contains(err.Error(), "ranking head") {
		t.Errorf("rank without a head: %v", err)
	}
}

// TestArchitecturesGenerateMatchesReference: the seeded and greedy cases of the engine oracle (the
// reference's slot run with its own common_sampler) on each new decoder architecture: every answer's tokens,
// text and finish reason equal the reference's.
func TestArchitecturesGenerateMatchesReference(t *testing.T) {
	const nCtx = 256
	models := []*testModel{
		embedModel(t, synth.ArchQwen2, gguf.Q8_0, "", 111).withRef(t),
		embedModel(t, synth.ArchGemma3, gguf.Q8_0, "llama-spm", 112).withRef(t),
		embedModel(t, synth.ArchPhi3, gguf.Q8_0, "phi-3", 113).withRef(t),
		embedModel(t, synth.ArchBitnet, gguf.TQ2_0, "gpt-2", 114).withRef(t),
	}
	keep := []string{"greedy", "defaults-seed42", "dist-temp1.3", "penalties-topk5", "dry-xtc", "ignore-eos"}
	pass, total := 0, 0
	for _, tm := range models {
		for _, c := range oracleCases() {
			if !slices.Contains(keep, c.name) {
				continue
			}
			t.Run(tm.name+"/"+c.name, func(t *testing.T) {
				total++
				e := newEngine(t, tm, Options{NCtx: nCtx})
				s, err := tm.ref.NewSession(nCtx, 1)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				prompt, err := tm.ref.Tokenize(c.prompt, true, true)
				if err != nil {
					t.Fatal(err)
				}
				req := c.req
				req.Prompt = Prompt{Text: c.prompt}
				want := refGenerate(t, tm, s, prompt, 0, req)
				res, err := e.Generate(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				check(t, res, want, prompt, 0)
				if !t.Failed() {
					pass++
				}
			})
		}
	}
	t.Logf("%d of %d seeded and greedy answers of the new architectures equal the reference's", pass, total)
}

// TestEmbedBoundsTheContextsOfManyShortInputs: many one- and two-token
// inputs in one Embed call (each input's cache is padded to 256 cells) are
// started only while the contexts alive hold at most the KV cache of
// max(n_ctx, batch) tokens, so they run over several steps, and every
// vector equals the input's vector alone.
func TestEmbedBoundsTheContextsOfManyShortInputs(t *testing.T) {
	tm := embedModel(t, synth.ArchQwen3, gguf.Q8_0, "", 92)
	e := newEngine(t, tm, Options{Pooling: embed.PoolingMean.String(), NCtx: 256, BatchSize: 512})
	var inputs [][]int32
	for i := range 12 {
		in := []int32{int32(10 + i)}
		if i%3 == 0 {
			in = append(in, int32(40+i))
		}
		inputs = append(inputs, in)
	}
	got, err := e.Embed(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	if e.stats.maxEmbed > e.embedMax || e.stats.steps < 6 {
		t.Errorf("%d inputs of 256 cells each: contexts of %d bytes alive at once in %d steps, want at most %d (two inputs) a step",
			len(inputs), e.stats.maxEmbed, e.stats.steps, e.embedMax)
	}
	if e.embedLive != 0 {
		t.Errorf("after Embed, %d bytes of embedding contexts still counted alive", e.embedLive)
	}
	for i, in := range inputs {
		alone, err := e.Embed(context.Background(), [][]int32{in})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got[i].Pooled, alone[0].Pooled, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Errorf("input %d: batched vector differs from the vector alone", i)
		}
	}
}

// TestEmbedCancelledInputsReleaseTheirContexts: inputs of Embed calls
// cancelled at every moment from before the call to mid-way (each input
// runs over several steps: a causal model pooling the last token, in
// micro-batches of 4) leave no context counted alive once a later call has
// run.
func TestEmbedCancelledInputsReleaseTheirContexts(t *testing.T) {
	tm := embedModel(t, synth.ArchQwen3, gguf.Q8_0, "", 92)
	e := newEngine(t, tm, Options{Pooling: embed.PoolingLast.String(), NCtx: 256, BatchSize: 512, EmbedUBatch: 4})
	inputs := make([][]int32, 8)
	for i := range inputs {
		for k := range 20 {
			inputs[i] = append(inputs[i], int32(10+i+k))
		}
	}
	cancelled := 0
	for i := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		if i == 0 {
			cancel()
		} else {
			time.AfterFunc(time.Duration(i)*100*time.Microsecond, cancel)
		}
		if _, err := e.Embed(ctx, inputs); errors.Is(err, context.Canceled) {
			cancelled++
		} else if err != nil {
			t.Fatal(err)
		}
		cancel()
		// A context still counted alive would keep the next input from
		// ever starting.
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
		_, err := e.Embed(ctx, inputs[:1])
		cancel()
		if err != nil {
			t.Fatalf("attempt %d: the next input: %v", i, err)
		}
		if e.embedLive != 0 {
			t.Fatalf("attempt %d: %d bytes of embedding contexts still counted alive", i, e.embedLive)
		}
	}
	if cancelled == 0 {
		t.Fatal("no Embed call was cancelled")
	}
	t.Logf("%d of 20 calls cancelled", cancelled)
}
