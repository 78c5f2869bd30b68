// Package synthcache keeps the synthetic models of the oracle tests between test runs and across packages (test
// support only), each file named by its configuration and a digest of its plan.
//
// # Design record
//
// What. [File] names a model by its configuration's name and a digest of its plan (synth.Plan's metadata keys
// and types, tensor names, types and shapes, and the seed), writes it atomically with synth.WriteFile on first
// use and reuses it afterwards, so a present file is complete and a change of synth's layout never reuses a
// stale one. [Qwen3Vocab] converts the real Qwen3 vocabulary once per test binary. [Dir] is the folder:
// $BANKML_SYNTH_CACHE, else bankml-model-oracle under the temporary directory, shared by every package's tests.
//
// Follows. The way package model's oracle tests first kept their files.
//
// Deliberate differences. None to record.
//
// Determinism. synth writes the same bytes for the same configuration, so which test wrote a file first does
// not matter.
package synthcache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/testdata"
)

// EnvDir names the environment variable that overrides the cache folder
// ($TMPDIR/bankml-model-oracle by default).
const EnvDir = "BANKML_SYNTH_CACHE"

// Dir returns the cache folder, creating it.
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvDir)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "bankml-model-oracle")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	qwen3Once  sync.Once
	qwen3Vocab *synth.Vocab
	qwen3Err   error
)

// Qwen3Vocab returns the real Qwen3 vocabulary (151,936 tokens) converted
// from ../shared/models/qwen3 (synth.Qwen3Vocab), read once per test binary;
// the test is skipped (failed under CI) when the tokenizer is absent.
func Qwen3Vocab(t testing.TB) *synth.Vocab {
	t.Helper()
	qwen3Once.Do(func() {
		qwen3Vocab, qwen3Err = synth.Qwen3Vocab(filepath.Join(testdata.ModelsDir(t), "qwen3"), synth.Qwen3NVocab)
	})
	if qwen3Err != nil {
		testdata.Absent(t, "Qwen3 tokenizer: %v", qwen3Err)
	}
	return qwen3Vocab
}

// File returns the path of the model cfg describes, named name plus a digest
// of its plan and seed, generating it on first use.
func File(t testing.TB, name string, cfg synth.Config) string {
	t.Helper()
	kvs, infos, err := synth.Plan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The digest covers the seed and the whole header the plan writes (every
	// key's value, the vocabulary included, and every tensor's name, type and
	// shape): two configurations that differ only in a value must not share
	// a file.
	h := sha256.New()
	fmt.Fprint(h, cfg.Seed)
	gw, err := gguf.NewWriter(h, kvs, infos)
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Close(); err != nil && !errors.Is(err, gguf.ErrDataSize) { // Close flushes the header; no tensor data follows
		t.Fatalf("synthcache: digest of %s's header: %v", name, err)
	}
	path := filepath.Join(Dir(t), name+"-"+hex.EncodeToString(h.Sum(nil))[:12]+".gguf")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if _, err := synth.WriteFile(path, cfg); err != nil && !errors.Is(err, synth.ErrExists) {
		t.Fatal(err)
	}
	return path
}
