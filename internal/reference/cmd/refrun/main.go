// Command refrun records answers from the reference llama.cpp (package internal/reference): it tokenizes a
// prompt, generates greedily and reports the decode loop's speed, or prints the last prompt position's logits.
//
// # Design record
//
// What. Usage:
//
//	go run ./internal/reference/cmd/refrun -m MODEL -p PROMPT [-n N] [-t THREADS] [--logits]
//
// Output, one item per line: "prompt_tokens <count>: <id> ...", "generated_tokens <count>: <id> ...",
// "text: <Go-quoted concatenation of the generated pieces>", "prompt_eval: <tokens> tokens in <ms> ms",
// "decode: <tokens> tokens in <ms> ms, <tokens/s> tokens/s". The prompt is tokenized with add_special (BOS)
// unless -no-bos, and with parse_special if -special; -n 0 skips generation. With --logits the last-prompt
// logits follow as "logits <n_vocab>:" and one line per token id: "<id> <8 hex digits of the float32 bits>".
//
// Follows. reference.Model.GreedyTimed: the prompt in one llama_decode, then n tokens one at a time, each the
// argmax of the last logits (llama_sampler_greedy's rule), not stopping at EOS.
//
// Deliberate differences. None; it is a recorder. Use -t 1 for tiny models: ggml's worker threads spin at
// barriers.
//
// Determinism. Tokens and logits are the reference's for the given -t; the timings are wall-clock.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/bankml/bankml/internal/reference"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "refrun:", err)
		os.Exit(1)
	}
}

func run() error {
	model := flag.String("m", "", "GGUF model `path` (required)")
	prompt := flag.String("p", "", "prompt `text`")
	n := flag.Int("n", 32, "number of tokens to generate greedily (0: none)")
	threads := flag.Int("t", 1, "threads (n_threads and n_threads_batch)")
	logits := flag.Bool("logits", false, "print the last prompt position's logits as hex f32 bits")
	noBOS := flag.Bool("no-bos", false, "tokenize without add_special")
	special := flag.Bool("special", false, "tokenize with parse_special")
	flag.Parse()
	if *model == "" || flag.NArg() != 0 {
		flag.Usage()
		return fmt.Errorf("need -m MODEL and no positional arguments")
	}

	lib, err := reference.Load()
	if err != nil {
		return err
	}
	m, err := lib.LoadModel(*model)
	if err != nil {
		return err
	}
	defer m.Close()

	toks, err := m.Tokenize(*prompt, !*noBOS, *special)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "reference: %s (%s)\n", lib.CPUBackend(), strings.Join(lib.CPUFeatures(), " "))
	fmt.Fprintf(w, "threads: %d\n", *threads)
	fmt.Fprintf(w, "prompt_tokens %d:%s\n", len(toks), ids(toks))

	if *n > 0 {
		out, tm, err := m.GreedyTimed(toks, *n, *threads)
		if err != nil {
			return err
		}
		var text []byte
		for _, t := range out {
			p, err := m.TokenToPiece(t, false)
			if err != nil {
				return err
			}
			text = append(text, p...)
		}
		fmt.Fprintf(w, "generated_tokens %d:%s\n", len(out), ids(out))
		fmt.Fprintf(w, "text: %q\n", text)
		fmt.Fprintf(w, "prompt_eval: %d tokens in %.3f ms\n", len(toks), ms(tm.Prompt))
		fmt.Fprintf(w, "decode: %d tokens in %.3f ms, %.2f tokens/s\n", tm.Tokens, ms(tm.Decode), tm.TokensPerSecond())
	}

	if *logits {
		lg, err := m.PromptLogits(toks, *threads)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "logits %d:\n", len(lg))
		for i, v := range lg {
			fmt.Fprintf(w, "%d %08x\n", i, math.Float32bits(v))
		}
	}
	return nil
}

func ids(t []int32) string {
	var b strings.Builder
	for _, x := range t {
		fmt.Fprintf(&b, " %d", x)
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
