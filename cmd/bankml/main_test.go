package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

func storiesPath(t *testing.T) string { return testdata.Model(t, "stories260K.gguf") }

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, strings.NewReader(""), &o, &e)
	return code, o.String(), e.String()
}

func TestVersionAndHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"version"}, "bankml "},
		{[]string{"--version"}, "reference llama.cpp"},
		{[]string{"--help"}, "Usage: bankml"},
		{[]string{"run", "--help"}, "--n-predict"},
		{[]string{"version", "--help"}, "Print the bankml version"},
	} {
		code, out, _ := runCLI(tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("bankml %v: exit %d, output %q; want exit 0 and %q", tc.args, code, out, tc.want)
		}
	}
}

// TestHelpCommandPrintsWhatDashHPrints: `bankml help` and `bankml help CMD [SUB]` print exactly what -h prints
// (exit 0), as `ollama help CMD` and `git help CMD` users expect; an unknown command is a usage error (1).
func TestHelpCommandPrintsWhatDashHPrints(t *testing.T) {
	for _, c := range []struct {
		name string
		help []string
		dash []string
	}{
		{"bankml help is bankml -h", []string{"help"}, []string{"-h"}},
		{"bankml help serve is bankml serve -h", []string{"help", "serve"}, []string{"serve", "-h"}},
		{"bankml help run is bankml run --help", []string{"help", "run"}, []string{"run", "--help"}},
		{"bankml help ledger verify is bankml ledger verify -h", []string{"help", "ledger", "verify"}, []string{"ledger", "verify", "-h"}},
		{"bankml help help is bankml help -h", []string{"help", "help"}, []string{"help", "-h"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(c.help...)
			wantCode, want, _ := runCLI(c.dash...)
			if code != 0 || wantCode != 0 || out != want || out == "" {
				t.Errorf("bankml %v: exit %d, %q (stderr %q); want exit 0 and bankml %v's %q", c.help, code, out, errOut, c.dash, want)
			}
		})
	}
	if code, _, errOut := runCLI("help", "nosuchcommand"); code != 1 || !strings.Contains(errOut, "nosuchcommand") {
		t.Errorf("bankml help nosuchcommand: exit %d, stderr %q; want exit 1 naming it", code, errOut)
	}
}

// TestHelpOfAnUnknownCommandNamesItAndListsTheCommands: `bankml help NAME` for a command bankml does not have is a
// usage error (exit 1) in the words of bankml's other errors, naming what was asked and listing the commands
// there are at that level (a subcommand's siblings for `help ledger NAME`), on standard error only.
func TestHelpOfAnUnknownCommandNamesItAndListsTheCommands(t *testing.T) {
	const all = "version, help, run, embed, guard, sha256, pin, inspect, synth, bench, tokenize, detokenize, chat-template, " +
		"ledger, key, receipt, witness, quantize, perplexity, train, serve, pull, list, show, cp, rm, create"
	for _, c := range []struct {
		name string
		args []string
		want string // standard error, whole
	}{
		{"help nosuch", []string{"help", "nosuch"}, `bankml: help: unknown command "nosuch" (the commands: ` + all + ")\n"},
		{"help nosuch with a flag after it", []string{"help", "nosuch", "--json"}, `bankml: help: unknown command "nosuch" (the commands: ` + all + ")\n"},
		{"help ledger nosuch", []string{"help", "ledger", "nosuch"}, `bankml: help: unknown command "ledger nosuch" (ledger's commands: verify, prove)` + "\n"},
		{"help bench nosuch", []string{"help", "bench", "nosuch"}, `bankml: help: unknown command "bench nosuch" (bench's commands: all, kernels, serve, model)` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(c.args...)
			if code != 1 || out != "" || errOut != c.want {
				t.Fatalf("exit %d, stdout %q, stderr\n%s\nwant exit 1, no stdout and\n%s", code, out, errOut, c.want)
			}
		})
	}
	// What is a command's argument, not a command, is still that command's help (run takes MODEL).
	if code, out, _ := runCLI("help", "run", "m.gguf"); code != 0 || !strings.HasPrefix(out, "Usage: bankml run") {
		t.Errorf("bankml help run m.gguf: exit %d, %q; want run's help", code, out)
	}
}

// TestHelpListsFlagsFirst: `bankml serve --help` and `bankml run --help` list the arguments and flags first
// and the prose on llama.cpp's flags after them, wrapped.
func TestHelpListsFlagsFirst(t *testing.T) {
	for _, cmd := range []string{"serve", "run"} {
		code, out, _ := runCLI(cmd, "--help")
		flags, prose := strings.Index(out, "\nFlags:\n"), strings.Index(out, "llama.cpp's flags (common/arg.cpp) are taken too")
		if code != 0 || flags < 0 || prose < flags || !strings.Contains(out[flags:prose], "--threads") {
			t.Errorf("bankml %s --help: exit %d, flags at %d, prose at %d:\n%s", cmd, code, flags, prose, out)
		}
		for _, line := range strings.Split(out[prose:], "\n") {
			if len(line) > 80 {
				t.Errorf("bankml %s --help: a prose line of %d bytes: %q", cmd, len(line), line)
			}
		}
	}
}

// TestRunRefusesMalformedFiles: truncated or hostile copies of a real model
// give exit status 2 and an error that names the problem, never a panic.
func TestRunRefusesMalformedFiles(t *testing.T) {
	src, err := os.ReadFile(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mutate := func(f func(b []byte)) []byte {
		b := bytes.Clone(src)
		f(b)
		return b
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"cut-10", src[:10], "truncated"},
		{"cut-100", src[:100], "truncated"},
		{"cut-1000", src[:1000], "truncated"},
		{"bad-magic", mutate(func(b []byte) { copy(b, "GGUX") }), "magic"},
		{"huge-kv-count", mutate(func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 1<<62) }), "count"},
		{"huge-string-length", mutate(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 1<<62) }), "length"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".gguf")
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCLI("run", p, "-p", "hi", "-n", "2")
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", code, stderr)
			}
			if !strings.Contains(strings.ToLower(stderr), tc.want) {
				t.Fatalf("stderr %q does not name the problem (%q)", stderr, tc.want)
			}
		})
	}
}

func TestRunMissingFileIsAnIOError(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent.gguf")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", absent, "-p", "x"}, "bankml: run: guard: open " + absent + ": no such file"},
		// The flags are checked before the file is read: -c past the model's bound names -c, not the file.
		{[]string{"run", absent, "-p", "x", "-c", "2000000000"}, "run: -c/--ctx-size: value 2000000000 out of range [0, 1073741824]"},
		{[]string{"run", absent, "-p", "x", "-n", "2147483648"}, "run: -n/--n-predict: value 2147483648 out of range"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 1 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestRunPrintsTheReferenceContinuation: bankml run's standard output is, as
// llama-completion's, the prompt echoed (the reference's pieces of its tokens;
// with -sp control tokens as text) then the reference's greedy continuation,
// detokenized by the reference, byte for byte, followed by a newline — on
// every stories260K file, for prompts with special-token text (parsed, as
// llama-cli does), multi-byte and invalid UTF-8, and a leading hyphen.
func TestRunPrintsTheReferenceContinuation(t *testing.T) {
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	prompts := []string{"Once upon a time", "The cat", "<s>Tom</s> and", "Lily saw a 🐶 and said \"¡hola!\"", "\xff\xfe\xc3(", "-- a dash"}
	for _, file := range []string{"stories260K.gguf", "derived/stories260K-F16.gguf", "derived/stories260K-Q8_0.gguf", "derived/stories260K-Q4_0.gguf"} {
		model := testdata.Model(t, file)
		rm, err := lib.LoadModel(model)
		if err != nil {
			t.Fatal(err)
		}
		for i, prompt := range prompts {
			special := i%2 == 1 // -sp on every other prompt: the echoed BOS and </s> become text
			want := slices.Concat(refEcho(t, rm, prompt, special), refContinuation(t, rm, prompt, 40), []byte{'\n'})
			args := []string{"run", model, "-p", prompt, "-n", "40", "-t", "1"}
			if special {
				args = append(args, "-sp")
			}
			code, out, stderr := runCLI(args...)
			if code != 0 {
				t.Fatalf("%s %q: exit %d: %s", file, prompt, code, stderr)
			}
			if out != string(want) {
				t.Errorf("%s %q:\n got %q\nwant %q", file, prompt, out, want)
			}
			if !strings.Contains(stderr, "generated:") {
				t.Errorf("no summary line in %q", stderr)
			}
		}
		rm.Close()
	}
}

// TestRunArguments: llama.cpp-style arguments are accepted and bad ones are
// refused with a named reason and the documented exit status.
func TestRunArguments(t *testing.T) {
	model := storiesPath(t)
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"-n", "-1", "-c", "16"}, 0, "generated:"},
		// -c 16 is padded to 256 cells as llama.cpp pads n_ctx; the 5-token
		// prompt leaves 251 tokens before the cache fills.
		{[]string{"-n", "2147483647", "-c", "16", "--ignore-eos"}, 0, "generated: 251 tokens"},
		// llama.cpp's std::stoi refuses -n and -c outside a 32-bit int (arg.cpp:1655, :1636); each quotes its own
		// range, which lies inside it.
		{[]string{"-n", "9223372036854775807"}, 1, "run: -n/--n-predict: value 9223372036854775807 out of range [-2, 2147483647] (-1: to an end-of-generation token, -2: until the context is full)"},
		{[]string{"-n", "99999999999"}, 1, "run: -n/--n-predict: value 99999999999 out of range [-2, 2147483647] (-1: to an end-of-generation token, -2: until the context is full)"},
		{[]string{"-n", "2147483648"}, 1, "run: -n/--n-predict: value 2147483648 out of range [-2, 2147483647] (-1: to an end-of-generation token, -2: until the context is full)"},
		{[]string{"-c", "2147483648"}, 1, "run: -c/--ctx-size: value 2147483648 out of range [0, 1073741824] (0: the model's training context)"},
		{[]string{"--top-k", "2147483648"}, 1, "run: --top-k: value 2147483648 out of range [-2147483648, 2147483647] (llama.cpp takes a 32-bit int)"},
		{[]string{"-n", "0"}, 0, "generated: 0 tokens"},
		// -2 is llama.cpp's "until context filled": what -1 does without a context shift (off by default).
		{[]string{"-n", "-2", "-c", "16", "--ignore-eos"}, 0, "generated: 251 tokens"},
		{[]string{"-n", "-3"}, 1, "-n/--n-predict: value -3 out of range [-2, 2147483647] (-1: to an end-of-generation token, -2: until the context is full)"},
		{[]string{"-n", "-9223372036854775808"}, 1, "-n/--n-predict: value -9223372036854775808 out of range"},
		{[]string{"-c", "9223372036854775807"}, 1, "-c/--ctx-size: value 9223372036854775807 out of range"},
		{[]string{"-c", "2000000000"}, 1, "run: -c/--ctx-size: value 2000000000 out of range [0, 1073741824] (0: the model's training context)"},
		{[]string{"-c", "1000000000", "-n", "1"}, 0, "capped at the model's training context (2048)"},
		{[]string{"-c", "-5"}, 1, "--ctx-size"},
		{[]string{"-t", "0", "-n", "1"}, 0, "generated:"}, // llama.cpp's -t 0: the number of CPUs
		{[]string{"-t", "513"}, 1, "-t/--threads: value 513 out of range [-2147483648, 512]"},
		{[]string{"--temp", "NaN"}, 1, "temp"},
		{[]string{"--seed", "-2"}, 1, "--seed"},
		{[]string{"--top-p", "0", "--temp", "1", "--seed", "1", "-n", "2"}, 0, "generated:"},
		{[]string{"-c", "5000", "-n", "1"}, 0, "capped at the model's training context (2048)"},
	} {
		args := append([]string{"run", model, "-p", "Once upon a time"}, tc.args...)
		code, _, stderr := runCLI(args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("bankml %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	// A prompt that fills the context is refused, as llama-server refuses a
	// prompt of n_ctx tokens or more (here 256 after padding).
	long := strings.Repeat(" Once upon a time", 80)
	code, _, stderr := runCLI("run", model, "-p", long, "-c", "200")
	if code != 1 || !strings.Contains(stderr, "must be shorter than the context") || !strings.Contains(stderr, "--ctx-size") {
		t.Errorf("a prompt longer than the context: exit %d, stderr %q; want 1 and a reason naming --ctx-size", code, stderr)
	}
}

// TestRunRefusesInconsistentModels: metadata that disagrees with the tensors,
// or values llama.cpp asserts on, are refused (exit 2) rather than run.
func TestRunRefusesInconsistentModels(t *testing.T) {
	src, err := os.ReadFile(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	setAfterKey := func(key string, value []byte) []byte {
		b := bytes.Clone(src)
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			t.Fatalf("key %q not in the file", key)
		}
		copy(b[i+len(key)+4:], value) // skip the value's u32 type id
		return b
	}
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"fewer-blocks", setAfterKey("llama.block_count", u32(4)), "blk.4"},
		{"nan-eps", setAfterKey("llama.attention.layer_norm_rms_epsilon", u32(0x7fc00000)), "layer_norm_rms_epsilon"},
		{"negative-eps", setAfterKey("llama.attention.layer_norm_rms_epsilon", u32(0xbf800000)), "layer_norm_rms_epsilon"},
	} {
		p := filepath.Join(dir, tc.name+".gguf")
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI("run", p, "-p", "hi", "-n", "2")
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tc.name, code, stderr, tc.want)
		}
	}
}

func TestRunReadsThePromptFromStdin(t *testing.T) {
	model := storiesPath(t)
	var o, e bytes.Buffer
	code := run([]string{"run", model, "-n", "8"}, strings.NewReader("Once upon a time\n"), &o, &e)
	if code != 0 || !strings.HasPrefix(o.String(), " Once upon a time, there was") || !strings.HasSuffix(o.String(), "\n") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, o.String(), e.String())
	}
}

// TestRunAdmitsThroughGuardAndPin: run reports the guard verdict and whether
// the file was pinned; a wrong pin refuses (exit 2) naming both hashes. The
// good hash is the one shared/models/MANIFEST.md records.
func TestRunAdmitsThroughGuardAndPin(t *testing.T) {
	model := storiesPath(t)
	const good = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"
	const bad = "0000000000000000000000000000000000000000000000000000000000000000"
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{nil, 0, []string{"guard play (mainline)", "sha256 " + good, "unpinned"}},
		{[]string{"--manifest", good}, 0, []string{"pinned"}},
		{[]string{"--manifest", "sha256:" + good}, 0, []string{"pinned"}},
		{[]string{"--manifest", bad}, 2, []string{good, bad, "refused"}},
	} {
		args := append([]string{"run", model, "-p", "Once", "-n", "2"}, tc.args...)
		code, _, stderr := runCLI(args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d; stderr %q", tc.args, code, tc.code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, stderr, w)
			}
		}
	}
}

// TestInvalidCPULevelIsAUsageError: a BANKML_CPU naming no level is a usage error (exit 1, README's exit
// table), found before the model is read, for run and serve; the file itself can be run (not exit 2).
func TestInvalidCPULevelIsAUsageError(t *testing.T) {
	model := storiesPath(t)
	t.Setenv("BANKML_CPU", "bogus")
	for _, args := range [][]string{
		{"run", model, "-p", "Once", "-n", "2"},
		{"serve", model, "--unpinned", "--port", "0"},
		{"perplexity", model, "../../perplexity/testdata/heldout-stories.txt", "-c", "128"},
	} {
		code, _, stderr := runCLI(args...)
		if code != 1 || !strings.Contains(stderr, `BANKML_CPU=bogus`) || !strings.Contains(stderr, `unknown CPU level "bogus"`) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 naming BANKML_CPU", args[0], code, stderr)
		}
	}
}

// TestRunSaysWhenTheContextIsFull: a plain run that stops because the context is full says so on stderr
// and exits 0, as llama-completion's main loop does with no context shift (tools/completion/
// completion.cpp: "context full and context shift is disabled => stopping"), after nCtx - prompt tokens
// (its check n_past + 1 >= n_ctx before each decode); one that stops at -n or at an end-of-generation
// token says nothing of it.
func TestRunSaysWhenTheContextIsFull(t *testing.T) {
	model := storiesPath(t)
	// "Once upon a time" is 5 tokens with the BOS; -c 256 leaves 251.
	for _, c := range []struct {
		args []string
		full bool
		gen  string
	}{
		{[]string{"-n", "-1", "--ignore-eos"}, true, "generated: 251 tokens"},
		{[]string{"-n", "-2", "--ignore-eos"}, true, "generated: 251 tokens"},
		{[]string{"-n", "400", "--ignore-eos"}, true, "generated: 251 tokens"},
		{[]string{"-n", "251", "--ignore-eos"}, false, "generated: 251 tokens"},
		{[]string{"-n", "7", "--ignore-eos"}, false, "generated: 7 tokens"},
	} {
		args := append([]string{"run", model, "-p", "Once upon a time", "-c", "256", "-t", "1"}, c.args...)
		code, _, stderr := runCLI(args...)
		said := strings.Contains(stderr, "run: context full (256 tokens: the prompt's 5 and 251 generated) and context shift is disabled (as llama.cpp's default) => stopping\n")
		if code != 0 || said != c.full || !strings.Contains(stderr, c.gen) {
			t.Errorf("%v: exit %d, stderr %q; want exit 0, context full said %v, %q", c.args, code, stderr, c.full, c.gen)
		}
	}
}
