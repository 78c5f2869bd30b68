package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
	"github.com/bankml/bankml/internal/testdata"
)

// storiesVocab returns stories260K's SentencePiece vocabulary as a synth
// vocabulary plus the metadata synth does not plan for it (scores, unknown
// token), so a synthetic qwen3 model can carry a vocabulary bankml's
// tokenizer reads today.
func storiesVocab(t *testing.T) (*synth.Vocab, []gguf.KV) {
	t.Helper()
	f, err := gguf.Open(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	arr := func(key string) *gguf.Array {
		a, ok := f.GetArray(key)
		if !ok {
			t.Fatalf("stories260K has no %s", key)
		}
		return a
	}
	toks, err := arr("tokenizer.ggml.tokens").Strings()
	if err != nil {
		t.Fatal(err)
	}
	types, err := arr("tokenizer.ggml.token_type").Int32s()
	if err != nil {
		t.Fatal(err)
	}
	scores, err := arr("tokenizer.ggml.scores").Float32s()
	if err != nil {
		t.Fatal(err)
	}
	v := &synth.Vocab{Model: "llama", Tokens: toks, Types: types, BOS: 1, EOS: 2, PAD: -1, AddBOS: true}
	return v, []gguf.KV{
		{Key: "tokenizer.ggml.scores", Value: gguf.ArrayValue(gguf.Float32Array(scores))},
		{Key: "tokenizer.ggml.unknown_token_id", Value: gguf.Uint32Value(0)},
	}
}

// TestRunQwen3PrintsTheReferenceContinuation: bankml run on qwen3 files
// (tiny shapes, Q1_0 and Q2_0, YaRN RoPE scaling as Bonsai's files carry)
// prints the reference's greedy continuation detokenized by the reference,
// byte for byte. The files carry stories260K's SentencePiece vocabulary;
// TestRunQwen3WithTheQwen3Vocabulary covers the real one.
func TestRunQwen3PrintsTheReferenceContinuation(t *testing.T) {
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	vocab, extra := storiesVocab(t)
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, typ := range []gguf.GGMLType{gguf.Q1_0, gguf.Q2_0} {
		cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: typ, Embd: typ, Output: typ, Vocab: vocab, Seed: 3,
			Metadata: append([]gguf.KV{
				{Key: "qwen3.rope.scaling.type", Value: gguf.StringValue("yarn")},
				{Key: "qwen3.rope.scaling.factor", Value: gguf.Float32Value(4)},
				{Key: "qwen3.rope.scaling.original_context_length", Value: gguf.Uint32Value(1024)},
			}, extra...)}
		path := filepath.Join(dir, "qwen3-"+typ.String()+".gguf")
		if _, err := synth.WriteFile(path, cfg); err != nil {
			t.Fatal(err)
		}
		rm, err := lib.LoadModel(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, prompt := range []string{"Once upon a time", "<s>Tom</s> and Lily went", "-- a dash"} {
			want := append(refContinuation(t, rm, prompt, 24), '\n')
			code, out, stderr := runCLI("run", path, "-p", prompt, "-n", "24", "-t", "2", "--no-display-prompt")
			if code != 0 {
				t.Fatalf("%s %q: exit %d: %s", typ, prompt, code, stderr)
			}
			if out != string(want) {
				t.Errorf("%s %q:\n got %q\nwant %q", typ, prompt, out, want)
			}
		}
		rm.Close()
	}
}

// TestRunQwen3WithTheQwen3Vocabulary runs a tiny qwen3 file with the real
// Qwen3 vocabulary (BPE, tokenizer.ggml.model "gpt2", which package tokenizer
// reads): bankml run prints the reference's continuation of a ChatML prompt,
// byte for byte.
func TestRunQwen3WithTheQwen3Vocabulary(t *testing.T) {
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.Q2_0, Embd: gguf.Q2_0, Output: gguf.Q2_0, Vocab: synthcache.Qwen3Vocab(t), Seed: 9}
	path := synthcache.File(t, "qwen3-tiny-Q2_0", cfg)
	prompt := "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
	code, out, stderr := runCLI("run", path, "-p", prompt, "-n", "8", "-t", "2", "--no-display-prompt")
	rm, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	want := refContinuation(t, rm, prompt, 8)
	if code != 0 || out != string(append(want, '\n')) {
		t.Errorf("exit %d, stderr %q\n got %q\nwant %q", code, stderr, out, want)
	}
}

// TestRunRefusesOtherArchitectures: a file whose general.architecture is
// not registered is refused from its header (exit 2), naming the
// architecture, before its sha256 is computed.
func TestRunRefusesOtherArchitectures(t *testing.T) {
	src, err := os.ReadFile(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("general.architecture")
	i := bytes.Index(src, key)
	if i < 0 {
		t.Fatal("no general.architecture key")
	}
	// key, u32 type, u64 length, then the 5 bytes of "llama".
	b := bytes.Clone(src)
	v := i + len(key) + 4 + 8
	if string(b[v:v+5]) != "llama" {
		t.Fatalf("unexpected layout: %q", b[v:v+5])
	}
	copy(b[v:], "gemma")
	path := filepath.Join(t.TempDir(), "gemma.gguf")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("run", path, "-p", "hi", "-n", "1")
	if code != 2 || !strings.Contains(stderr, `architecture "gemma"`) || strings.Contains(stderr, "admitted") {
		t.Errorf("exit %d, stderr %q; want 2, the architecture named, no admission line", code, stderr)
	}
}

// refContinuation is the text bankml run must print for prompt: the
// reference tokenizes it as llama-cli does (add_special, parse_special),
// continues it greedily for n tokens and detokenizes the tokens before the
// first end-of-generation token (control tokens render as nothing).
func refContinuation(t *testing.T, rm *reference.Model, prompt string, n int) []byte {
	t.Helper()
	toks, err := rm.Tokenize(prompt, true, true)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := rm.Greedy(toks, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	return refText(t, rm, ids)
}

// refEcho is llama-completion's echo of a prompt before its continuation: the reference's pieces of the
// prompt's tokens (tokenized with add_special and parse_special, as -p is), control tokens as text only
// with special (common_token_to_piece(ctx, id, params.special), tools/completion/completion.cpp:707).
func refEcho(t *testing.T, rm *reference.Model, prompt string, special bool) []byte {
	t.Helper()
	toks, err := rm.Tokenize(prompt, true, true)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, id := range toks {
		p, err := rm.TokenToPiece(id, special)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p...)
	}
	return out
}

// refText is the reference's text of generated tokens: their pieces
// (control tokens render as nothing) up to the first end-of-generation token.
func refText(t *testing.T, rm *reference.Model, ids []int32) []byte {
	t.Helper()
	var out []byte
	for _, id := range ids {
		if refEOG(rm, id) {
			break
		}
		p, err := rm.TokenToPiece(id, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p...)
	}
	return out
}

// refEOG is the reference's llama_vocab_is_eog for tok (false if the model is closed).
func refEOG(m *reference.Model, tok int32) bool {
	eog, err := m.IsEOG(tok)
	return err == nil && eog
}
