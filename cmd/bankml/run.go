package main

import (
	"context"
	"errors"
	"fmt"
	"golang.org/x/term"
	"io"
	"os"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/ollama/ollama/format"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/store"
	"github.com/bankml/bankml/storeserve"
	"github.com/bankml/bankml/tokenizer"
)

type runCmd struct {
	Model     string      `arg:"" optional:"" name:"MODEL" help:"A GGUF model file (or -m/--model FNAME), or a model NAME[:TAG] from the store, pulled from bankml's catalog on first use (pinned by its manifest)."`
	ModelFlag string      `short:"m" name:"model" placeholder:"FNAME" help:"Path to a GGUF model file, as llama-cli's -m/--model, instead of MODEL." type:"path"`
	Prompt    *rawText    `short:"p" name:"prompt" help:"Prompt text (special-token text such as <s> is parsed, as llama-cli does); llama-cli's -f/--file FNAME gives a file's text instead (one trailing newline dropped; the last of -p and -f counts); read from standard input when absent."`
	Escape    bool        `short:"e" name:"escape" negatable:"" default:"true" help:"Process the escapes \\n \\r \\t \\' \\\" \\\\ and \\xHH in the prompt (-p, or the prompt read from standard input; with --chat only -p's first message), as llama.cpp's -e/--escape, on by default; --no-escape takes it as is. --system and chat messages read from standard input are never processed, as in llama-cli."`
	NPredict  int         `short:"n" name:"n-predict" default:"-1" help:"Number of tokens to generate, as llama.cpp's -n/--n-predict: -1 (infinity) and -2 (until context filled) both generate until an end-of-generation token or a full context (bankml has no context shift, which llama.cpp also leaves off by default). Given, it overrides a stored model's num_predict."`
	Temp      float32     `name:"temp" default:"0" help:"Temperature; 0 keeps the most likely token at the temperature stage, as llama.cpp (greedy unless an earlier stage or --dynatemp-range changes it). Given, it overrides a stored model's temperature."`
	TopK      *int        `name:"top-k" placeholder:"N" help:"Top-k sampling, as llama-cli's --top-k (default 40, or the model's general.sampling.top_k; 0 = off)."`
	TopP      *float32    `name:"top-p" placeholder:"N" help:"Top-p sampling, as llama-cli's --top-p (default 0.95, or the model's general.sampling.top_p; 1 = off)."`
	Sampling  runSampling `embed:""`
	matchFlag
	Seed      int64       `name:"seed" default:"-1" help:"Seed of the sampler's random draw; -1 picks one at random."`
	Threads   threadCount `short:"t" name:"threads" default:"${nproc}" help:"Number of threads (default: the number of logical CPUs); 0 or less takes the number of logical CPUs, as llama.cpp; at most 512, ggml's GGML_MAX_N_THREADS)."`
	Ctx       int         `short:"c" name:"ctx-size" aliases:"ctx" default:"0" help:"Context size in tokens: 0 (the default) takes the model's training context, as llama-server's defaults give a slot; another size is rounded up to a multiple of 256 and capped at the training context, as llama-server does. Given, it overrides a stored model's num_ctx."`
	IgnoreEOS bool        `name:"ignore-eos" help:"Keep generating past end-of-generation tokens, as llama-cli's --ignore-eos: every end-of-generation token gets a -inf logit bias, so none is drawn (ignored with a warning when the vocabulary has no EOS token, as llama.cpp)."`
	Special   bool        `name:"special" help:"Print special (control) tokens as their text, as llama-cli's -sp/--special (not with --chat, nor with stop strings: -r or a stored model's stop)."`
	// -r/--reverse-prompt (common/arg.cpp:1885): the engine's stop strings, as serve's "stop" field.
	ReversePrompt stringList     `name:"reverse-prompt" placeholder:"PROMPT" help:"Halt generation at PROMPT, as llama-cli's -r/--reverse-prompt: PROMPT is one of the engine's stop strings, as bankml serve's \"stop\" field is (the text is cut before the first one generated, which is not printed); give it again for more. With --chat, each answer stops so. Not with --special."`
	Manifest      string         `name:"manifest" help:"Provenance manifest (FORK.json), or the file's sha256 / sha256:<hex> digest, to pin the model against; without it the model runs unpinned and says so."`
	KV            cacheTypeFlags `embed:""`

	// llama-completion's display flags (common/arg.cpp:1482, :1489, :3869).
	DisplayPrompt bool `name:"display-prompt" negatable:"" default:"true" help:"Print the prompt before its continuation on standard output, as llama-completion does by default (its pieces, control tokens as text only with --special); --no-display-prompt prints the continuation only. Not with --chat, whose messages are the user's own."`
	VerbosePrompt bool `name:"verbose-prompt" help:"Before generating, list the prompt's tokens on standard error (id -> 'piece'), as llama.cpp's --verbose-prompt."`
	LogDisable    bool `name:"log-disable" help:"Print nothing on standard error but errors (no admission line, no timings, no warnings), as llama.cpp's --log-disable silences its log; the generated text still goes to standard output."`

	// Conversation mode (runchat.go).
	Chat       bool    `name:"chat" negatable:"" help:"Chat: each user message is rendered with the model's chat template together with the conversation so far, the answer is generated to an end-of-generation token, exactly as bankml serve's /v1/chat/completions generates it (the same engine; the next turn reuses what the engine's cache rule keeps), as llama-cli holds a chat through llama-server. On a terminal an interactive loop (/exit or Ctrl-D ends it, /clear forgets the conversation so far, /set and /show as in ollama run, /? lists the commands, Ctrl-C stops an answer); otherwise each line of standard input is one user message (a line ending in \\ continues on the next). -p gives the first user message."`
	System     rawText `name:"system" help:"System message of the conversation (with --chat; llama-cli's -sys)."`
	SingleTurn bool    `name:"single-turn" help:"With --chat: answer one user message (-p or the first one read) and exit (llama-cli's -st)."`

	Ignored llamaIgnored `embed:""`

	storeFlag  `embed:""` // --models: the store a NAME comes from (storemodel.go)
	mirrorFlag `embed:""` // --from: the mirror a NAME is pulled from on first use

	// onTurn, when set (by tests), sees every finished chat turn.
	onTurn func(chatTurn)
	// given are the flags the command line gave, by kong's name (AfterApply, runmodelfile.go).
	given map[string]bool
}

// rawText is a string flag taken byte for byte: kong's own string mapper
// replaces invalid UTF-8 with U+FFFD, which would change the prompt's tokens.
type rawText string

// Decode implements kong.MapperValue.
func (r *rawText) Decode(ctx *kong.DecodeContext) error {
	s, err := popString(ctx, "prompt")
	*r = rawText(s)
	return err
}

// refuseEncoder is the refusal of an encoder (bert) by the commands that need a model's logits (run,
// perplexity), made as soon as the model is admitted: it gives embeddings, not text (exit 2).
func refuseEncoder(cmd string, m *model.Model) error {
	if m.Encoder() {
		return cannotRun(fmt.Errorf("%s: the %s model is an encoder: it gives embeddings, not text (use bankml embed)", cmd, m.Arch))
	}
	return nil
}

// cannotRun marks errors that mean "this file cannot be run" (exit status 2).
func cannotRun(err error) error { return &exitError{code: 2, err: err} }

// Validate (kong's hook after parsing) takes the model from MODEL or -m/--model (resolveModel).
func (r *runCmd) Validate() (err error) {
	r.Model, err = resolveModel(r.Model, r.ModelFlag)
	return err
}

func (r *runCmd) Run(stdin io.Reader, stdout io.Writer, stderr errWriter, sigs *signals) error {
	info := io.Writer(stderr) // what --log-disable silences
	if r.LogDisable {
		info = io.Discard
	}
	if err := r.Ignored.warn("run", info); err != nil {
		return err
	}
	// -n's range lies inside the 32-bit int arg.cpp's std::stoi takes (arg.cpp:1655), so it is the one range -n
	// quotes on both sides.
	if err := checkNPredict(r.NPredict); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	// The model's own bound on the context, before the file is read and hashed; it lies inside the 32-bit int
	// arg.cpp's std::stoi takes (arg.cpp:1636), so it is the one range -c quotes.
	if err := checkCtxSize(r.Ctx); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	// llama.cpp's sampler chain with llama-cli's defaults (min_p 0.05, ...) and these flags
	// (runsampling.go), run by the engine as a llama-server slot runs it.
	// The flags are checked here, before the file is read (usage errors); the model's general.sampling.*
	// defaults join them once it is loaded (samplingParams).
	if _, err := r.samplingParams(sample.DefaultParams(), info, nil); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	// An invalid BANKML_CPU is a usage error (exit 1), found before the file is read: the model's file is
	// not what cannot be run (exit 2).
	if _, err := quant.LevelFromEnv(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	// --match is checked here (a usage error, before the file is read); its info line waits until the model is
	// admitted and its engine made, so a model that is not pulled or not admitted prints only its error.
	if _, err := r.resolve("run", nil); err != nil {
		return err
	}
	if !r.Chat && (r.System != "" || r.SingleTurn) {
		return errors.New("run: --system (-sys) and --single-turn (-st) need --chat (-cnv)")
	}
	if r.Chat && r.Special {
		return errors.New("run: --special (-sp) prints control tokens of a plain run only, not with --chat")
	}
	for _, w := range r.ReversePrompt {
		if w == "" { // serve refuses an empty stop string too ("stop[0] is empty")
			return errors.New("run: -r/--reverse-prompt: PROMPT is empty: give the text to halt at")
		}
	}
	if len(r.ReversePrompt) > 0 && r.Special {
		return errors.New("run: -r/--reverse-prompt with --special (-sp): the stop strings are found in the text without control tokens, as serve's are, so the text printed cannot carry them")
	}
	if r.Prompt != nil && r.Escape { // common_params_parse escapes params.prompt (common/arg.cpp)
		p := rawText(processEscapes(string(*r.Prompt)))
		r.Prompt = &p
	}
	prompt := ""
	if r.Chat {
		// The conversation reads its messages itself (runchat.go).
	} else if r.Prompt != nil {
		prompt = string(*r.Prompt)
	} else {
		if isTerminal(stdin) {
			fmt.Fprintln(info, "reading the prompt from standard input (end it with Ctrl-D)…")
		}
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("run: reading the prompt from standard input: %w", err)
		}
		prompt = strings.TrimSuffix(string(b), "\n") // as llama.cpp's -f FNAME drops one trailing newline
		if r.Escape {                                // and then escapes it as it escapes -p (common/arg.cpp)
			prompt = processEscapes(prompt)
		}
	}

	var err error
	var stored *store.Manifest
	if r.Model, r.Manifest, stored, err = storeModel("run", r.Model, r.Manifest, r.storeFlag, r.From, stderr, sigs); err != nil {
		return err
	}
	// -sp with a stored model's stop: refused as -r with -sp is, for the same reason (both are the engine's stop
	// strings), before the file is read.
	if stop, ok := storedStop(stored); ok && r.Special {
		return fmt.Errorf("run: --special (-sp) with %s's Modelfile PARAMETER stop %s: the stop strings are found in the text without control tokens, as serve's and -r/--reverse-prompt's are, so the text printed cannot carry them; leave out -sp to run the model with its stop strings",
			stored.Ref(), optionText(stop))
	}
	kv := r.KV.types() // a cache type the heads do not fit is refused from the header, before the hash
	m, err := openModel("run", r.Model, stored, admit.Options{Manifest: r.Manifest, Pin: admit.AllowUnpinned, Chat: r.Chat, CacheTypes: &kv}, stderr, info)
	if err != nil {
		return err
	}
	defer m.Close()
	tok := m.Tokenizer

	if err := refuseEncoder("run", m.Model); err != nil {
		return err
	}

	nCtx, capped, err := m.Model.ContextSize(r.Ctx)
	if err != nil {
		return fmt.Errorf("run: --ctx-size: %w", err)
	}
	if capped {
		fmt.Fprintf(info, "warning: the context (%d) is capped at the model's training context (%d), as llama-server caps a slot\n", r.Ctx, nCtx)
	}
	// A stored model's Modelfile settings, as serve's Ollama API applies them, beneath the flags given
	// (runmodelfile.go).
	var defaults serve.ModelDefaults
	ref := ""
	if stored != nil {
		defaults, ref = storeserve.Defaults(stored), stored.Ref()
	}
	sp, ms, err := r.modelSampling(m.File, defaults, ref, stderr)
	if err != nil {
		return err
	}
	set := r.settings(defaults, ref, ms, nCtx, &sp, info)
	set.about = aboutModel(m, stored)
	if err := r.Sampling.checkGrammar(sp.Grammar, tok); err != nil { // refused before anything is printed
		return fmt.Errorf("run: %w", err)
	}
	if r.IgnoreEOS && tok.EOS() == tokenizer.None { // common_init_from_params (common/common.cpp:1364)
		fmt.Fprintln(info, "bankml: run: the vocabulary has no EOS token: --ignore-eos ignored, as llama.cpp ignores it")
		r.IgnoreEOS = false
	}
	// One slot of llama-server's engine: run is its client, as llama-cli is llama-server's.
	e, err := engine.New(m.Model, tok, m.Template, engine.Options{
		NCtx: r.Ctx, Threads: int(r.Threads), SuppressTokens: m.SuppressTokens, CacheTypes: r.KV.types(),
	})
	if err != nil { // the model cannot run with these settings (a cache type its heads do not fit): 2, as serve
		return cannotRun(fmt.Errorf("run: %w", err))
	}
	defer e.Close()
	if _, err := r.resolve("run", info); err != nil { // its info line, now that the model is ready to run
		return err
	}
	if r.Chat {
		return r.chat(e, m.Template, sp, set, stdin, stdout, stderr, info)
	}

	// tokenize_mixed(prompt, add_special, parse_special), as llama-completion tokenizes -p.
	ids, err := e.Tokenize(engine.Prompt{Text: prompt})
	if err != nil {
		return errors.New("run: the prompt is empty and the model adds no BOS token")
	}
	if r.VerbosePrompt {
		verbosePrompt(info, tok, prompt, ids)
	}
	if len(ids) >= set.nCtx { // llama-server refuses a prompt of n_ctx tokens or more, serve one of num_ctx or more
		if set.numCtx {
			return fmt.Errorf("run: the prompt is %d tokens and the context %d, %s's num_ctx: it must be shorter than the context (-c/--ctx-size N overrides num_ctx, up to the training context %d)", len(ids), set.nCtx, set.ref, m.Model.HP.NCtxTrain)
		}
		return fmt.Errorf("run: the prompt is %d tokens and the context %d: it must be shorter than the context (raise --ctx-size up to the training context %d)", len(ids), set.nCtx, m.Model.HP.NCtxTrain)
	}
	limit := set.nCtx - len(ids) // llama-server stops when the cache would fill the context, serve at num_ctx
	n := set.nPredict
	if n < 0 || n > limit {
		n = limit
	}
	dec := tokenizer.NewDecoder(tok, r.Special)
	if n == 0 { // llama-completion's loop does not start: nothing is evaluated or shown
		if _, err := stdout.Write([]byte{'\n'}); err != nil {
			return err
		}
		fmt.Fprintf(info, "prompt: %d tokens (not evaluated: -n 0), generated: 0 tokens\n", len(ids))
		return nil
	}
	if r.DisplayPrompt { // llama-completion echoes the prompt's pieces (common_token_to_piece, params.special)
		for _, id := range ids {
			if _, err := stdout.Write(dec.Write(id)); err != nil {
				return err
			}
		}
	}
	generated := 0
	stops := set.stops
	res, err := e.Generate(context.Background(), engine.Request{
		Prompt: engine.Prompt{Tokens: ids}, Sampling: sp, NPredict: n, Stop: stops, IgnoreEOS: r.IgnoreEOS, Slot: -1,
	}, func(t engine.Token) error {
		eog := tok.IsEOG(t.ID) && !r.IgnoreEOS // the end-of-generation token ends the text unprinted
		if !eog {
			generated++
		}
		if len(stops) > 0 { // the engine's text, as serve streams it: cut at a stop string, a prefix of one held back
			_, err := io.WriteString(stdout, t.Text)
			return err
		}
		if eog {
			return nil
		}
		_, err := stdout.Write(dec.Write(t.ID))
		return err
	})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	rest := dec.Close()
	if len(stops) > 0 {
		rest = []byte(res.Unsent) // what was held back when no stop string came, as serve's last chunk carries it
	}
	if _, err := stdout.Write(append(rest, '\n')); err != nil {
		return err
	}
	if r.Seed == -1 && drawsAtRandom(sp) { // llama-cli prints its sampler seed (completion.cpp:452)
		fmt.Fprintf(info, "seed: %d\n", res.Seed)
	}
	if generated == limit && (set.nPredict < 0 || set.nPredict > limit) {
		// llama-completion's main loop (tools/completion/completion.cpp): with tokens still to predict and
		// no context shift (its default), a full context stops the generation with a warning; exit 0.
		fmt.Fprintf(info, "run: context full (%d tokens: the prompt's %d and %d generated) and context shift is disabled (as llama.cpp's default) => stopping\n",
			set.nCtx, len(ids), generated)
	}
	fmt.Fprintf(info, "prompt: %d tokens (%s), generated: %d tokens (decode %s)\n",
		len(ids), perSecond(res.Timings.PromptPerSecond()), generated, perSecond(res.Timings.PredictedPerSecond()))
	return nil
}

// perSecond formats a rate of the engine's timings ("n/a" when there is none).
func perSecond(r float64) string {
	if r <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f tok/s", r)
}

// verbosePrompt is llama-completion's --verbose-prompt listing (tools/completion/completion.cpp:379): the
// prompt, its token count, and each token with its piece (special tokens rendered).
func verbosePrompt(w io.Writer, tok tokenizer.Tokenizer, prompt string, ids []int32) {
	fmt.Fprintf(w, "run: prompt: '%s'\n", prompt)
	fmt.Fprintf(w, "run: number of tokens in prompt = %d\n", len(ids))
	for _, id := range ids {
		fmt.Fprintf(w, "%6d -> '%s'\n", id, tok.TokenToPiece(id, true))
	}
	fmt.Fprintln(w)
}

// isTerminal reports whether r is an interactive terminal (a tty: not
// /dev/null or another character device).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// aboutModel is what run --chat's /show info and /show license print of the model m (stored: its manifest, nil
// for a file): as Ollama's showInfo prints a model (the parameter count as format.HumanNumber of the tensors'
// elements and the file type's name, as serve's /api/show details give them).
func aboutModel(m *admit.Model, stored *store.Manifest) modelAbout {
	var n uint64
	for i := range m.File.Tensors {
		n += uint64(m.File.Tensors[i].NElements())
	}
	a := modelAbout{arch: m.File.Architecture(), params: format.HumanNumber(n), ctxLength: m.Model.HP.NCtxTrain, embdLength: m.Model.HP.NEmbd,
		quant: serve.QuantizationLevel(m.File)}
	if stored != nil {
		a.license = stored.License
	}
	return a
}

// storedStop is a stored model's PARAMETER stop (stored nil: a file, which has none).
func storedStop(stored *store.Manifest) (any, bool) {
	if stored == nil {
		return nil, false
	}
	v, ok := stored.Parameters["stop"]
	return v, ok
}
