package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/perplexity"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/store"
)

type perplexityCmd struct {
	Model     string      `arg:"" optional:"" name:"MODEL" help:"A GGUF model file (or -m/--model FNAME), or a model NAME[:TAG] from the store, pulled from bankml's catalog on first use (pinned by its manifest)."`
	ModelFlag string      `short:"m" name:"model" type:"path" placeholder:"FNAME" help:"Path to a GGUF model file, as llama-perplexity's -m/--model, instead of MODEL."`
	File      string      `arg:"" name:"FILE" type:"path" optional:"" help:"Text file to score, or give it as -f/--file (one trailing newline is dropped, as llama-perplexity's -f does)."`
	FileFlag  string      `short:"f" name:"file" type:"path" placeholder:"FNAME" help:"Text file to score, as llama-perplexity's -f/--file, instead of FILE."`
	Ctx       int         `short:"c" name:"ctx-size" default:"512" help:"Tokens per chunk (llama-perplexity's -c, default 512), at least 3: the second half of each chunk is scored, less its first token."`
	Batch     int         `short:"b" name:"batch-size" default:"2048" help:"Tokens per decode (llama-perplexity's -b), at least 1; capped at the chunk size (each chunk is its own sequence)."`
	Chunks    int         `name:"chunks" default:"-1" help:"Score at most this many chunks (-1: all; 0 is refused)."`
	Threads   threadCount `short:"t" name:"threads" default:"${nproc}" help:"Number of threads (the result does not depend on it); 0 or less takes the number of logical CPUs, as llama.cpp; at most 512, ggml's GGML_MAX_N_THREADS)."`
	Manifest  string      `name:"manifest" help:"Provenance manifest (FORK.json), or the file's sha256, to pin the model against."`

	storeFlag  `embed:""` // --models: the store a NAME comes from (storemodel.go)
	mirrorFlag `embed:""` // --from: the mirror a NAME is pulled from on first use
}

// engineEval scores through the engine (engine.Evaluate: each chunk a sequence of its own).
type engineEval struct {
	e *engine.Engine
}

func (e engineEval) Evaluate(t []int32, outputs, nBatch int) ([]float32, error) {
	return e.e.Evaluate(context.Background(), engine.EvalRequest{Tokens: t, Outputs: outputs, NBatch: nBatch})
}
func (e engineEval) NVocab() int { return e.e.Model().HP.NVocab }

// Validate (kong's hook after parsing) takes the model from MODEL or -m/--model (resolveModel, which refuses a
// directory), and the text file from FILE or -f/--file: one of them, or both naming the same file; neither, or
// two different files, is a usage error naming them. With -m and no -f, the one argument is FILE
// (bankml perplexity -m MODEL.gguf FILE.txt).
func (p *perplexityCmd) Validate() (err error) {
	if p.ModelFlag != "" && p.Model != "" && p.File == "" && p.FileFlag == "" {
		p.Model, p.File = "", kong.ExpandPath(p.Model)
	}
	if p.Model, err = resolveModel(p.Model, p.ModelFlag); err != nil {
		return err
	}
	switch file, flag := p.File, p.FileFlag; {
	case file == "" && flag == "":
		return errors.New(`expected "<FILE>" or -f/--file FNAME: the text file to score`)
	case file != "" && flag != "" && file != flag && !sameFile(file, flag):
		return fmt.Errorf("the text is given twice, as FILE %q and as -f/--file %q: give one", file, flag)
	case file == "":
		p.File = p.FileFlag
	}
	return nil
}

func (p *perplexityCmd) Run(stdout io.Writer, stderr errWriter, sigs *signals) error {
	if p.Chunks == 0 || p.Chunks < -1 {
		return fmt.Errorf("perplexity: %w", outOfRange("--chunks", p.Chunks, 1, inf, "or -1: all"))
	}
	// llama-perplexity refuses only -c 0 and below ("perplexity tool requires '--ctx-size' > 0"); with -c 1 or 2
	// it scores no token (first = n_ctx/2, tokens first+1 .. n_ctx-1) and prints NaN estimates.
	if p.Ctx < perplexity.MinNCtx || p.Ctx > model.MaxContextSize {
		return fmt.Errorf("perplexity: %w", outOfRange("-c/--ctx-size", p.Ctx, perplexity.MinNCtx, model.MaxContextSize,
			"tokens per chunk: the second half of a chunk is scored, less its first token, so 3 is the least that scores one; 0 is not the training context here: llama-perplexity requires --ctx-size > 0"))
	}
	// llama-perplexity takes any -b std::stoi reads, and divides by zero with -b 0.
	if err := checkRanges(intRange{"-b/--batch-size", p.Batch, 1, math.MaxInt32, "tokens per decode call"}); err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	// An invalid BANKML_CPU is a usage error (exit 1), as for run and serve, found before any file is read.
	if _, err := quant.LevelFromEnv(); err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	text, err := os.ReadFile(p.File)
	if err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	var stored *store.Manifest
	if p.Model, p.Manifest, stored, err = storeModel("perplexity", p.Model, p.Manifest, p.storeFlag, p.From, stderr, sigs); err != nil {
		return err
	}
	am, err := openModel("perplexity", p.Model, stored, admit.Options{Manifest: p.Manifest, Pin: admit.AllowUnpinned}, stderr, stderr)
	if err != nil {
		return err
	}
	defer am.Close()
	m, tok := am.Model, am.Tokenizer
	if err := refuseEncoder("perplexity", m); err != nil { // before the text is tokenized, as run refuses it
		return err
	}
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
	opt := perplexity.Options{NCtx: p.Ctx, NBatch: p.Batch, NChunks: p.Chunks, BOS: tok.BOS(), AddBOS: tok.AddBOS()}
	plan, err := perplexity.PlanFor(len(ids), opt) // a text too short is refused before the header, as llama-perplexity
	if err != nil {
		return err
	}
	// One slot of n_ctx = -c, not capped at the training context (llama-perplexity only warns).
	e, err := engine.New(m, tok, nil, engine.Options{NCtx: p.Ctx, Threads: int(p.Threads), PastTrainingContext: true})
	if err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	defer e.Close()
	fmt.Fprintf(stderr, "perplexity: %d tokens; calculating perplexity over %d chunks, n_ctx=%d, batch_size=%d, n_seq=1\n",
		len(ids), plan.NChunks, plan.NCtx, plan.NBatch)
	t0 := time.Now()
	var werr error
	res, err := perplexity.Compute(engineEval{e}, ids, opt, func(i int, ppl float64) {
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
