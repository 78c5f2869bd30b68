package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/tokenizer"
)

type runCmd struct {
	Model     string  `arg:"" name:"MODEL" help:"Path to a GGUF model file." type:"path"`
	Prompt    *string `short:"p" name:"prompt" help:"Prompt text; read from standard input when absent."`
	NPredict  int     `short:"n" name:"n-predict" default:"-1" help:"Number of tokens to generate; -1 generates until an end-of-generation token or a full context."`
	Temp      float32 `name:"temp" default:"0" help:"Temperature; 0 is greedy."`
	TopK      int     `name:"top-k" default:"40" help:"Top-k sampling (0 = off); used when temp > 0."`
	TopP      float32 `name:"top-p" default:"0.95" help:"Top-p sampling (1 = off); used when temp > 0."`
	Seed      uint64  `name:"seed" default:"0" help:"Seed of the sampler's random draw."`
	Threads   int     `short:"t" name:"threads" default:"${nproc}" help:"Number of threads (default: the number of CPUs)."`
	Ctx       int     `short:"c" name:"ctx-size" default:"4096" help:"Context size in tokens; 0 takes the model's training context."`
	IgnoreEOS bool    `name:"ignore-eos" help:"Keep generating past end-of-generation tokens."`
}

// cannotRun marks errors that mean "this file cannot be run" (exit status 2).
func cannotRun(err error) error { return &exitError{code: 2, err: err} }

func (r *runCmd) Run(stdin io.Reader, stdout io.Writer, stderr errWriter) error {
	if r.Threads < 1 {
		return fmt.Errorf("run: --threads %d: must be at least 1", r.Threads)
	}
	sp := sample.Params{Temp: r.Temp, TopK: r.TopK, TopP: r.TopP, Seed: r.Seed}
	if err := sp.Validate(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	prompt := ""
	if r.Prompt != nil {
		prompt = *r.Prompt
	} else {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("run: reading the prompt from standard input: %w", err)
		}
		prompt = strings.TrimSuffix(string(b), "\n")
	}

	f, err := gguf.Open(r.Model)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && !errors.Is(err, gguf.ErrTruncated) {
			return err // I/O: exit 1
		}
		return cannotRun(err)
	}
	defer f.Close()
	m, err := model.Load(f)
	if err != nil {
		return cannotRun(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return cannotRun(err)
	}
	if tok.NVocab() != m.HP.NVocab {
		return cannotRun(fmt.Errorf("run: tokenizer has %d tokens, token_embd.weight %d rows", tok.NVocab(), m.HP.NVocab))
	}

	ids := tok.Tokenize(prompt, true, false)
	if len(ids) == 0 {
		return errors.New("run: the prompt is empty and the model adds no BOS token")
	}
	n := r.NPredict
	nCtx := r.Ctx
	switch {
	case nCtx == 0:
		nCtx = m.HP.NCtxTrain
	case nCtx < 0:
		return fmt.Errorf("run: --ctx-size %d: must be 0 or positive", nCtx)
	}
	if len(ids) >= nCtx {
		return fmt.Errorf("run: the prompt is %d tokens and the context %d: no room to generate (raise --ctx-size)", len(ids), nCtx)
	}
	if n < 0 || len(ids)+n > nCtx {
		n = nCtx - len(ids)
	}
	c := m.NewContext(nCtx, r.Threads)
	s := sample.New(sp)
	dec := tokenizer.NewDecoder(tok, false)

	t0 := time.Now()
	logits, err := c.Decode(ids)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	tPrompt := time.Since(t0)
	t1 := time.Now()
	generated := 0
	for generated < n {
		next := s.Sample(logits)
		if !r.IgnoreEOS && tok.IsEOG(next) {
			break
		}
		generated++
		if _, err := stdout.Write(dec.Write(next)); err != nil {
			return err
		}
		if generated == n {
			break
		}
		if logits, err = c.Decode([]int32{next}); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	if _, err := stdout.Write(dec.Close()); err != nil {
		return err
	}
	tGen := time.Since(t1)
	fmt.Fprintf(stderr, "\nprompt: %d tokens (%.1f tok/s), generated: %d tokens (%.1f tok/s)\n",
		len(ids), float64(len(ids))/tPrompt.Seconds(), generated, float64(generated)/tGen.Seconds())
	return nil
}
