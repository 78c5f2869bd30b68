package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
)

// synthCmd writes a deterministic synthetic model (package internal/synth).
type synthCmd struct {
	Out        string `arg:"" name:"OUT.gguf" help:"File to write (an existing file is kept unless --force; written through a temporary file beside it)." type:"path"`
	Arch       string `name:"arch" required:"" enum:"llama,qwen3,qwen2,gemma3,phi3,bitnet,bert" help:"Architecture: llama, qwen3, qwen2, gemma3, phi3, bitnet or bert (each with synth.ForArch's settings: gemma3's sliding window, phi3's fused QKV and rope factors, bitnet's weight scales, bert's token types and mean pooling)."`
	Preset     string `name:"preset" required:"" enum:"tiny,bonsai-1.7b,bonsai-8b" help:"Shapes: tiny (n_embd 256, 2 layers), bonsai-1.7b (Qwen3-1.7B), bonsai-8b (Qwen3-8B)."`
	Type       string `name:"type" required:"" help:"Type of the blocks' 2-D weights: F32, F16, BF16, Q8_0, Q4_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q1_0, Q2_0, TQ1_0 or TQ2_0."`
	TypeEmbd   string `name:"type-embd" help:"Type of token_embd (default: --type)."`
	TypeOutput string `name:"type-output" help:"Type of output (default: --type)."`
	Vocab      string `name:"vocab" default:"synthetic" help:"Vocabulary: synthetic (byte-level BPE of the preset's size), qwen3 (the real Qwen3 tokenizer, 151936 ids), or a GGUF file whose tokenizer.* keys are copied (e.g. ../shared/models/vocab/ggml-vocab-bert-bge.gguf)."`
	Pooling    string `name:"pooling" enum:",none,mean,cls,last,rank" default:"" help:"{arch}.pooling_type: none, mean, cls, last or rank (default: bert's mean, none written for the others)."`
	Classifier int    `name:"classifier" help:"Labels of a ranking head (cls.output; bert also cls): a reranker for --pooling rank (bert and qwen3)."`
	Tokenizer  string `name:"tokenizer" help:"Folder holding the Qwen3 tokenizer.json(.gz) and tokenizer_config.json for --vocab qwen3 (default: $$BANKML_TESTDATA/qwen3, else ../shared/models/qwen3)." type:"path"`
	Seed       uint64 `name:"seed" default:"0" help:"Seed of the weights; the same flags and seed give the same bytes."`
	Tied       bool   `name:"tied" help:"Leave out output.weight (tied embeddings) whatever the preset says."`
	Force      bool   `name:"force" help:"Overwrite OUT if it exists (a regular file only)."`
}

// Run plans the model, streams it to the file and reports what was written.
func (c *synthCmd) Run(stdout io.Writer, sigs *signals) error {
	shape, err := synth.Preset(c.Preset)
	if err != nil {
		return err
	}
	shape = synth.ForArch(c.Arch, shape)
	shape.Tied = shape.Tied || c.Tied
	if c.Pooling != "" {
		shape.Pooling = c.Pooling
	}
	shape.Classifier = c.Classifier
	cfg := synth.Config{Arch: c.Arch, Shape: shape, Seed: c.Seed}
	if cfg.Weight, err = synth.ParseType(c.Type); err != nil {
		return synthFlagError("--type", err)
	}
	cfg.Embd, cfg.Output = cfg.Weight, cfg.Weight
	for _, f := range []struct {
		flag, value string
		t           *gguf.GGMLType
	}{{"--type-embd", c.TypeEmbd, &cfg.Embd}, {"--type-output", c.TypeOutput, &cfg.Output}} {
		if f.value != "" {
			if *f.t, err = synth.ParseType(f.value); err != nil {
				return synthFlagError(f.flag, err)
			}
		}
	}
	switch c.Vocab {
	case "synthetic":
	case "qwen3":
		dir, err := c.tokenizerDir()
		if err != nil {
			return err
		}
		if cfg.Vocab, err = synth.Qwen3Vocab(dir, synth.Qwen3NVocab); err != nil {
			return err
		}
	default:
		if err := notDirectory("synth: --vocab", c.Vocab); err != nil {
			return err // a usage error (1), as a directory given for any file
		}
		if cfg.Vocab, err = synth.VocabFromGGUF(c.Vocab); err != nil {
			return vocabError(err)
		}
	}
	cfg.Description = fmt.Sprintf("bankml synth --arch %s --preset %s --type %s --type-embd %s --type-output %s --vocab %s --seed %d",
		c.Arch, c.Preset, strings.ToUpper(cfg.Weight.String()), strings.ToUpper(cfg.Embd.String()),
		strings.ToUpper(cfg.Output.String()), filepath.Base(c.Vocab), c.Seed)
	if shape.Tied {
		cfg.Description = strings.Replace(cfg.Description, " --type-output "+strings.ToUpper(cfg.Output.String()), " --tied", 1)
	}
	// Ctrl-C, SIGTERM or SIGHUP stop the write and remove the temporary file.
	ctx, stop := sigs.notifyContext(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	start := time.Now()
	size, err := synth.WriteFileContext(ctx, c.Out, cfg, c.Force)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s: %d bytes, %s %s %s, %s vocabulary, seed %d, %.1fs\n", c.Out, size, c.Arch, c.Preset,
		strings.ToUpper(cfg.Weight.String()), c.Vocab, c.Seed, time.Since(start).Seconds())
	return err
}

// synthFlagError is a bad value of flag (--type, --type-embd, --type-output) as package synth refused it, worded
// "synth: FLAG: what is wrong" (the library's own "synth: bad configuration: " dropped, so the command's name
// comes first and once); it wraps err, and is a usage error (exit 1).
func synthFlagError(flag string, err error) error {
	msg := strings.TrimPrefix(err.Error(), synth.ErrConfig.Error()+": ")
	return &namedError{msg: "synth: " + flag + ": " + strings.TrimPrefix(msg, "synth: "), err: err}
}

// vocabError is --vocab FILE's error from synth.VocabFromGGUF, worded "synth: --vocab: FILE: what is wrong", with
// the exit statuses of every command that reads a GGUF file (openGGUF): 1 when the file cannot be read (missing,
// unreadable), 2 when it reads but is no valid GGUF file or holds no vocabulary.
func vocabError(err error) error {
	msg := err.Error()
	for _, p := range []string{"synth: vocabulary: ", "synth: vocabulary "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			msg = rest
			break
		}
	}
	err = &namedError{msg: "synth: --vocab: " + msg, err: err}
	var pe *os.PathError
	if errors.As(err, &pe) && !errors.Is(err, gguf.ErrTruncated) {
		return err
	}
	return cannotRun(err)
}

// tokenizerDir returns --tokenizer, or the first default folder that holds a Qwen3 tokenizer.
func (c *synthCmd) tokenizerDir() (string, error) {
	if c.Tokenizer != "" {
		return c.Tokenizer, nil
	}
	var tried []string
	if m := os.Getenv("BANKML_TESTDATA"); m != "" {
		tried = append(tried, filepath.Join(m, "qwen3"))
	}
	tried = append(tried, filepath.Join("..", "shared", "models", "qwen3"))
	for _, d := range tried {
		if _, err := os.Stat(filepath.Join(d, "tokenizer_config.json")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("synth: --vocab qwen3: no Qwen3 tokenizer in " + strings.Join(tried, " or ") + "; name its folder with --tokenizer")
}
