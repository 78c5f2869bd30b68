package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenizeTakesLlamaTokenizesFlags: tokenize takes llama-tokenize's -m/--model (the model instead of
// FILE), -f/--file (the text from a file, byte for byte), --stdin (from standard input) and --log-disable
// (harmless), with llama-tokenize's precedence: --stdin over -f over -p, whatever their order.
func TestTokenizeTakesLlamaTokenizesFlags(t *testing.T) {
	model := storiesPath(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(file, []byte(`Once upon\ta time`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// want runs tokenize FILE -p text: the output the flags under test must give.
	want := func(text string, flags ...string) string {
		t.Helper()
		code, stdout, stderr := runCLI(append([]string{"tokenize", model, "-p", text}, flags...)...)
		if code != 0 {
			t.Fatalf("tokenize -p %q: exit %d, %s", text, code, stderr)
		}
		return stdout
	}
	fileText := "Once upon\ta time\n" // the escape \t processed, the trailing newline kept
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // exact, when code is 0
		stderr string // in standard error, when code is not 0
	}{
		{name: "-m names the model as FILE does", args: []string{"-m", model, "-p", "Hello world"}, stdout: want("Hello world")},
		{name: "--model is -m", args: []string{"--model", model, "-p", "Hello world", "--ids"}, stdout: want("Hello world", "--ids")},
		{name: "-f reads the file byte for byte, its trailing newline a token, its escapes processed", args: []string{model, "-f", file}, stdout: want(fileText)},
		{name: "--file is -f, and --no-escape keeps its escapes", args: []string{model, "--file", file, "--no-escape", "--ids"}, stdout: want(`Once upon\ta time`+"\n", "--no-escape", "--ids")},
		{name: "-f counts over -p given after it", args: []string{"-m", model, "-f", file, "-p", "zzz"}, stdout: want(fileText)},
		{name: "-f counts over -p given before it", args: []string{"-m", model, "-p", "zzz", "-f", file}, stdout: want(fileText)},
		{name: "--stdin reads standard input, its escapes processed", args: []string{"-m", model, "--stdin"}, stdin: `a\nb`, stdout: want("a\nb")},
		{name: "--stdin counts over -p and -f", args: []string{"-m", model, "-p", "zzz", "-f", file, "--stdin", "--show-count"}, stdin: "Hello", stdout: want("Hello", "--show-count")},
		{name: "--log-disable is accepted and changes nothing", args: []string{"-m", model, "--log-disable", "-p", "Hello world"}, stdout: want("Hello world")},
		{name: "the model as FILE and as -m naming the same file is taken", args: []string{model, "-m", model, "-p", "Hello world"}, stdout: want("Hello world")},
		{name: "two different models as FILE and -m are refused naming both", args: []string{model, "-m", file, "-p", "x"}, code: 1,
			stderr: "bankml: tokenize: the model is given twice, as FILE " + `"` + model + `" and as -m/--model "` + file + `": give one (see bankml tokenize --help)`},
		{name: "no model is refused naming FILE and -m", args: []string{"-p", "x"}, code: 1,
			stderr: `bankml: tokenize: expected "<FILE>" or -m/--model FNAME: the GGUF file whose vocabulary is read (see bankml tokenize --help)`},
		{name: "a directory as -m is refused naming -m", args: []string{"-m", dir, "-p", "x"}, code: 1, stderr: "bankml: tokenize: -m/--model: " + dir + " is a directory"},
		{name: "-f of a missing file is refused naming -f and the file", args: []string{"-m", model, "-f", filepath.Join(dir, "missing.txt")}, code: 1,
			stderr: "bankml: tokenize: -f/--file: open " + filepath.Join(dir, "missing.txt") + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLIStdin(tc.stdin, append([]string{"tokenize"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, %s; want %d", code, stderr, tc.code)
			}
			if tc.code == 0 && stdout != tc.stdout {
				t.Fatalf("stdout\n%s\nwant\n%s", stdout, tc.stdout)
			}
			if tc.code != 0 && !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("stderr %q, want %q", stderr, tc.stderr)
			}
		})
	}
}
