// Command bankml runs 1-bit, ternary and other GGUF language models on the CPU
// with a forward pass proven bit-exact against llama.cpp.
//
// Usage:
//
//	bankml version
//	bankml run MODEL -p PROMPT [-n N] [--temp T] [--seed S] [-t THREADS]
//
// Exit status: 0 on success, 1 on an I/O or usage error, 2 when the model
// cannot be run (malformed file, architecture or tensor type not supported yet).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"

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
	Version versionCmd `cmd:"" help:"Print the bankml version."`
	Run     runCmd     `cmd:"" help:"Generate a continuation of a prompt with a GGUF model."`
}

type versionCmd struct{}

func (versionCmd) Run(stdout io.Writer) error {
	_, err := fmt.Fprintf(stdout, "bankml %s\n", version)
	return err
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it parses args, runs the command and
// returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c cli
	exit := -1
	parser, err := kong.New(&c,
		kong.Name("bankml"),
		kong.Description("Serve 1-bit and ternary GGUF language models on the CPU, bit-exact with llama.cpp."),
		kong.UsageOnError(),
		kong.Vars{"nproc": strconv.Itoa(runtime.NumCPU())},
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exit = code }),
		kong.BindTo(stdin, (*io.Reader)(nil)),
		kong.BindTo(stdout, (*io.Writer)(nil)),
		kong.BindTo(errWriter(stderr), (*errWriter)(nil)),
	)
	if err != nil {
		fmt.Fprintln(stderr, "bankml:", err)
		return 1
	}
	ctx, err := parser.Parse(args)
	if exit >= 0 { // --help and friends
		return exit
	}
	if err != nil {
		fmt.Fprintln(stderr, "bankml:", err)
		return 1
	}
	if err := ctx.Run(); err != nil {
		fmt.Fprintln(stderr, "bankml:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// errWriter is the standard error stream, bound separately from stdout's
// io.Writer so that commands can take both.
type errWriter io.Writer
