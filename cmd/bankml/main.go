// Command bankml runs GGUF language models on the CPU with every kernel, token and answer proven equal to
// llama.cpp's; 1-bit and ternary formats are its aim. Its commands and flags are listed in docs/cli.md.
//
// # Design record
//
// What. One kong command tree (the cli struct): run and run --chat, serve, embed, perplexity, bench, tokenize,
// detokenize, chat-template, guard, inspect, sha256, pin, synth, quantize, train, key, receipt, ledger,
// witness, and the model store (pull, list, show, cp, rm, create). Every command that loads a model admits it
// through package admit's one front door (openModel, front.go); every command that generates or evaluates is a
// client of package engine (run as llama-cli is a client of llama-server: one request on one slot).
//
// Follows. llama.cpp's tools at the reference's commit: llama-completion and llama-cli (run), llama-server
// (serve), llama-embedding, llama-perplexity, llama-tokenize; their flag names, defaults and parsing rules as
// common/arg.cpp has them (llamaflags.go, which docs/cli.md tables flag by flag).
//
// Deliberate differences. The environment variables arg.cpp reads (LLAMA_ARG_*) change nothing here; each one
// set is named in a warning (llamaenv.go). "--flag=value" is accepted and numbers are checked whole (arg.cpp's
// std::stoi takes "12abc" as 12). A llama.cpp flag that tunes what bankml lacks (GPUs, batch sizes) is dropped
// with a warning naming it; one bankml cannot honour (-hf) is a usage error naming it.
//
// Exit status: 0 on success, 1 on an I/O or usage error, 2 when the model or file cannot be used (the reason is
// printed; guard also 3), 70 on an internal error (a panic: a bug, please report it), and 128 plus the signal's
// number when a signal stopped the command, as a shell reports it: 130 for Ctrl-C (SIGINT, "bankml: CMD:
// interrupted"), 143 for SIGTERM ("bankml: CMD: terminated"), 129 for SIGHUP ("hung up"). A command that
// catches signals does so through notifyContext (interrupt.go) and returns its context's context.Canceled;
// run maps that to the status in one place (interruptedStatus).
//
// Determinism. The commands add no arithmetic of their own: an answer is the engine's, a function of the
// request and the model (a fixed --seed for sampled text).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// exitError carries an exit status through kong's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

type cli struct {
	VersionFlag  kong.VersionFlag `name:"version" help:"Print the version and exit."`
	Version      versionCmd       `cmd:"" help:"Print the bankml version."`
	Help         helpCmd          `cmd:"" help:"Show the help of bankml or of a command (bankml help CMD is bankml CMD --help)."`
	Run          runCmd           `cmd:"" help:"Generate a continuation of a prompt with a GGUF model."`
	Embed        embedCmd         `cmd:"" help:"Print the embeddings of texts as llama-embedding does (pooling, normalisation), exactly the reference's vectors."`
	Guard        guardCmd         `cmd:"" help:"Judge a GGUF file from its header alone: play, refuse or need_more."`
	Sha256       sha256Cmd        `cmd:"" name:"sha256" help:"Print the sha256 of a file."`
	Pin          pinCmd           `cmd:"" help:"Check a file's sha256 against its provenance manifest."`
	Inspect      inspectCmd       `cmd:"" help:"Show a GGUF file's metadata and tensors."`
	Synth        synthCmd         `cmd:"" help:"Write a deterministic synthetic GGUF model."`
	Bench        benchCmd         `cmd:"" help:"Measure bankml against the reference in one process (bench: kernels and model rows)."`
	Tokenize     tokenizeCmd      `cmd:"" help:"Print the tokens of a text as llama-tokenize does."`
	Detokenize   detokenizeCmd    `cmd:"" help:"Print the text of token ids."`
	ChatTemplate chatTemplateCmd  `cmd:"" name:"chat-template" help:"Render a conversation (JSON on standard input) with the model's chat template, as llama-server does."`
	Ledger       ledgerCmd        `cmd:"" help:"Verify a history ledger and its transparency log, or prove an entry's inclusion (ledger verify DIR, ledger prove DIR I)."`
	Key          keyCmd           `cmd:"" help:"Generate or show an Ed25519 operator key (signs receipts and the log's checkpoints)."`
	Receipt      receiptCmd       `cmd:"" help:"Verify a signed receipt (receipt verify RECEIPT --key PUB)."`
	Witness      witnessCmd       `cmd:"" help:"Run a transparency-log witness (C2SP tlog-witness): cosign a log's checkpoints after checking they extend the last one cosigned."`
	Quantize     quantizeCmd      `cmd:"" help:"Convert a model's matrices to ternary (TQ2_0, TQ1_0, Q2_0 or PTQTP trit-planes), streamed."`
	Perplexity   perplexityCmd    `cmd:"" help:"Measure a model's perplexity on a text file as llama-perplexity does."`
	Train        trainCmd         `cmd:"" help:"Train a ternary student by distillation (straight-through estimator), or by ternary evolution strategies (--es)."`
	Serve        serveCmd         `cmd:"" help:"Serve a model over the OpenAI, Ollama and llama-server HTTP APIs, with a receipt on every answer."`
	Pull         pullCmd          `cmd:"" help:"Download a model into the store: a catalog name, an hf:// or http(s) address with its sha256, or a local file."`
	List         listCmd          `cmd:"" aliases:"ls" help:"List the models in the store (--catalog: bankml's built-in catalog)."`
	Show         showCmd          `cmd:"" help:"Show a stored model's manifest: file, sha256, provenance, parameters."`
	Cp           cpCmd            `cmd:"" name:"cp" help:"Copy a stored model to another name."`
	Rm           rmCmd            `cmd:"" name:"rm" help:"Remove stored models."`
	Create       createCmd        `cmd:"" help:"Create a model from an Ollama Modelfile."`

	sigs *signals // the run's signal record (bound for the commands' Run methods)
}

type versionCmd struct{}

// helpCmd is `bankml help [CMD...]`. run rewrites it to `bankml [CMD...] --help` before parsing (helpArgs, which
// refuses a CMD bankml does not have), so its output is -h's; the struct names the command in the help's list
// and in docs/cli.md.
type helpCmd struct {
	Command []string `arg:"" optional:"" name:"COMMAND" help:"The command (and subcommand) whose help to show."`
}

func (helpCmd) Run() error { return errors.New("help: internal: not rewritten to --help") }

// helpArgs rewrites `help [CMD...]` to `[CMD...] --help`, as git, go and ollama take `help CMD`; any other
// arguments, and `help -h` (help's own help), are returned as they are. A CMD app (bankml's command tree) does not
// have is a usage error naming it and listing the commands at its level (`help: unknown command "nosuch" (the
// commands: …)`); the words after a command without subcommands are its arguments (help run m.gguf).
func helpArgs(args []string, app *kong.Node) ([]string, error) {
	if len(args) == 0 || args[0] != "help" || slices.Contains(args, "-h") || slices.Contains(args, "--help") {
		return args, nil
	}
	n := app
	for i, w := range args[1:] {
		var names []string
		var next *kong.Node
		for _, c := range n.Children {
			if c.Type != kong.CommandNode || c.Hidden {
				continue
			}
			names = append(names, c.Name)
			if c.Name == w || slices.Contains(c.Aliases, w) {
				next = c
			}
		}
		if len(names) == 0 || strings.HasPrefix(w, "-") {
			break
		}
		if next == nil {
			whose := "the commands"
			if n != app {
				whose = strings.Join(args[1:i+1], " ") + "'s commands"
			}
			return nil, fmt.Errorf("help: unknown command %q (%s: %s)", strings.Join(args[1:i+2], " "), whose, strings.Join(names, ", "))
		}
		n = next
	}
	return append(slices.Clone(args[1:]), "--help"), nil
}

func (versionCmd) Run(stdout io.Writer) error {
	_, err := fmt.Fprintln(stdout, versionString())
	return err
}

// versionString names bankml's version, the Go toolchain and the reference
// it is proven against.
func versionString() string {
	return fmt.Sprintf("bankml %s (%s; reference llama.cpp v0.5.0 from @node-llama-cpp/linux-x64@3.22.1, haswell)", version, runtime.Version())
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it parses args, runs the command and
// returns the exit status; opts (tests) adjust the command tree before parsing.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, opts ...func(*cli)) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "bankml: internal error: %v (please report it)\n%s", p, debug.Stack())
			code = 70
		}
	}()
	c := cli{sigs: &signals{}} // no signal has stopped this run's command yet
	for _, o := range opts {
		o(&c)
	}
	exit := -1
	parser, err := kong.New(&c,
		kong.Name("bankml"),
		kong.Description("Run GGUF language models on the CPU, proven bit-exact against llama.cpp.\n\nExit status: 0 success, 1 I/O or usage error, 2 the model cannot be run (the reason is printed), 70 internal error, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM)."),
		kong.UsageOnError(),
		kong.NamedMapper("path", newPathMapper()),
		kong.NamedMapper("model", modelMapper{}),
		kong.Help(flagsFirst),
		kong.WithHyphenPrefixedParameters(true), // -n -1, -p "-text"
		kong.Vars{"nproc": strconv.Itoa(runtime.NumCPU()), "version": versionString()},
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exit = code }),
		kong.BindTo(stdin, (*io.Reader)(nil)),
		kong.BindTo(stdout, (*io.Writer)(nil)),
		kong.BindTo(errWriter(stderr), (*errWriter)(nil)),
		kong.Bind(c.sigs),
	)
	if err != nil {
		fmt.Fprintln(stderr, "bankml:", err)
		return 1
	}
	if args, err = helpArgs(args, parser.Model.Node); err != nil {
		fmt.Fprintln(stderr, "bankml:", err)
		return 1
	}
	first := ""
	if len(args) > 0 {
		first = args[0]
	}
	args, warnings, err := llamaArgs(args, valueFlags(parser.Model, first))
	if err != nil {
		fmt.Fprintf(stderr, "bankml: %v (see bankml %s --help)\n", err, first)
		return 1
	}
	c.Run.Ignored.lines, c.Serve.Ignored.lines = warnings, warnings
	ctx, err := parser.Parse(args)
	if exit >= 0 { // --help and friends
		return exit
	}
	if err != nil {
		fmt.Fprintln(stderr, parseErrorLine(err, parser.Model, first, args))
		return 1
	}
	if err := ctx.Run(); err != nil {
		if errors.Is(err, context.Canceled) {
			// A signal stopped the command: 128 plus its number, as a shell reports a command that signal ended
			// (Ctrl-C 130, as run --chat and llama-cli exit; SIGTERM 143; SIGHUP 129), with one short line
			// (the command removed what it was writing).
			code, word := c.sigs.interruptedStatus()
			fmt.Fprintf(stderr, "bankml: %s: %s\n", commandName(ctx), word)
			return code
		}
		fmt.Fprintln(stderr, "bankml:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// commandName is the command ctx selected, with its subcommands ("quantize", "ledger verify").
func commandName(ctx *kong.Context) string {
	var names []string
	for _, p := range ctx.Path {
		if p.Command != nil {
			names = append(names, p.Command.Name)
		}
	}
	return strings.Join(names, " ")
}

// parseErrorLine is the line of a usage error kong's parse found (err) in args, args[0] being first: prefixed
// with the command the arguments name ("run: ", "ledger prove: "), as the errors of its Run are, unless the
// message names it already, and followed by where the command's flags are listed (the subcommand's own
// --help: bankml ledger prove --help), except for a value out of range (outOfRange's words say all there is to
// say, as on the errors Run finds: "bankml: run: -t/--threads: value 1000 out of range …").
func parseErrorLine(err error, app *kong.Application, first string, args []string) string {
	msg := flagFirst(err.Error())
	cmd := ""
	var pe *kong.ParseError
	if errors.As(err, &pe) && pe.Context != nil {
		var names []string
		for _, p := range pe.Context.Path {
			if p.Command != nil {
				names = append(names, p.Command.Name)
			}
		}
		cmd = strings.Join(names, " ")
	}
	if cmd != "" && !strings.HasPrefix(msg, cmd+": ") && !strings.HasPrefix(msg, strings.Fields(cmd)[0]+": ") {
		msg = cmd + ": " + msg
	}
	var re *rangeError
	if errors.As(err, &re) {
		return "bankml: " + msg
	}
	help := "bankml --help"
	for _, n := range app.Children {
		if n.Name == first {
			help = "bankml " + first + " --help" // the command's own flags
		}
	}
	if cmd != "" {
		help = "bankml " + cmd + " --help" // a subcommand's own flags and arguments
	}
	if pe != nil && pe.Context != nil {
		if m, note, ok := negativeArg(pe.Context, err, args); ok {
			if note != "" {
				return fmt.Sprintf("bankml: %s: %s (%s; see %s)", cmd, m, note, help)
			}
			return fmt.Sprintf("bankml: %s: %s (see %s)", cmd, m, help)
		}
		if m, ok := unknownCommand(pe.Context, err.Error()); ok {
			if cmd != "" {
				m = cmd + ": " + m
			}
			return fmt.Sprintf("bankml: %s (see %s)", m, help)
		}
	}
	return fmt.Sprintf("bankml: %s (see %s)", msg, help)
}

// unknownCommand words kong's "unexpected argument X" (with its "did you mean" when it has one) as cobra's CLIs
// and ollama do, `unknown command "X"`, where the words so far select a command that has subcommands and takes no
// argument of its own (bankml itself, ledger, key, receipt): there a word is a command's name or nothing. ok is
// false elsewhere (an extra argument to a command that takes arguments stays kong's "unexpected argument").
func unknownCommand(ctx *kong.Context, msg string) (string, bool) {
	rest, found := strings.CutPrefix(msg, "unexpected argument ")
	if !found {
		return "", false
	}
	node := ctx.Selected()
	if node == nil {
		node = ctx.Model.Node
	}
	if len(node.Positional) > 0 {
		return "", false
	}
	hasCommands := false
	for _, c := range node.Children {
		if c.Type == kong.ArgumentNode {
			return "", false
		}
		hasCommands = hasCommands || c.Type == kong.CommandNode
	}
	if !hasCommands {
		return "", false
	}
	word, suggestion, _ := strings.Cut(rest, ", did you mean ")
	m := fmt.Sprintf("unknown command %q", word)
	if suggestion != "" {
		m += ", did you mean " + suggestion
	}
	return m, true
}

// negativeArg words kong's "unknown flag -1" where the command takes arguments: kong reads a negative number as a
// flag, but the user gave it where an argument goes. The argument is the first one not given yet that is a count
// (an unsigned integer, such as ledger prove's I: range [0, inf), its help the note) or has a range tag
// (detokenize's IDS, with its rangenote), or a list given already that takes more (detokenize FILE 5 -1), so a
// number is named as what it would be even before an argument missing in front of it (ledger prove -1 says I, not
// DIR): "NAME: value -N out of range R", the note apart. Where no such argument is left, the first argument not
// given yet of another kind is named (tokenize -1: "FILE: value -1 is read as a flag, and there is no flag -1",
// with how a file of that name is given when it is a path); where every argument is given, the number is kong's
// "unexpected argument -1", as a word there is. ok is false when err is something else or the command takes no
// arguments (kong's "unknown flag" stands).
func negativeArg(ctx *kong.Context, err error, args []string) (msg, note string, ok bool) {
	digit, ok := strings.CutPrefix(err.Error(), "unknown flag -")
	if !ok || digit == "" || digit[0] < '0' || digit[0] > '9' {
		return "", "", false
	}
	node := ctx.Selected()
	if node == nil || len(node.Positional) == 0 {
		return "", "", false
	}
	value := "-" + digit[:1]
	for _, a := range args { // the argument kong split into one-letter flags: the first negative number there
		if n, found := strings.CutPrefix(a, value); found && strings.Trim(n, "0123456789") == "" {
			value = a
			break
		}
	}
	var next, other *kong.Positional
	r := ""
	for _, p := range node.Positional {
		if p.Set && p.Target.Kind() != reflect.Slice {
			continue
		}
		if other == nil {
			other = p
		}
		if r = p.Tag.Get("range"); r != "" {
			next, note = p, p.Tag.Get("rangenote")
			break
		}
		switch p.Target.Kind() {
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			next, r, note = p, "[0, inf)", strings.TrimSuffix(p.Help, ".")
			if note != "" {
				note = strings.ToLower(note[:1]) + note[1:]
			}
		}
		if next != nil {
			break
		}
	}
	switch {
	case next != nil:
		return fmt.Sprintf("%s: value %s out of range %s", next.Name, value, r), note, true
	case other != nil:
		if other.Tag.Type == "path" {
			note = fmt.Sprintf("a file named %s is given as ./%s", value, value)
		}
		return fmt.Sprintf("%s: value %s is read as a flag, and there is no flag %s", other.Name, value, value), note, true
	}
	return "unexpected argument " + value, "", true
}

// flagFirst drops kong's "--flag: " before a mapper's error that names the flag itself, with its short form or
// without ("--threads: -t/--threads: value 513 out of range …" reads "-t/--threads: value 513 out of range …",
// "--size: --size: value -1 …" reads "--size: value -1 …").
func flagFirst(msg string) string {
	flag, rest, ok := strings.Cut(msg, ": ")
	if !ok || !strings.HasPrefix(flag, "--") {
		return msg
	}
	if named, _, ok := strings.Cut(rest, ": "); ok && (named == flag || strings.HasSuffix(named, "/"+flag)) {
		return rest
	}
	return msg
}

// flagsFirst is kong's help with a command's long prose (its Help: for run and serve, the llama.cpp flags
// they take) after its arguments and flags instead of before them.
func flagsFirst(o kong.HelpOptions, ctx *kong.Context) error {
	sel := ctx.Selected()
	if sel == nil || sel.Detail == "" || o.Summary {
		return kong.DefaultHelpPrinter(o, ctx)
	}
	detail := sel.Detail
	sel.Detail = ""
	err := kong.DefaultHelpPrinter(o, ctx)
	sel.Detail = detail
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(ctx.Stdout, "\n%s\n", wrapText(detail, 80))
	return err
}

// wrapText breaks text into lines of at most width bytes at spaces (a longer word keeps a line of its own).
func wrapText(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// errWriter is the standard error stream, bound separately from stdout's
// io.Writer so that commands can take both.
type errWriter io.Writer
