package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
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
	code, _, stderr := runCLI("run", filepath.Join(t.TempDir(), "absent.gguf"), "-p", "x")
	if code != 1 || !strings.Contains(stderr, "no such file") {
		t.Fatalf("exit %d, stderr %q; want 1 and the OS error", code, stderr)
	}
}

// TestRunPrintsTheReferenceContinuation: bankml run's text is the reference's
// greedy continuation, detokenized by the reference, byte for byte.
func TestRunPrintsTheReferenceContinuation(t *testing.T) {
	model := storiesPath(t)
	lib, err := reference.Load()
	if err != nil {
		t.Skipf("reference not installed (run scripts/install-reference.sh): %v", err)
	}
	rm, err := lib.LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	for _, prompt := range []string{"Once upon a time", "The cat"} {
		toks, err := rm.Tokenize(prompt, true, false)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := rm.Greedy(toks, 48, 1)
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		for _, id := range ids {
			if id == 2 { // EOS ends bankml run's generation
				break
			}
			p, err := rm.TokenToPiece(id, false)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, p...)
		}
		code, out, stderr := runCLI("run", model, "-p", prompt, "-n", "48")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if out != string(want) {
			t.Errorf("%q:\n got %q\nwant %q", prompt, out, want)
		}
		if !strings.Contains(stderr, "generated:") {
			t.Errorf("no summary line in %q", stderr)
		}
	}
}

func TestRunReadsThePromptFromStdin(t *testing.T) {
	model := storiesPath(t)
	var o, e bytes.Buffer
	code := run([]string{"run", model, "-n", "8"}, strings.NewReader("Once upon a time\n"), &o, &e)
	if code != 0 || !strings.HasPrefix(o.String(), ", there was") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, o.String(), e.String())
	}
}
