package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/store"
)

// embedCmd is `bankml embed MODEL`: the embeddings of one or more texts, as llama.cpp's llama-embedding
// (examples/embedding) computes them: each text a sequence of its own (add_special and parse_special), pooled
// with --pooling (default: the model's), every vector normalized with --embd-normalize (common_embd_normalize:
// 2 euclidean, 0 max-absolute, -1 none, p > 2 the p-norm; a rank score is printed as it is), through the
// engine's Embed (the texts share forward passes, each vector its text's alone). Each text is one micro-batch
// of at most -b tokens: llama-embedding raises n_batch to -c when -c is larger and, its attention type being
// unspecified (not causal), sets n_ubatch = n_batch, so -ub changes nothing there (it warns here); a text past
// it is refused as llama-embedding refuses it, naming -b. -f FNAME gives the texts from a file (llamaflags.go).
type embedCmd struct {
	Model     string      `arg:"" optional:"" name:"MODEL" help:"A GGUF model file (or -m/--model FNAME), or a model NAME[:TAG] from the store, pulled from bankml's catalog on first use (pinned by its manifest)."`
	ModelFlag string      `short:"m" name:"model" placeholder:"FNAME" help:"Path to a GGUF model file, as llama-embedding's -m/--model, instead of MODEL." type:"path"`
	Prompt    *rawText    `short:"p" name:"prompt" help:"The texts, separated by --embd-separator (read from standard input when absent); llama-embedding's -f/--file FNAME gives a file's text instead (one trailing newline dropped; the last of -p and -f counts)."`
	Separator string      `name:"embd-separator" default:"\n" help:"Separator of the texts in the prompt, as llama-embedding's --embd-separator (default a newline)."`
	Pooling   string      `name:"pooling" enum:",none,mean,cls,last,rank" default:"" placeholder:"{none,mean,cls,last,rank}" help:"Pooling, as llama-embedding's --pooling (default: the model's {arch}.pooling_type)."`
	Normalize int         `name:"embd-normalize" default:"2" help:"Normalisation of each vector, as llama-embedding's --embd-normalize: -1 none, 0 max absolute (int16 range), 2 euclidean, p > 2 the p-norm."`
	Format    string      `name:"embd-output-format" enum:",array,json" default:"" help:"Output: \"\" one line per vector (its first and last values), array ([[...],...]), or json ({\"object\": \"list\", \"data\": [...]}); array and json print every value exactly (Go's shortest round-trip form, where llama-embedding prints %1.7f)."`
	Threads   threadCount `short:"t" name:"threads" default:"${nproc}" help:"Number of threads (default: the number of logical CPUs)."`
	Ctx       int         `short:"c" name:"ctx-size" aliases:"ctx" default:"0" help:"Context size in tokens (0: the model's training context)."`
	Batch     int         `short:"b" name:"batch-size" default:"2048" help:"Batch size, as llama-embedding's -b/--batch-size: the most tokens one text may have, each text evaluated as one micro-batch (raised to -c when -c is larger, as llama-embedding does)."`
	UBatch    *int        `name:"ubatch-size" placeholder:"N" help:"Physical batch size, as llama-embedding's -ub/--ubatch-size, which it sets to -b for embeddings: taken and ignored with a warning."`
	Manifest  string      `name:"manifest" help:"Provenance manifest (FORK.json), or the file's sha256 digest, to pin the model against; without it the model runs unpinned and says so."`

	storeFlag  `embed:""` // --models: the store a NAME comes from (storemodel.go)
	mirrorFlag `embed:""` // --from: the mirror a NAME is pulled from on first use
}

// Run embeds the texts and prints the vectors.
func (c *embedCmd) Run(stdin io.Reader, stdout io.Writer, stderr errWriter) error {
	path := c.Model
	if c.ModelFlag != "" {
		if path != "" {
			return errors.New("embed: give the model as MODEL or -m/--model, not both")
		}
		path = c.ModelFlag
	}
	if path == "" {
		return errors.New("embed: no model: give MODEL or -m/--model FNAME")
	}
	if err := checkCtxSize(c.Ctx); err != nil { // a usage error (1), before any file is read
		return fmt.Errorf("embed: %w", err)
	}
	if err := checkRanges(intRange{"-b/--batch-size", c.Batch, 1, math.MaxInt32, "tokens: the most one text may have"}); err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	if c.UBatch != nil {
		if err := checkInt32("-ub/--ubatch-size", *c.UBatch); err != nil {
			return fmt.Errorf("embed: %w", err)
		}
		fmt.Fprintf(stderr, "bankml: -ub %d ignored: llama-embedding sets the physical batch of embeddings to -b's (n_ubatch = n_batch)\n", *c.UBatch)
	}
	nBatch := c.Batch
	if nBatch < c.Ctx { // llama-embedding: "setting batch size to" n_ctx
		fmt.Fprintf(stderr, "bankml: embed: setting batch size to %d (-c), as llama-embedding does\n", c.Ctx)
		nBatch = c.Ctx
	}
	var text string
	if c.Prompt != nil {
		text = string(*c.Prompt)
	} else {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("embed: reading the texts from standard input: %w", err)
		}
		text = strings.TrimSuffix(string(b), "\n")
	}
	texts := strings.Split(text, c.Separator)
	var err error
	var stored *store.Manifest
	if path, c.Manifest, stored, err = storeModel("embed", path, c.Manifest, c.storeFlag, c.From, stderr); err != nil {
		return err
	}
	am, err := openModel("embed", path, stored, admit.Options{Manifest: c.Manifest, Pin: admit.AllowUnpinned}, stderr, stderr)
	if err != nil {
		return err
	}
	defer am.Close()
	m, tok := am.Model, am.Tokenizer
	e, err := engine.New(m, tok, nil, engine.Options{NCtx: c.Ctx, Threads: int(c.Threads), Pooling: c.Pooling, BatchSize: nBatch,
		EmbedUBatch: nBatch, NoSettle: true})
	if err != nil {
		return cannotRun(fmt.Errorf("embed: %w", err))
	}
	defer e.Close()
	inputs := make([][]int32, len(texts))
	for i, t := range texts {
		inputs[i] = tok.Tokenize(t, true, true)
	}
	res, err := e.Embed(context.Background(), inputs)
	var le *engine.EmbedLengthError
	switch {
	case errors.As(err, &le) && le.UBatch > 0: // llama-embedding's words, and the flag
		return fmt.Errorf("embed: text %d: number of tokens in input line (%d) exceeds batch size (%d), increase batch size (-b/--batch-size) and re-run", le.Index, le.Tokens, le.UBatch)
	case errors.As(err, &le):
		return fmt.Errorf("embed: text %d: %d tokens do not fit the context of %d tokens (-c/--ctx-size, at most the model's training context, %d)", le.Index, le.Tokens, le.NCtx, m.HP.NCtxTrain)
	case err != nil:
		return fmt.Errorf("embed: %w", err)
	}
	var vecs [][]float32
	for _, r := range res {
		if r.Pooled == nil {
			d := m.HP.NEmbd
			for i := 0; i < len(r.Rows); i += d {
				vecs = append(vecs, r.Rows[i:i+d])
			}
			continue
		}
		vecs = append(vecs, r.Pooled)
	}
	rank := e.Pooling() == embed.PoolingRank
	for i, v := range vecs {
		if !rank {
			out := make([]float32, len(v))
			embed.Normalize(out, v, c.Normalize)
			vecs[i] = out
		}
	}
	return printEmbeddings(stdout, vecs, c.Format, rank, c.Normalize)
}

// printEmbeddings writes vecs as llama-embedding lays them out: "embedding N: " and the first and last
// three values with %9.6f (%6.0f for --embd-normalize 0; every value of at most 16 when several, all of
// one), or "rerank score N: %8.3f"; or exactly, as a JSON array of arrays or an OpenAI-like list.
func printEmbeddings(w io.Writer, vecs [][]float32, format string, rank bool, norm int) error {
	switch format {
	case "array", "json":
		arrs := make([][]float64, len(vecs))
		for i, v := range vecs {
			arrs[i] = make([]float64, len(v))
			for k, x := range v {
				arrs[i][k] = float64(x)
			}
		}
		var out any = arrs
		if format == "json" {
			type item struct {
				Object    string    `json:"object"`
				Index     int       `json:"index"`
				Embedding []float64 `json:"embedding"`
			}
			data := make([]item, len(arrs))
			for i, a := range arrs {
				data[i] = item{"embedding", i, a}
			}
			out = struct {
				Object string `json:"object"`
				Data   []item `json:"data"`
			}{"list", data}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	num := "%9.6f "
	if norm == 0 {
		num = "%6.0f "
	}
	for j, v := range vecs {
		if rank {
			if _, err := fmt.Fprintf(w, "rerank score %d: %8.3f\n", j, v[0]); err != nil {
				return err
			}
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "embedding %d: ", j)
		if len(v) > 6 {
			for _, x := range v[:3] {
				fmt.Fprintf(&b, num, x)
			}
			b.WriteString(" ... ")
			for _, x := range v[len(v)-3:] {
				fmt.Fprintf(&b, num, x)
			}
		} else {
			for _, x := range v {
				fmt.Fprintf(&b, num, x)
			}
		}
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}
