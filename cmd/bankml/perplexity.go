package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/perplexity"
	"github.com/bankml/bankml/quant"
)

type perplexityCmd struct {
	Model    string      `arg:"" name:"MODEL" help:"Path to a GGUF model file." type:"path"`
	File     string      `arg:"" name:"FILE" help:"Text file to score (llama-perplexity -f; one trailing newline is dropped, as it does)." type:"path"`
	Ctx      int         `short:"c" name:"ctx-size" default:"512" help:"Tokens per chunk (llama-perplexity's -c, default 512); the second half of each chunk is scored."`
	Batch    int         `short:"b" name:"batch-size" default:"2048" help:"Tokens per decode (llama-perplexity's -b); capped at the chunk size (each chunk is its own sequence)."`
	Chunks   int         `name:"chunks" default:"-1" help:"Score at most this many chunks (-1: all; 0 is refused)."`
	Threads  threadCount `short:"t" name:"threads" default:"${nproc}" help:"Number of threads (the result does not depend on it); 0 or less takes the number of logical CPUs, as llama.cpp; at most 512, ggml's GGML_MAX_N_THREADS)."`
	Manifest string      `name:"manifest" help:"Provenance manifest (FORK.json), or the file's sha256, to pin the model against."`
}

// modelEval scores with a bankml context: one sequence, emptied per chunk.
type modelEval struct {
	c      *model.Context
	nVocab int
}

func (e modelEval) Reset() error { return e.c.Truncate(0) }
func (e modelEval) DecodeOutputs(t []int32, n int) ([]float32, error) {
	return e.c.DecodeOutputs(t, n)
}
func (e modelEval) NVocab() int { return e.nVocab }

func (p *perplexityCmd) Run(stdout io.Writer, stderr errWriter) error {
	if p.Chunks == 0 || p.Chunks < -1 {
		return fmt.Errorf("perplexity: --chunks %d: want a positive count, or -1 for all", p.Chunks)
	}
	if p.Ctx < 2 || p.Batch < 1 {
		return fmt.Errorf("perplexity: --ctx-size %d and --batch-size %d: want a context of at least 2 and a batch of at least 1", p.Ctx, p.Batch)
	}
	// An invalid BANKML_CPU is a usage error (exit 1), as for run and serve, found before any file is read.
	if _, err := quant.LevelFromEnv(); err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	text, err := os.ReadFile(p.File)
	if err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	f, err := admit("perplexity", p.Model, p.Manifest, stderr)
	if err != nil {
		return err
	}
	defer f.Close()
	m, tok, err := loadModel("perplexity", f)
	if err != nil {
		return err
	}
	defer m.Close() // before f.Close: stops the background packing
	if tok.AddEOS() {
		// llama-perplexity asserts !llama_vocab_get_add_eos.
		return cannotRun(fmt.Errorf("perplexity: the vocabulary adds EOS to every text, which llama-perplexity does not score"))
	}
	// common_tokenize(ctx, prompt, true): BOS as the vocabulary asks, no
	// special-token parsing; -f drops one trailing newline.
	ids := tok.Tokenize(strings.TrimSuffix(string(text), "\n"), true, false)
	if p.Ctx > m.HP.NCtxTrain {
		fmt.Fprintf(stderr, "warning: the model was trained on only %d context tokens (%d specified)\n", m.HP.NCtxTrain, p.Ctx)
	}
	c, err := m.NewContext(p.Ctx, int(p.Threads))
	if err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	defer c.Close()
	nChunk := len(ids) / p.Ctx
	if p.Chunks > 0 {
		nChunk = min(nChunk, p.Chunks)
	}
	fmt.Fprintf(stderr, "perplexity: %d tokens; calculating perplexity over %d chunks, n_ctx=%d, batch_size=%d, n_seq=1\n",
		len(ids), nChunk, p.Ctx, min(p.Batch, p.Ctx))
	t0 := time.Now()
	var werr error
	res, err := perplexity.Compute(modelEval{c, m.HP.NVocab}, ids, perplexity.Options{
		NCtx: p.Ctx, NBatch: p.Batch, NChunks: p.Chunks, BOS: tok.BOS(), AddBOS: tok.AddBOS(),
	}, func(i int, ppl float64) {
		if werr == nil {
			werr = perplexity.WriteRunning(stdout, i, ppl)
		}
	})
	if err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if _, err := fmt.Fprintln(stdout); err != nil {
		return err
	}
	if err := perplexity.WriteFinal(stdout, res); err != nil {
		return err
	}
	el := time.Since(t0)
	fmt.Fprintf(stderr, "perplexity: %d tokens scored in %d chunks, %.2f s (%.1f tok/s evaluated)\n",
		res.Count, res.Chunks, el.Seconds(), float64(res.Chunks*res.NCtx)/el.Seconds())
	return nil
}
