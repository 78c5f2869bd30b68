package train

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/tokenizer"
)

// Job is one `bankml train` run of a student: distil a training set from the teacher (or reuse the one in Out),
// train, checkpoint, draw the curve and export.
type Job struct {
	Teacher         *gguf.File // the admitted teacher (its caller closes it)
	HeldOut         string     // text kept out of the training set (perplexity's held-out stories); read on every run: DataPath is reused only when filtered against it
	Out             string     // directory of the run: checkpoint.bin, loss.csv, loss.svg, the GGUF files
	DataPath        string     // the training data file (drawn when absent or drawn otherwise; its options in DataPath.json)
	Config          Config     // the student (Vocab is taken from the teacher)
	Options         Options
	Sample          SampleOptions
	InitSeed        uint64
	Threads         int
	CheckpointEvery int             // steps between checkpoints (0: only at the end)
	Export          []gguf.GGMLType // the GGUF files written at the end
	Name            string          // general.name of the exported files
	Log             io.Writer       // the progress lines
	Level           quant.Level     // the CPU level of the products
}

// sampleMeta records how data.tok was drawn, so that a run reuses it only for the same teacher, options and
// held-out text.
type sampleMeta struct {
	Teacher  string        `json:"teacher_name"`
	Sample   SampleOptions `json:"sample"`
	Stories  int           `json:"stories_kept"`
	Dropped  int           `json:"stories_dropped_heldout"`
	Tokens   int           `json:"tokens"`
	HeldSpan int           `json:"heldout_span"`
	// HeldOut is the sha256 of the held-out text the stories were filtered against: data drawn against another
	// text (or recorded before this field) is drawn again, never reused unchecked.
	HeldOut string `json:"heldout_sha256"`
}

// heldSpan is the run of tokens that HeldOutFilter matches.
const heldSpan = 12

// Run runs the job; a checkpoint.bin in Out is resumed (bit-identically).
func (j *Job) Run(ctx context.Context) error {
	if err := os.MkdirAll(j.Out, 0o755); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	tm, err := model.Load(j.Teacher)
	if err != nil {
		return fmt.Errorf("train: teacher: %w", err)
	}
	defer tm.Close()
	tok, err := tokenizer.FromGGUF(j.Teacher)
	if err != nil {
		return fmt.Errorf("train: teacher: %w", err)
	}
	j.Config.Vocab = tm.HP.NVocab
	data, err := j.data(ctx, tm, tok)
	if err != nil {
		return err
	}
	pool := parallel.New(j.Threads)
	defer pool.Close()
	ckpt := filepath.Join(j.Out, "checkpoint.bin")
	var (
		m  *Model
		cp *Checkpoint
	)
	if _, err := os.Stat(ckpt); err == nil {
		if m, cp, err = LoadCheckpoint(ckpt); err != nil {
			return err
		}
		if m.Cfg != j.Config {
			return fmt.Errorf("train: %s holds a %+v model, this run asks for %+v (another --out, or the same flags)", ckpt, m.Cfg, j.Config)
		}
		steps := j.Options.Steps
		j.Options = cp.Options
		j.Options.Steps = max(steps, cp.Step)
		fmt.Fprintf(j.Log, "train: resuming %s at step %d of %d\n", ckpt, cp.Step, j.Options.Steps)
	} else if m, err = NewModel(j.Config, j.InitSeed); err != nil {
		return err
	}
	tr, err := NewTrainer(m, j.Options, data, pool, j.Level)
	if err != nil {
		return err
	}
	if cp != nil {
		if err := tr.Resume(cp); err != nil {
			return err
		}
	}
	fmt.Fprintf(j.Log, "train: %s student, %d weights (n_embd %d, %d layers, %d heads / %d KV, n_ff %d), %d training tokens, batch %d×%d, %d steps, %d threads\n",
		m.Cfg.Mode, m.Params(), m.Cfg.Embd, m.Cfg.Layers, m.Cfg.Heads, m.Cfg.KVHeads, m.Cfg.FF, len(data.Tokens), tr.Opt.Batch, m.Cfg.Seq, tr.Opt.Steps, j.Threads)
	start, t0 := tr.Step, time.Now()
	err = tr.Run(ctx, func(r Record) error {
		el := time.Since(t0).Seconds()
		rate := float64(r.Step-start) / el
		eta := time.Duration(float64(tr.Opt.Steps-r.Step) / rate * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(j.Log, "step %d/%d  ce %.4f  kl %.4f  lr %.2e  |g| %.3f  %.0f tok/s  eta %s\n", r.Step, tr.Opt.Steps, r.CE, r.KL, r.LR, r.GNorm,
			rate*float64(tr.Opt.Batch*m.Cfg.Seq), eta)
		if j.CheckpointEvery > 0 && r.Step%j.CheckpointEvery == 0 && r.Step < tr.Opt.Steps {
			return j.save(tr)
		}
		return nil
	})
	if serr := j.save(tr); err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	for _, typ := range j.Export {
		path := filepath.Join(j.Out, fmt.Sprintf("student-%s.gguf", strings.ToUpper(typ.String())))
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		err = Export(f, m, TokenizerKVs(j.Teacher), typ, j.Name)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return err
		}
		fmt.Fprintf(j.Log, "train: wrote %s\n", path)
	}
	return nil
}

// save writes the checkpoint, the CSV and the SVG of the curve so far.
func (j *Job) save(tr *Trainer) error {
	if err := tr.SaveCheckpoint(filepath.Join(j.Out, "checkpoint.bin")); err != nil {
		return err
	}
	for _, w := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"loss.csv", func(w io.Writer) error { return WriteCSV(w, tr.History) }},
		{"loss.svg", func(w io.Writer) error {
			return WriteSVG(w, tr.History, fmt.Sprintf("%s student: loss per step", tr.Model.Cfg.Mode))
		}},
	} {
		f, err := os.Create(filepath.Join(j.Out, w.name))
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		err = w.write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("train: %s: %w", w.name, err)
		}
	}
	return nil
}

// data returns the training stream: data.tok in Out when it was drawn with the same options and filtered
// against the same held-out text (its sha256, which is why the held-out text is read on every run), else drawn
// now from the teacher through the engine and filtered against the held-out text.
func (j *Job) data(ctx context.Context, tm *model.Model, tok tokenizer.Tokenizer) (*Data, error) {
	path, metaPath := j.DataPath, j.DataPath+".json"
	text, err := os.ReadFile(j.HeldOut)
	if err != nil {
		return nil, fmt.Errorf("train: held-out text: %w", err)
	}
	name, _ := j.Teacher.GetString("general.name")
	want := sampleMeta{Teacher: name, Sample: j.Sample, HeldSpan: heldSpan, HeldOut: fmt.Sprintf("%x", sha256.Sum256(text))}
	want.Sample.Workers = 0 // the stories do not depend on it
	if b, err := os.ReadFile(metaPath); err == nil {
		var have sampleMeta
		if json.Unmarshal(b, &have) == nil && have.Teacher == want.Teacher && have.Sample == want.Sample && have.HeldSpan == heldSpan {
			if have.HeldOut != want.HeldOut {
				fmt.Fprintf(j.Log, "train: drawing %s again: it was filtered against another held-out text than %s\n", path, j.HeldOut)
			} else if d, err := ReadData(path); err == nil && len(d.Tokens) == have.Tokens {
				fmt.Fprintf(j.Log, "train: reusing %s (%d stories, %d tokens, filtered against %s)\n", path, have.Stories, len(d.Tokens), j.HeldOut)
				return d, nil
			}
		}
	}
	heldout := tok.Tokenize(string(text), false, false)
	if len(heldout) < heldSpan {
		return nil, errors.New("train: the held-out text is shorter than one matched span")
	}
	eng, err := engine.New(tm, tok, nil, engine.Options{NCtx: j.Sample.MaxTokens + 1, Threads: 1, Parallel: j.Sample.Workers})
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	defer eng.Close()
	t0 := time.Now()
	last := time.Now()
	stories, err := SampleStories(ctx, eng, tok.BOS(), tok.EOGs(), j.Sample, func(done, tokens int) {
		if time.Since(last) > 10*time.Second || done == j.Sample.Stories {
			last = time.Now()
			fmt.Fprintf(j.Log, "sample: %d/%d stories, %d tokens, %.0f tok/s\n", done, j.Sample.Stories, tokens, float64(tokens)/time.Since(t0).Seconds())
		}
	})
	if err != nil {
		return nil, err
	}
	kept, dropped := HeldOutFilter(stories, heldout, heldSpan)
	d := Stream(kept, j.Sample.TopK)
	fmt.Fprintf(j.Log, "sample: %d stories kept, %d dropped for sharing %d tokens in a row with %s; %d tokens\n", len(kept), dropped, heldSpan, j.HeldOut, len(d.Tokens))
	if err := WriteData(path, d); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	want.Stories, want.Dropped, want.Tokens = len(kept), dropped, len(d.Tokens)
	b, _ := json.MarshalIndent(want, "", "  ")
	if err := os.WriteFile(metaPath, b, 0o644); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	return d, nil
}
