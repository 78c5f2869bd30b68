package main

import (
	"strings"
	"testing"
)

// TestCommandsRefuseADirectory: every command that opens a GGUF file says, for a directory, "<path> is a
// directory, not a GGUF file" (gguf.Open's words, which notDirectory reuses), after the argument's name,
// as a usage error (exit 1) before reading anything; sha256 and a manifest, which need not be GGUF, say
// "is a directory" (fsutil.OpenRegular).
func TestCommandsRefuseADirectory(t *testing.T) {
	dir := t.TempDir()
	model := storiesPath(t)
	gguf := dir + " is a directory, not a GGUF file"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", dir, "-p", "x"}, "run: MODEL: " + gguf},
		{[]string{"run", "-m", dir, "-p", "x"}, "run: -m/--model: " + gguf},
		{[]string{"serve", dir, "--unpinned"}, "serve: MODEL: " + gguf},
		{[]string{"serve", "--model", dir, "--unpinned"}, "serve: -m/--model: " + gguf},
		{[]string{"guard", dir}, "guard: FILE: " + gguf},
		{[]string{"pin", "--manifest", storiesSHA256, dir}, "pin: FILE: " + gguf},
		{[]string{"inspect", dir}, "inspect: FILE: " + gguf},
		{[]string{"tokenize", dir, "-p", "x"}, "tokenize: MODEL: " + gguf},
		{[]string{"detokenize", dir, "1"}, "detokenize: MODEL: " + gguf},
		{[]string{"chat-template", dir}, "chat-template: MODEL: " + gguf},
		{[]string{"perplexity", dir, model}, "perplexity: MODEL: " + gguf},
		{[]string{"quantize", "--type", "tq2_0", dir, dir + "/out.gguf"}, "quantize: IN.gguf: " + gguf},
		{[]string{"sha256", dir}, "sha256: open " + dir + ": not a regular file: is a directory"},
		{[]string{"pin", "--manifest", dir, model}, "pin: manifest: open " + dir + ": not a regular file: is a directory"},
	} {
		code, out, stderr := runCLI(c.args...)
		if code != 1 || out != "" || !strings.Contains(stderr, "bankml: "+c.want) || strings.Contains(stderr, "d---") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.args, code, out, stderr, c.want)
		}
	}
}
