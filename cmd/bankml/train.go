package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/train"
)

// trainCmd is `bankml train`: the flags of package train's Job (a distilled student) and of its ES runs.
type trainCmd struct {
	Teacher  string `name:"teacher" default:"../shared/models/stories260K.gguf" help:"The float teacher the training set is sampled from (its top next-token probabilities are the soft targets)." type:"path"`
	Out      string `name:"out" default:"/tmp/bankml-train" help:"Directory of the run: checkpoint.bin (resumed when present), loss.csv, loss.svg and the exported GGUF files." type:"path"`
	Data     string `name:"data" help:"The training data file, drawn from the teacher when absent or drawn with other options (default: OUT/data.tok); runs of one data file share it." type:"path"`
	HeldOut  string `name:"heldout" default:"perplexity/testdata/heldout-stories.txt" help:"Text kept out of the training set: stories sharing 12 tokens in a row with it are dropped. Read on every run: an existing data file is reused only when it was filtered against this text (its sha256), else drawn again." type:"path"`
	Manifest string `name:"manifest" help:"Provenance manifest (FORK.json), or the teacher's sha256, to pin it against."`

	Mode    string `name:"mode" default:"ternary" enum:"ternary,ste,float" help:"How every matrix trains: ternary (BitNet b1.58's straight-through estimator; ste is another name for it, as package train reads it) or float."`
	Embd    int    `name:"n-embd" default:"256" help:"Width of the student (a multiple of 256 for ternary)."`
	Layers  int    `name:"n-layer" default:"2" help:"Blocks."`
	Heads   int    `name:"n-head" default:"8" help:"Attention heads."`
	KVHeads int    `name:"n-head-kv" default:"4" help:"K/V heads."`
	FF      int    `name:"n-ff" default:"512" help:"Feed-forward width (a multiple of 256 for ternary)."`
	Seq     int    `name:"seq" default:"256" help:"Tokens per training sequence (the exported context_length)."`

	Steps     int     `name:"steps" default:"400" help:"Optimizer steps (a resumed run continues to this many)."`
	Batch     int     `name:"batch" default:"4" help:"Sequences per step."`
	Warmup    int     `name:"warmup" default:"50" help:"Warm-up steps."`
	LR        float64 `name:"lr" default:"0.002" help:"Peak learning rate (AdamW)."`
	MinLR     float64 `name:"min-lr" default:"0.0002" help:"Learning rate at the last step (cosine)."`
	WD        float64 `name:"weight-decay" default:"0.1" help:"AdamW's decoupled weight decay of the matrices."`
	Clip      float64 `name:"clip" default:"1" help:"Global gradient-norm clip (0: off)."`
	Lambda    float64 `name:"lambda" default:"0.5" help:"Weight of the teacher's soft targets (KL) against the sampled tokens, in [0, 1]."`
	Seed      uint64  `name:"seed" default:"1" help:"Seed of the initial weights and the batches."`
	CkptEvery int     `name:"checkpoint-every" default:"50" help:"Steps between checkpoints (the run resumes from the last one; 0: only at the end)."`
	Export    string  `name:"export" default:"tq2_0,q2_0" help:"GGUF files written at the end: any of tq2_0, q2_0 (ternary runs), f32."`

	Stories     int     `name:"stories" default:"360" help:"Stories sampled from the teacher for the training set."`
	StoryTokens int     `name:"story-tokens" default:"256" help:"Tokens per story at most."`
	SampleSeed  uint32  `name:"sample-seed" default:"1000" help:"Story i is drawn with the sampler seed sample-seed+i."`
	Temp        float32 `name:"temp" default:"1" help:"Sampling temperature of the stories."`
	SoftTopK    int     `name:"soft-top-k" default:"32" help:"The teacher's most likely next tokens kept per position as soft targets (n_probs of the draw)."`

	Threads threadCount `short:"t" name:"threads" default:"${nproc}" help:"Threads (the result does not depend on them)."`

	ES         string  `name:"es" enum:",spirals,student" default:"" help:"Train by ternary evolution strategies instead: spirals (the 2→256→256→2 demo) or student (fine-tune the last layers of the ternary student in --out)."`
	ESIters    int     `name:"es-iters" default:"0" help:"ES iterations at most (0: the task's default)."`
	ESPop      int     `name:"es-pop" default:"0" help:"ES population, antithetic pairs (0: the task's default)."`
	ESFlipRate float64 `name:"es-flip-rate" default:"0" help:"Fraction of a genome's trits flipped per member (0: the task's default)."`
	ESUpdate   float64 `name:"es-update" default:"0" help:"Fraction of a genome's trits moved per iteration (0: the task's default)."`
}

func (c *trainCmd) Run(stderr errWriter, sigs *signals) error {
	level, err := quant.LevelFromEnv()
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	// Every float flag in outOfRange's words, before a teacher is read or an ES run starts (train.Options.Validate
	// and train.ESOptions.Validate hold the library's callers to the same bounds).
	if err := checkFloatRanges(
		floatRange{"--lr", c.LR, 0, math.Inf(1), true, ""},
		floatRange{"--min-lr", c.MinLR, 0, c.LR, false, "at most --lr"},
		floatRange{"--weight-decay", c.WD, 0, math.Inf(1), false, ""},
		floatRange{"--clip", c.Clip, 0, math.Inf(1), false, "0: off"},
		floatRange{"--lambda", c.Lambda, 0, 1, false, "the weight of the teacher's soft targets"},
		floatRange{"--temp", float64(c.Temp), 0, math.Inf(1), true, ""},
		floatRange{"--es-flip-rate", c.ESFlipRate, 0, 1, false, "0: the task's default"},
		floatRange{"--es-update", c.ESUpdate, 0, 1, false, "0: the task's default"},
	); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	// Every int flag too, whichever run it is for: a value outside its range was taken for the default (--es-iters,
	// --es-pop, --checkpoint-every below 0) or refused only once the teacher was read (--stories, --story-tokens,
	// --soft-top-k).
	if err := checkRanges(
		intRange{"--n-embd", c.Embd, 2, inf, ""},
		intRange{"--n-layer", c.Layers, 1, inf, ""},
		intRange{"--n-head", c.Heads, 1, inf, ""},
		intRange{"--n-head-kv", c.KVHeads, 1, inf, ""},
		intRange{"--n-ff", c.FF, 1, inf, ""},
		intRange{"--seq", c.Seq, 2, inf, "a token and the one after it at least"},
		intRange{"--steps", c.Steps, 1, inf, ""},
		intRange{"--batch", c.Batch, 1, inf, ""},
		intRange{"--warmup", c.Warmup, 0, inf, ""},
		intRange{"--checkpoint-every", c.CkptEvery, 0, inf, "0: only at the end"},
		intRange{"--stories", c.Stories, 1, inf, ""},
		intRange{"--story-tokens", c.StoryTokens, 1, model.MaxContextSize - 1, "the sampling context holds BOS and the story"},
		intRange{"--soft-top-k", c.SoftTopK, 1, inf, ""},
		intRange{"--es-iters", c.ESIters, 0, inf, "0: the task's default"},
		intRange{"--es-pop", c.ESPop, 0, inf, "0: the task's default"},
	); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	// Ctrl-C, SIGTERM or SIGHUP stop the steps; the checkpoint is saved first (the run resumes from it).
	ctx, stop := sigs.notifyContext(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if c.ES != "" {
		return c.runES(ctx, stderr, level)
	}
	mode := train.ModeTernary
	if c.Mode == "float" {
		mode = train.ModeFloat
	}
	var types []gguf.GGMLType
	for _, s := range strings.Split(c.Export, ",") {
		switch strings.TrimSpace(strings.ToLower(s)) {
		case "":
		case "tq2_0":
			types = append(types, gguf.TQ2_0)
		case "q2_0":
			types = append(types, gguf.Q2_0)
		case "f32":
			types = append(types, gguf.F32)
		default:
			return fmt.Errorf("train: --export %q: want tq2_0, q2_0 or f32", s)
		}
	}
	if mode == train.ModeFloat {
		for _, t := range types {
			if t != gguf.F32 {
				return fmt.Errorf("train: --export %s needs --mode ternary (a float student is exported as f32 and converted with bankml quantize)", t)
			}
		}
	}
	opt := train.DefaultOptions()
	opt.Steps, opt.Batch, opt.Warmup, opt.LR, opt.MinLR, opt.WeightDecay, opt.Clip, opt.Lambda, opt.Seed =
		c.Steps, c.Batch, c.Warmup, c.LR, c.MinLR, c.WD, c.Clip, c.Lambda, c.Seed
	if err := opt.Validate(); err != nil {
		return err
	}
	j := &train.Job{
		HeldOut: c.HeldOut, Out: c.Out, DataPath: c.Data,
		Config: train.Config{Embd: c.Embd, Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads, FF: c.FF, Seq: c.Seq,
			RMSEps: 1e-5, RopeBase: 10000, Mode: mode},
		Options:  opt,
		Sample:   train.SampleOptions{Stories: c.Stories, MaxTokens: c.StoryTokens, Seed: c.SampleSeed, Temp: c.Temp, Workers: int(c.Threads), TopK: c.SoftTopK},
		InitSeed: c.Seed, Threads: int(c.Threads), CheckpointEvery: c.CkptEvery, Export: types,
		Name: "bankml-student-" + mode.String(), Log: stderr, Level: level,
	}
	if j.DataPath == "" {
		j.DataPath = filepath.Join(c.Out, "data.tok")
	}
	j.Config.Vocab = 2 // set from the teacher by Run; Validate needs a placeholder
	if err := j.Config.Validate(); err != nil {
		return err
	}
	// The teacher and the held-out text, once the flags are checked and before the teacher is admitted (hashed)
	// and stories are drawn: both defaults are relative to the current folder (the repository's root), so a run
	// started elsewhere is told which flag, and a missing held-out text is not found only after the admission.
	for _, f := range []struct{ flag, field, path string }{{"--teacher", "Teacher", c.Teacher}, {"--heldout", "HeldOut", c.HeldOut}} {
		if err := inputFile(f.flag, f.field, f.path); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	teacher, err := openModel("train: --teacher", c.Teacher, nil, admit.Options{Manifest: c.Manifest, Pin: admit.AllowUnpinned}, stderr, stderr)
	if err != nil {
		return err
	}
	defer teacher.Close()
	j.Teacher = teacher.File
	return j.Run(ctx)
}

// inputFile refuses path, the value of flag (trainCmd's field field), when it names no file: missing, a folder, or
// not to be read; a missing default names the default as written, relative to the current folder.
func inputFile(flag, field, path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		msg := fmt.Sprintf("%s %s: no such file", flag, path)
		if sf, ok := reflect.TypeFor[trainCmd]().FieldByName(field); ok {
			if def := sf.Tag.Get("default"); def != "" {
				if abs, aerr := filepath.Abs(def); aerr == nil && abs == path {
					msg += fmt.Sprintf(" (the default, %s, is relative to the current folder: run from the repository's root or give %s FILE)", def, flag)
				}
			}
		}
		return errors.New(msg)
	case err != nil:
		return fmt.Errorf("%s: %w", flag, err)
	case st.IsDir():
		return fmt.Errorf("%s %s: is a folder, not a file", flag, path)
	}
	return nil
}

func (c *trainCmd) runES(ctx context.Context, stderr errWriter, level quant.Level) error {
	pool := parallel.New(int(c.Threads))
	defer pool.Close()
	if c.ES == "spirals" {
		o := train.DefaultSpirals()
		c.esOptions(&o.ES, &o.MaxIters)
		fmt.Fprintf(stderr, "es: two spirals (%d points each), 2→256→256→2 with TQ2_0 genomes of %d trits, %d antithetic pairs, flip rate %g, update fraction %g\n",
			o.Points, 256*256+2*256, o.ES.Pairs, o.ES.FlipRate, o.ES.UpdateFraction)
		r, err := train.RunSpirals(ctx, o, pool, level, func(it int, ce, acc float64) {
			fmt.Fprintf(stderr, "es: iteration %d  ce %.4f  accuracy %.4f\n", it, ce, acc)
		})
		if err != nil {
			return err
		}
		verdict := "PASS"
		if r.Accuracy < o.Target || !r.Verified {
			verdict = "FAIL"
		}
		fmt.Fprintf(stderr, "es: %s: accuracy %.4f (deployed int8 path, every point) after %d iterations, %.1f s; verified from the genome bytes: %v\n",
			verdict, r.Accuracy, r.Iters, r.Seconds, r.Verified)
		if verdict == "FAIL" {
			return cannotRun(fmt.Errorf("train: es spirals did not reach accuracy %g", o.Target))
		}
		return nil
	}
	// the student's last layers
	m, cp, err := train.LoadCheckpoint(filepath.Join(c.Out, "checkpoint.bin"))
	if err != nil {
		return err
	}
	_ = cp
	srcPath := filepath.Join(c.Out, "student-TQ2_0.gguf")
	src, err := gguf.Open(srcPath)
	if err != nil {
		return fmt.Errorf("train: es student: %w (train the ternary student into --out first)", err)
	}
	defer src.Close()
	dataPath := c.Data
	if dataPath == "" {
		dataPath = filepath.Join(c.Out, "data.tok")
	}
	data, err := train.ReadData(dataPath)
	if err != nil {
		return err
	}
	o := train.FineTuneOptions{ES: train.ESOptions{Seed: c.Seed, Pairs: 8, FlipRate: 0.0005, UpdateFraction: 0.001, Accept: true}, Iters: 100, Windows: 8, Seed: c.Seed + 1000, Lambda: c.Lambda}
	c.esOptions(&o.ES, &o.Iters)
	dstPath := filepath.Join(c.Out, "student-TQ2_0-es.gguf")
	f, err := os.Create(dstPath)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	fmt.Fprintf(stderr, "es: fine-tuning blk.%d.ffn_down and output of %s on %d windows: %d iterations of %d antithetic pairs\n", m.Cfg.Layers-1, srcPath, o.Windows, o.Iters, o.ES.Pairs)
	r, err := train.FineTuneLastLayers(ctx, m, src, data, o, f, pool, level, func(it int, loss float64) {
		if it%10 == 0 {
			fmt.Fprintf(stderr, "es: iteration %d  loss %.4f\n", it, loss)
		}
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dstPath)
		return err
	}
	fmt.Fprintf(stderr, "es: loss on the fine-tune windows %.4f -> %.4f after %d iterations (%.1f s); wrote %s\n", r.Before, r.After, r.Iters, r.Seconds, dstPath)
	return nil
}

// esOptions applies the --es-* flags that were set (0: the task's default; Run refused values below 0).
func (c *trainCmd) esOptions(o *train.ESOptions, iters *int) {
	if c.ESIters > 0 {
		*iters = c.ESIters
	}
	if c.ESPop > 0 {
		o.Pairs = c.ESPop
	}
	if c.ESFlipRate > 0 {
		o.FlipRate = c.ESFlipRate
	}
	if c.ESUpdate > 0 {
		o.UpdateFraction = c.ESUpdate
	}
	o.Seed = c.Seed
}
