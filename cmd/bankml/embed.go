package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/store"
	"github.com/bankml/bankml/tokenizer"
)

// embedCmd is `bankml embed MODEL`: the embeddings of one or more texts, as llama.cpp's llama-embedding
// (examples/embedding) computes them: each text a sequence of its own (add_special and parse_special), pooled
// with --pooling (default: the model's), every vector normalized with --embd-normalize (common_embd_normalize:
// 2 euclidean, 0 max-absolute, -1 none, any other integer the p-norm; a rank text's scores too, as
// llama-embedding's batch_decode normalizes whatever llama_get_embeddings_seq gives, so a one-label reranker's
// score is ±1 or 0 unless --embd-normalize -1), through the engine's Embed (the texts share forward passes,
// each vector its text's alone). Each text is one micro-batch
// of at most -b tokens: llama-embedding raises n_batch to -c when -c is larger and, its attention type being
// unspecified (not causal), sets n_ubatch = n_batch, so -ub changes nothing there (it warns here); a text past
// it is refused as llama-embedding refuses it, naming -b. -f FNAME gives the texts from a file (llamaflags.go).
// With --pooling rank, a text holding --cls-separator (default a tab) is a query and its document, tokenized as
// llama-embedding pairs them (rankTokens). The output is llama-embedding's (printEmbeddings).
type embedCmd struct {
	Model     string      `arg:"" optional:"" name:"MODEL" help:"A GGUF model file (or -m/--model FNAME), or a model NAME[:TAG] from the store, pulled from bankml's catalog on first use (pinned by its manifest)."`
	ModelFlag string      `short:"m" name:"model" placeholder:"FNAME" help:"Path to a GGUF model file, as llama-embedding's -m/--model, instead of MODEL." type:"path"`
	Prompt    *rawText    `short:"p" name:"prompt" help:"The texts, separated by --embd-separator (read from standard input when absent); llama-embedding's -f/--file FNAME gives a file's text instead (one trailing newline dropped; the last of -p and -f counts)."`
	Escape    bool        `short:"e" name:"escape" negatable:"" default:"true" help:"Process the escapes \\n \\r \\t \\' \\\" \\\\ and \\xHH in the texts (-p, -f or standard input) before they are split, as llama-embedding's -e/--escape, on by default (so -p 'query\\tdocument' holds a tab); --no-escape takes them as they are."`
	Separator string      `name:"embd-separator" default:"\n" help:"Separator of the texts in the prompt, as llama-embedding's --embd-separator (default a newline)."`
	ClsSep    string      `name:"cls-separator" default:"\t" placeholder:"STRING" help:"Separator of a query and its document(s) in one text, with --pooling rank, as llama-embedding's --cls-separator (default a tab): the text is split on it and scored as the pair, through the model's rerank template (tokenizer.chat_template.rerank, {query} and {document}) or else joined by its EOS and SEP tokens' text."`
	Pooling   string      `name:"pooling" enum:",none,mean,cls,last,rank" default:"" placeholder:"{none,mean,cls,last,rank}" help:"Pooling, as llama-embedding's --pooling (default: the model's {arch}.pooling_type)."`
	Normalize int         `name:"embd-normalize" default:"2" help:"Normalisation of each vector, as llama-embedding's --embd-normalize: -1 none, 0 max absolute (int16 range), 2 euclidean, any other integer p (1, 3 and above, -2 and below) the p-norm. With --pooling rank it normalizes each text's scores too, as llama-embedding does: give -1 for the model's scores as they are (with 2, a one-label reranker's score becomes 1, -1 or 0)."`
	Format    string      `name:"embd-output-format" enum:",array,json,json+,raw" default:"" help:"Output: \"\" llama-embedding's text (one line per vector, and the cosine similarity matrix of several texts), array ([[...],...]), json ({\"object\": \"list\", \"data\": [...]}), json+ (json and, for several texts, \"cosineSimilarity\": the matrix, %.2f as llama-embedding prints it), or raw (one vector per line, its values separated by spaces, %1.7f (%1.0f with --embd-normalize 0) as llama-embedding prints them, then a blank line); array and json print every value exactly (Go's shortest round-trip form, where llama-embedding prints %1.7f)."`
	Threads   threadCount `short:"t" name:"threads" default:"${nproc}" help:"Number of threads (default: the number of logical CPUs)."`
	Ctx       int         `short:"c" name:"ctx-size" aliases:"ctx" default:"0" help:"Context size in tokens (0: the model's training context)."`
	Batch     int         `short:"b" name:"batch-size" default:"2048" help:"Batch size, as llama-embedding's -b/--batch-size: the most tokens one text may have, each text evaluated as one micro-batch (raised to -c when -c is larger, as llama-embedding does)."`
	UBatch    *int        `name:"ubatch-size" placeholder:"N" help:"Physical batch size, as llama-embedding's -ub/--ubatch-size, which it sets to -b for embeddings: taken and ignored with a warning."`
	Manifest  string      `name:"manifest" help:"Provenance manifest (FORK.json), or the file's sha256 digest, to pin the model against; without it the model runs unpinned and says so."`

	storeFlag  `embed:""` // --models: the store a NAME comes from (storemodel.go)
	mirrorFlag `embed:""` // --from: the mirror a NAME is pulled from on first use
}

// Run embeds the texts and prints the vectors.
func (c *embedCmd) Run(stdin io.Reader, stdout io.Writer, stderr errWriter, sigs *signals) error {
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
	if c.Separator == "" { // llama-embedding's split_lines never ends on an empty separator
		return errors.New(`embed: --embd-separator "" is empty: the prompt is split into texts on it; give a non-empty separator (the default is a newline)`)
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
	if c.Escape { // common_params_parse escapes params.prompt (common/arg.cpp), -f's text too
		text = processEscapes(text)
	}
	texts := strings.Split(text, c.Separator)
	var err error
	var stored *store.Manifest
	if path, c.Manifest, stored, err = storeModel("embed", path, c.Manifest, c.storeFlag, c.From, stderr, sigs); err != nil {
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
	rank := e.Pooling() == embed.PoolingRank
	if rank && c.ClsSep == "" { // llama-embedding's split_lines never ends on an empty separator
		return errors.New(`embed: --cls-separator "" is empty: with --pooling rank a text is split on it; give a non-empty separator (the default is a tab)`)
	}
	inputs := make([][]int32, len(texts))
	for i, t := range texts {
		if rank && strings.Contains(t, c.ClsSep) {
			inputs[i] = rankTokens(am.File, tok, strings.Split(t, c.ClsSep))
			continue
		}
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
		switch {
		case r.Pooled == nil:
			d := m.HP.NEmbd
			for i := 0; i < len(r.Rows); i += d {
				vecs = append(vecs, r.Rows[i:i+d])
			}
		case rank: // llama_get_embeddings_seq gives a rank text's n_cls_out scores
			vecs = append(vecs, r.Pooled[:min(len(r.Pooled), m.HP.NClsOut)])
		default:
			vecs = append(vecs, r.Pooled)
		}
	}
	for i, v := range vecs {
		out := make([]float32, len(v))
		embed.Normalize(out, v, c.Normalize)
		vecs[i] = out
	}
	var labels []string
	if rank {
		labels = clsLabels(m.HP.NClsOut, m.HP.ClsLabels)
	}
	return printEmbeddings(stdout, vecs, texts, c.Format, e.Pooling(), c.Normalize, labels)
}

// clsLabels is llama-embedding's name of each of a ranking head's n scores: the model's
// {arch}.classifier.output_labels entry, or its index where the entry is missing or empty.
func clsLabels(n int, names []string) []string {
	labels := make([]string, n)
	for i := range labels {
		labels[i] = strconv.Itoa(i)
		if i < len(names) && names[i] != "" {
			labels[i] = names[i]
		}
	}
	return labels
}

// rankTokens is llama-embedding's tokens of a text that --cls-separator splits into pairs, under --pooling
// rank: with the model's tokenizer.chat_template.rerank, that template with {query} replaced by the first
// part and {document} by the second; else the parts joined by the text of the EOS token (when the vocabulary
// adds EOS) and of the SEP token (when it adds SEP); tokenized with the special tokens added and parsed.
func rankTokens(f *gguf.File, tok tokenizer.Tokenizer, pairs []string) []int32 {
	if tmpl, ok := f.GetString("tokenizer.chat_template.rerank"); ok {
		p := strings.ReplaceAll(tmpl, "{query}", pairs[0])
		p = strings.ReplaceAll(p, "{document}", pairs[1])
		return tok.Tokenize(p, true, true)
	}
	var join string
	if eos := tok.EOS(); tok.AddEOS() && eos >= 0 {
		join += tok.TokenText(eos)
	}
	if sep, add := serve.SepToken(f, tok.NVocab()); add && sep >= 0 {
		join += tok.TokenText(sep)
	}
	return tok.Tokenize(strings.Join(pairs, join), true, true)
}

// printEmbeddings writes vecs as llama-embedding (examples/embedding) prints them. With no format, its text
// byte for byte: a blank line; "embedding N: " and the values with "%9.6f " ("%6.0f " for --embd-normalize 0),
// with --pooling none every token row's first three, " ... " and last three; with rank, for each text and
// each of the ranking head's labels (one a score), "rerank score N: %8.3f", followed by " [LABEL]" when
// there are several; else every value of one text, the first 16 of each of several, then the cosine
// similarity matrix (embed.SimilarityCos, "%6.2f ") under the texts' first 6 bytes ("%6.6s "), each row
// ending in its text's first 10 bytes; and a blank line. With raw (print_raw_embeddings), one line per
// vector (a rank text's scores, a token row with --pooling none), its values "%1.7f" ("%1.0f" for
// --embd-normalize 0) separated by one space, then a blank line. Otherwise every value exactly, as a JSON
// array of arrays (array) or an OpenAI-like list (json), json+ adding "cosineSimilarity", the matrix of
// every vector with each other (%.2f as llama-embedding prints them), when there are several texts. Numbers
// are printed as C's printf prints them (cFloat). labels names a ranking head's scores (clsLabels): with
// rank, each vector holds len(labels) of them.
func printEmbeddings(w io.Writer, vecs [][]float32, texts []string, format string, pooling embed.Pooling, norm int, labels []string) error {
	switch format {
	case "array", "json", "json+":
		arrs := make([][]float64, len(vecs))
		for i, v := range vecs {
			arrs[i] = make([]float64, len(v))
			for k, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return fmt.Errorf("--embd-output-format %s: vector %d holds %s at index %d, which JSON has no number for (the default and raw formats print it as llama-embedding does)", format, i, cFloat(0, 7, x), k)
				}
				arrs[i][k] = float64(x)
			}
		}
		var out any = arrs
		if format != "array" {
			type item struct {
				Object    string    `json:"object"`
				Index     int       `json:"index"`
				Embedding []float64 `json:"embedding"`
			}
			data := make([]item, len(arrs))
			for i, a := range arrs {
				data[i] = item{"embedding", i, a}
			}
			var sim [][]json.RawMessage
			if format == "json+" && len(texts) > 1 {
				sim = make([][]json.RawMessage, len(vecs))
				for i := range vecs {
					sim[i] = make([]json.RawMessage, len(vecs))
					for j := range vecs {
						sim[i][j] = json.RawMessage(cFloat(0, 2, embed.SimilarityCos(vecs[i], vecs[j])))
					}
				}
			}
			out = struct {
				Object           string              `json:"object"`
				Data             []item              `json:"data"`
				CosineSimilarity [][]json.RawMessage `json:"cosineSimilarity,omitempty"`
			}{"list", data, sim}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	b := bufio.NewWriter(w)
	if format == "raw" {
		prec := 7 // print_raw_embeddings: "%1.7f", "%1.0f" with --embd-normalize 0, a space between
		if norm == 0 {
			prec = 0
		}
		for _, v := range vecs {
			for i, x := range v {
				if i > 0 {
					b.WriteString(" ")
				}
				b.WriteString(cFloat(1, prec, x))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
		return b.Flush()
	}
	width, prec := 9, 6 // "%9.6f ", "%6.0f " with --embd-normalize 0
	if norm == 0 {
		width, prec = 6, 0
	}
	b.WriteString("\n")
	switch pooling {
	case embed.PoolingNone:
		for j, v := range vecs {
			fmt.Fprintf(b, "embedding %d: ", j)
			for _, x := range v[:min(3, len(v))] {
				b.WriteString(cFloat(width, prec, x) + " ")
			}
			b.WriteString(" ... ")
			for _, x := range v[max(len(v)-3, 0):] {
				b.WriteString(cFloat(width, prec, x) + " ")
			}
			b.WriteString("\n")
		}
	case embed.PoolingRank:
		for j, v := range vecs {
			for i, x := range v[:min(len(labels), len(v))] {
				fmt.Fprintf(b, "rerank score %d: %s", j, cFloat(8, 3, x))
				if len(labels) > 1 {
					b.WriteString(" [" + labels[i] + "]")
				}
				b.WriteString("\n")
			}
		}
	default:
		for j, v := range vecs {
			fmt.Fprintf(b, "embedding %d: ", j)
			if len(texts) > 1 {
				v = v[:min(16, len(v))]
			}
			for _, x := range v {
				b.WriteString(cFloat(width, prec, x) + " ")
			}
			b.WriteString("\n")
		}
		if len(texts) > 1 {
			b.WriteString("\ncosine similarity matrix:\n\n")
			for _, t := range texts {
				b.WriteString(cString(t, 6, 6) + " ")
			}
			b.WriteString("\n")
			for i := range vecs {
				for j := range vecs {
					b.WriteString(cFloat(6, 2, embed.SimilarityCos(vecs[i], vecs[j])) + " ")
				}
				b.WriteString(cString(texts[i], 1, 10) + "\n")
			}
		}
	}
	b.WriteString("\n")
	return b.Flush()
}

// cFloat is C's printf("%W.Pf", x) of a float (promoted to double): Go's %W.Pf, which rounds the exact
// value half to even as glibc does, except that NaN is "nan" ("-nan" with its sign bit set) and infinity
// "inf" or "-inf", as glibc prints them, right-aligned in width bytes.
func cFloat(width, prec int, x float32) string {
	f := float64(x)
	var s string
	switch {
	case math.IsNaN(f) && math.Signbit(f):
		s = "-nan"
	case math.IsNaN(f):
		s = "nan"
	case math.IsInf(f, 1):
		s = "inf"
	case math.IsInf(f, -1):
		s = "-inf"
	default:
		return fmt.Sprintf("%*.*f", width, prec, x)
	}
	return strings.Repeat(" ", max(width-len(s), 0)) + s
}

// cString is C's printf("%W.Ps", s) of a std::string's c_str(): at most prec bytes of s, up to its first NUL,
// right-aligned in width bytes.
func cString(s string, width, prec int) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	s = s[:min(len(s), prec)]
	return strings.Repeat(" ", max(width-len(s), 0)) + s
}
