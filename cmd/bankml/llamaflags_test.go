package main

import (
	"slices"
	"strings"
	"testing"
)

// TestLlamaArgs checks the rewrite of llama.cpp's multi-letter single-dash flags (common/arg.cpp's
// spellings) before kong parses, the split of one-letter flags written with "=", and that a flag's value is
// never rewritten.
func TestLlamaArgs(t *testing.T) {
	takesValue := func(s string) bool { return s == "-p" || s == "--prompt" || s == "-ngl" || s == "-n" }
	for _, c := range []struct{ in, want []string }{
		{[]string{"serve", "m.gguf", "-np", "4", "-c", "512"}, []string{"serve", "m.gguf", "--parallel", "4", "-c", "512"}},
		{[]string{"serve", "m.gguf", "-np=2"}, []string{"serve", "m.gguf", "--parallel=2"}},
		{[]string{"serve", "-m", "m.gguf", "-ngl", "99", "-fa", "on", "-cb", "-nocb", "-to", "5", "-lm", "mmap"},
			[]string{"serve", "-m", "m.gguf", "--n-gpu-layers", "99", "--flash-attn", "on", "--cont-batching", "--no-cont-batching", "--timeout", "5", "--load-mode", "mmap"}},
		{[]string{"run", "m.gguf", "-ngl=all", "-fa", "auto"}, []string{"run", "m.gguf", "--n-gpu-layers=all", "--flash-attn", "auto"}},
		{[]string{"run", "m.gguf", "-np", "-to"}, []string{"run", "m.gguf", "-np", "-to"}}, // llama-server's only
		{[]string{"run", "m.gguf", "-p", "-ngl"}, []string{"run", "m.gguf", "-p", "-ngl"}}, // a prompt
		{[]string{"run", "m.gguf", "-ngl", "-fa"}, []string{"run", "m.gguf", "--n-gpu-layers", "-fa"}},
		{[]string{"run", "m.gguf", "--", "-ngl"}, []string{"run", "m.gguf", "--", "-ngl"}},
		{[]string{"tokenize", "m.gguf", "-ngl"}, []string{"tokenize", "m.gguf", "-ngl"}},
		{[]string{"run", "m.gguf", "-p=Once", "-n=4"}, []string{"run", "m.gguf", "-p", "Once", "-n", "4"}},
		{[]string{"run", "m.gguf", "-p=a=b", "-p="}, []string{"run", "m.gguf", "-p", "a=b", "-p", ""}},
		{[]string{"run", "m.gguf", "-p", "-n=4"}, []string{"run", "m.gguf", "-p", "-n=4"}}, // a prompt
		{[]string{"tokenize", "m.gguf", "-p=Once"}, []string{"tokenize", "m.gguf", "-p", "Once"}},
		{[]string{"run", "m.gguf", "-x=1", "--prompt=-p=1"}, []string{"run", "m.gguf", "-x=1", "--prompt=-p=1"}},
	} {
		if got := llamaArgs(c.in, takesValue); !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, want %v", c.in, got, c.want)
		}
	}
}

// TestLlamaModelAndIgnoredFlags runs `bankml run` as a llama-cli user types it: -m/--model for the model,
// and the flags bankml ignores, each with its one warning line (or a usage error for a value llama.cpp
// refuses too).
func TestLlamaModelAndIgnoredFlags(t *testing.T) {
	model := storiesPath(t)
	gen := []string{"-p", "Once upon a time", "-n", "2"}
	for _, c := range []struct {
		args []string
		code int
		want []string // in stderr
		not  string   // not in stderr
	}{
		{[]string{"run", "-m", model}, 0, []string{"generated: 2 tokens"}, "ignored"},
		{[]string{"run", "--model", model}, 0, []string{"generated: 2 tokens"}, "ignored"},
		{[]string{"run", "--model=" + model}, 0, []string{"generated: 2 tokens"}, "ignored"},
		{[]string{"run", model, "-m", model}, 0, []string{"generated: 2 tokens"}, "twice"},
		{[]string{"run", model, "-m", model + ".other"}, 1, []string{"the model is given twice", "-m/--model"}, "generated"},
		{[]string{"run"}, 1, []string{`expected "<MODEL>"`}, "generated"},
		{[]string{"run", "-m", model, "-ngl", "99"}, 0, []string{"bankml: -ngl 99 ignored: bankml runs on the CPU only\n", "generated"}, ""},
		{[]string{"run", "-m", model, "--gpu-layers", "all"}, 0, []string{"bankml: -ngl all ignored"}, ""},
		{[]string{"run", "-m", model, "--n-gpu-layers=auto"}, 0, []string{"bankml: -ngl auto ignored"}, ""},
		{[]string{"run", "-m", model, "-ngl", "many"}, 1, []string{`-ngl/--n-gpu-layers "many"`}, "generated"},
		{[]string{"run", "-m", model, "-fa", "on"}, 0, []string{"bankml: -fa on ignored: bankml always runs flash attention"}, "differ"},
		{[]string{"run", "-m", model, "--flash-attn", "off"}, 0, []string{"bankml: -fa off ignored", "may differ in the last bits"}, ""},
		{[]string{"run", "-m", model, "-fa", "yes"}, 1, []string{`-fa/--flash-attn "yes"`}, "generated"},
		{[]string{"run", "-m", model, "-cb"}, 0, []string{"bankml: -cb ignored"}, ""},
		{[]string{"run", "-m", model, "-nocb"}, 0, []string{"bankml: -nocb ignored"}, ""},
		{[]string{"run", "-m", model, "-cb", "-nocb"}, 1, []string{"both given"}, "generated"},
		{[]string{"run", "-m", model, "--mlock", "--no-mmap"}, 0, []string{"bankml: --mlock ignored", "bankml: --no-mmap ignored"}, ""},
		{[]string{"run", "-m", model, "-lm", "mmap+mlock"}, 0, []string{"bankml: -lm mmap+mlock ignored"}, ""},
		{[]string{"run", "-m", model, "--load-mode", "fast"}, 1, []string{`-lm/--load-mode "fast"`}, "generated"},
		{[]string{"serve", "-m", model, "--unpinned", "-ngl", "99", "-np", "0"}, 1, []string{"bankml: -ngl 99 ignored", "--parallel 0"}, "listening"},
		{[]string{"serve", "--model", model, "-fa", "nope"}, 1, []string{`-fa/--flash-attn "nope"`}, "listening"},
		{[]string{"serve", model, "-m", model + ".other"}, 1, []string{"the model is given twice"}, "listening"},
		{[]string{"serve", model, "--unpinned", "-to", "0"}, 1, []string{"-to/--timeout 0: must be in [1, 2147483647] seconds"}, "listening"},
		{[]string{"serve", model, "--unpinned", "--timeout=-5"}, 1, []string{"-to/--timeout -5"}, "listening"},
		{[]string{"serve", "--unpinned"}, 1, []string{`expected "<MODEL>"`}, "listening"},
	} {
		args := c.args
		if args[0] == "run" && len(args) > 1 {
			args = append(slices.Clone(args), gen...)
		}
		code, _, stderr := runCLI(args...)
		ok := code == c.code && (c.not == "" || !strings.Contains(stderr, c.not))
		for _, w := range c.want {
			ok = ok && strings.Contains(stderr, w)
		}
		if ok && strings.Count(stderr, "ignored") != strings.Count(strings.Join(c.want, "|"), "ignored") {
			ok = false // one line per flag
		}
		if !ok {
			t.Errorf("%v: exit %d, stderr %q; want exit %d, %q, not %q", c.args, code, stderr, c.code, c.want, c.not)
		}
	}
}
