package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestThreadCount: -t/--threads as common/arg.cpp:1514–1521 reads it (0 or less: std::thread::hardware_concurrency,
// here runtime.NumCPU), bounded by ggml's GGML_MAX_N_THREADS (ggml/include/ggml.h:225: 512).
func TestThreadCount(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
		err  string
	}{
		{nil, 7, ""}, // the default, decoded as given
		{[]string{"-t", "1"}, 1, ""},
		{[]string{"-t", "512"}, 512, ""},
		{[]string{"--threads=3"}, 3, ""},
		{[]string{"-t", "0"}, runtime.NumCPU(), ""},
		{[]string{"-t", "-1"}, runtime.NumCPU(), ""},
		{[]string{"-t", "-2147483648"}, runtime.NumCPU(), ""},
		{[]string{"-t", "513"}, 0, "-t/--threads: value 513 out of range [-2147483648, 512]"},
		{[]string{"-t", "1000000000"}, 0, "-t/--threads: value 1000000000 out of range [-2147483648, 512]"},
		{[]string{"-t", "99999999999999999999"}, 0, "-t/--threads: value 99999999999999999999 out of range [-2147483648, 512]"},
		{[]string{"-t", "-2147483649"}, 0, "-t/--threads: value -2147483649 out of range [-2147483648, 512]"},
		{[]string{"-t", "two"}, 0, `-t/--threads: value "two" is not an integer`},
		{[]string{"-t", "1.5"}, 0, "not an integer"},
	} {
		var c struct {
			Threads threadCount `short:"t" name:"threads" default:"7"`
		}
		p, err := kong.New(&c, kong.WithHyphenPrefixedParameters(true), kong.Exit(func(int) {}))
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Parse(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || int(c.Threads) != tc.want {
			t.Errorf("%v: %d, %v; want %d", tc.args, c.Threads, err, tc.want)
		}
	}
}

// TestThreadsBoundEveryCommand: every command with -t refuses a count above GGML_MAX_N_THREADS at parse time,
// a usage error (exit 1) naming -t, before any file is read (serve never starts).
func TestThreadsBoundEveryCommand(t *testing.T) {
	model := storiesPath(t)
	out := t.TempDir() + "/out.gguf"
	for _, args := range [][]string{
		{"run", model, "-p", "Once", "-n", "4", "-t", "1000000000"},
		{"run", model, "--chat", "-t", "513"},
		{"serve", model, "--unpinned", "-t", "1000000000"},
		{"perplexity", model, model, "-t", "1000000000"},
		{"quantize", model, out, "--type", "tq2_0", "--threads", "513"},
	} {
		code, _, stderr := runCLI(args...)
		if code != 1 || !strings.Contains(stderr, ": -t/--threads: value ") || !strings.Contains(stderr, " out of range [-2147483648, 512]") {
			t.Errorf("bankml %v: exit %d, stderr %q; want exit 1 naming -t/--threads", args, code, stderr)
		}
	}
}

// TestThreadsOutOfRangeReadsAsEveryOtherRangeError: a -t that no command takes is refused in outOfRange's words,
// prefixed with the command as its other range errors are, quoting the range -t really takes: any 32-bit int
// (llama.cpp's std::stoi) up to GGML_MAX_N_THREADS, 0 or less meaning the logical CPUs.
func TestThreadsOutOfRangeReadsAsEveryOtherRangeError(t *testing.T) {
	model := storiesPath(t)
	out := t.TempDir() + "/out.gguf"
	const tail = " out of range [-2147483648, 512] (0 or less: the number of logical CPUs; 512 is ggml's GGML_MAX_N_THREADS)"
	for _, c := range []struct {
		name string
		args []string
		want string // standard error's last line, whole
	}{
		{"run with -t 1000", []string{"run", model, "-p", "Once", "-t", "1000"}, "bankml: run: -t/--threads: value 1000" + tail},
		{"serve with -t 513", []string{"serve", model, "--unpinned", "-t", "513"}, "bankml: serve: -t/--threads: value 513" + tail},
		{"embed with --threads=600", []string{"embed", model, "-p", "hi", "--threads=600"}, "bankml: embed: -t/--threads: value 600" + tail},
		{"perplexity with -t past a 32-bit int", []string{"perplexity", model, model, "-t", "99999999999"}, "bankml: perplexity: -t/--threads: value 99999999999" + tail},
		{"quantize with -t below a 32-bit int", []string{"quantize", model, out, "--type", "tq2_0", "-t", "-2147483649"}, "bankml: quantize: -t/--threads: value -2147483649" + tail},
		{"run with -t past a 64-bit int", []string{"run", model, "-p", "Once", "-t", "99999999999999999999"}, "bankml: run: -t/--threads: value 99999999999999999999" + tail},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(c.args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if got := lines[len(lines)-1]; code != 1 || got != c.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit 1 and\n%s", code, got, c.want)
			}
		})
	}
}
