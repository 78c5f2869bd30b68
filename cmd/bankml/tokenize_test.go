package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

func runCLIStdin(stdin string, args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, strings.NewReader(stdin), &o, &e)
	return code, o.String(), e.String()
}

// llamaTokenizeOutput formats ids as tools/tokenize/tokenize.cpp prints them, with the pieces the reference
// gives (common_token_to_piece: special = true).
func llamaTokenizeOutput(t *testing.T, m *reference.Model, ids []int32, idsOnly bool) string {
	t.Helper()
	var b strings.Builder
	if idsOnly {
		b.WriteString("[")
		for i, id := range ids {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d", id)
		}
		b.WriteString("]\n")
		return b.String()
	}
	for _, id := range ids {
		p, err := m.TokenToPiece(id, true)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%6d -> '%s'\n", id, p)
	}
	return b.String()
}

// TestTokenizePrintsWhatLlamaTokenizePrints runs bankml tokenize on real vocabularies and compares its output with
// llama-tokenize's format filled with the reference's tokens and pieces: BOS/EOS as the model adds them (unless
// --no-bos), special-token text parsed (unless --no-special), escapes processed (unless --no-escape).
func TestTokenizePrintsWhatLlamaTokenizePrints(t *testing.T) {
	lib, err := reference.Load()
	if err != nil {
		if errors.Is(err, reference.ErrNotInstalled) {
			testdata.Absent(t, "reference not installed: %v", err)
		}
		testdata.Absent(t, "reference unavailable: %v", err)
	}
	prompts := []string{"Hello world", `a\nb\tc \x41 \q`, "<|endoftext|>x<s></s> 123", "  leading\n\n", "日本語 🦙 naïve"}
	same, n := 0, 0
	for _, name := range []string{"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-bert-bge.gguf"} {
		path := testdata.Model(t, filepath.Join("vocab", name))
		m, err := lib.LoadVocab(path)
		if err != nil {
			t.Fatal(err)
		}
		addBOS, _, err := m.AddBOSEOS()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range prompts {
			for _, c := range []struct {
				flags               []string
				add, parse, escaped bool
				idsOnly, stdin      bool
			}{
				{nil, addBOS, true, true, false, false},
				{[]string{"--ids-only"}, addBOS, true, true, true, false},
				{[]string{"--no-special", "--no-bos"}, false, false, true, false, false},
				{[]string{"--no-escape"}, addBOS, true, false, false, true},
			} {
				text := p
				if c.escaped {
					text = processEscapes(p)
				}
				ids, err := m.Tokenize(text, c.add, c.parse)
				if err != nil {
					t.Fatal(err)
				}
				want := llamaTokenizeOutput(t, m, ids, c.idsOnly)
				args := append([]string{"tokenize", path}, c.flags...)
				stdin := ""
				if c.stdin {
					stdin = p
				} else {
					args = append(args, "-p", p)
				}
				n++
				code, out, errOut := runCLIStdin(stdin, args...)
				if code != 0 || out != want {
					t.Errorf("bankml %q (stdin %q): exit %d %s\n got %q\nwant %q", args, stdin, code, errOut, out, want)
					continue
				}
				same++
			}
		}
		m.Close()
	}
	t.Logf("bankml tokenize: %d of %d outputs identical to llama-tokenize's format with the reference's tokens", same, n)
}

// TestDetokenizePrintsTheReferenceText detokenizes the reference's ids (from arguments and from the --ids-only
// list on standard input) and compares the bytes with llama_detokenize.
func TestDetokenizePrintsTheReferenceText(t *testing.T) {
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference unavailable: %v", err)
	}
	path := testdata.Model(t, filepath.Join("vocab", "ggml-vocab-phi-3.gguf"))
	m, err := lib.LoadVocab(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, text := range []string{"Hello world", "<|user|>\nhi<|end|>\n<|assistant|>", " x  y ", "日本語 🦙"} {
		ids, err := m.Tokenize(text, true, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			flags           []string
			remove, unparse bool
		}{{nil, false, true}, {[]string{"--no-special"}, false, false}, {[]string{"--remove-special"}, true, true}} {
			want, err := m.Detokenize(ids, c.remove, c.unparse)
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"detokenize", path}, c.flags...)
			var list []string
			for _, id := range ids {
				list = append(list, fmt.Sprint(id))
			}
			code, out, errOut := runCLIStdin("", append(args, list...)...)
			if code != 0 || out != string(want) {
				t.Errorf("%v %v: exit %d %s, got %q want %q", args, list, code, errOut, out, want)
			}
			code, out, errOut = runCLIStdin("["+strings.Join(list, ", ")+"]\n", args...)
			if code != 0 || out != string(want) {
				t.Errorf("%v <stdin %v>: exit %d %s, got %q want %q", args, list, code, errOut, out, want)
			}
		}
	}
}

// TestTokenizeCommandErrors: usage and I/O errors exit 1, a file that is not GGUF or whose tokenizer is not
// supported exits 2, each with a message naming the problem.
func TestTokenizeCommandErrors(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "x.gguf")
	if err := os.WriteFile(notGGUF, []byte("not a gguf file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	t5 := filepath.Join(dir, "t5.gguf")
	writeVocabGGUF(t, t5, "t5", "")
	unknownPre := filepath.Join(dir, "pre.gguf")
	writeVocabGGUF(t, unknownPre, "gpt2", "no-such-pre")
	gpt2 := testdata.Model(t, filepath.Join("vocab", "ggml-vocab-gpt-2.gguf"))
	for _, c := range []struct {
		args  []string
		code  int
		want  string
		stdin string
	}{
		{[]string{"tokenize"}, 1, "expected", ""},
		{[]string{"tokenize", filepath.Join(dir, "missing.gguf"), "-p", "x"}, 1, "no such file", ""},
		{[]string{"tokenize", notGGUF, "-p", "x"}, 2, "bad magic", ""},
		{[]string{"tokenize", t5, "-p", "x"}, 2, `model "t5" not supported`, ""},
		{[]string{"tokenize", unknownPre, "-p", "x"}, 2, `unknown pre-tokenizer type "no-such-pre"`, ""},
		{[]string{"detokenize", gpt2, "12", "x1"}, 1, `"x1" is not a token id`, ""},
		{[]string{"detokenize", gpt2, "50257"}, 1, "outside the vocabulary of 50257 tokens", ""},
		{[]string{"detokenize", gpt2}, 1, "token id -1 is outside the vocabulary", "[5, -1]"},
		{[]string{"detokenize", t5, "1"}, 2, `model "t5" not supported`, ""},
	} {
		code, _, errOut := runCLIStdin(c.stdin, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("bankml %q: exit %d %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

// writeVocabGGUF writes a metadata-only GGUF with a three-token vocabulary of the given model and pre-tokenizer.
func writeVocabGGUF(t *testing.T, path, model, pre string) {
	t.Helper()
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.StringValue("llama")},
		{Key: "tokenizer.ggml.model", Value: gguf.StringValue(model)},
		{Key: "tokenizer.ggml.tokens", Value: gguf.ArrayValue(gguf.StringArray([]string{"a", "b", "ab"}))},
		{Key: "tokenizer.ggml.merges", Value: gguf.ArrayValue(gguf.StringArray([]string{"a b"}))},
	}
	if pre != "" {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.pre", Value: gguf.StringValue(pre)})
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, kvs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestProcessEscapesFollowsLlamaCpp checks string_process_escapes' cases, strtol's quirks included.
func TestProcessEscapesFollowsLlamaCpp(t *testing.T) {
	for in, want := range map[string]string{
		`a\nb`: "a\nb", `\r\t\'\"\\`: "\r\t'\"\\", `\x41\x4a`: "AJ", `\x4`: `\x4`, `\xZZ`: `\xZZ`, `\q`: `\q`,
		`end\`: `end\`, `\x+F`: "\x0f", `\x F`: "\x0f", `\x-1`: "\xff", `\x0x`: `\x0x`,
	} {
		if got := processEscapes(in); got != want {
			t.Errorf("processEscapes(%q) = %q, want %q", in, got, want)
		}
	}
}
