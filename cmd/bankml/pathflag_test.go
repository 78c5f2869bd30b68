package main

import (
	"strings"
	"testing"
)

// TestAnEmptyPathIsRefusedNotReadAsTheCurrentFolder checks that every type:"path" argument and flag without a
// default refuses an empty value by its name (kong's path mapper alone would make it the current folder: `quantize
// IN ""` wrote to the working directory's name, `inspect ""` read a folder) and leaves "-" and real paths alone.
func TestAnEmptyPathIsRefusedNotReadAsTheCurrentFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"inspect's FILE", []string{"inspect", ""}, "bankml: inspect: <FILE>: the file name is empty"},
		{"guard's FILE", []string{"guard", ""}, "bankml: guard: <FILE>: the file name is empty"},
		{"pin's FILE", []string{"pin", ""}, "bankml: pin: <FILE>: the file name is empty"},
		{"synth's OUT.gguf", []string{"synth", ""}, "bankml: synth: <OUT.gguf>: the file name is empty"},
		{"key new's FILE", []string{"key", "new", ""}, "bankml: key new: <FILE>: the file name is empty"},
		{"tokenize's FILE (optional beside -m)", []string{"tokenize", "", "-p", "hi"}, "bankml: tokenize: [<FILE>]: the file name is empty"},
		{"ledger verify's DIR", []string{"ledger", "verify", ""}, "bankml: ledger verify: <DIR>: the file name is empty"},
		{"receipt verify's --answer", []string{"receipt", "verify", "r.json", "--answer", ""}, "bankml: receipt verify: --answer: the file name is empty"},
		{"run's -m", []string{"run", "-m", "", "-p", "hi"}, "bankml: run: --model: the file name is empty"},
		{"quantize's OUT.gguf", []string{"quantize", "in.gguf", ""}, "bankml: quantize: [<OUT.gguf>]: the file name is empty"},
		{"perplexity's -f", []string{"perplexity", "-f", "", "m.gguf"}, "bankml: perplexity: --file: the file name is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := bankml(t, c.args...)
			if code != 1 || !strings.HasPrefix(stderr, c.want) {
				t.Fatalf("exit %d, stderr\n%s\nwant exit 1 and a line starting %q", code, stderr, c.want)
			}
		})
	}
	t.Run("a real path and - are read as before", func(t *testing.T) {
		code, _, stderr := bankml(t, "inspect", "missing.gguf")
		if code == 0 || strings.Contains(stderr, "the file name is empty") || !strings.Contains(stderr, "missing.gguf") {
			t.Fatalf("exit %d, stderr\n%s", code, stderr)
		}
	})
}
