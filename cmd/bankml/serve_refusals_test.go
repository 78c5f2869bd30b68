package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusalsCreateNothingOnDisk: every refusal of serve's flags and key comes before anything is
// created on disk: the --history folder does not exist after a refused --key, --witness-policy, --history-db,
// --reranking with another --pooling, or a pooling the model cannot pool with.
func TestServeRefusalsCreateNothingOnDisk(t *testing.T) {
	model := storiesPath(t) // no ranking head
	dir := t.TempDir()
	key := filepath.Join(dir, "op.key")
	if code, _, stderr := runCLIInput("", "key", "new", key); code != 0 {
		t.Fatalf("key new: exit %d: %s", code, stderr)
	}
	open := filepath.Join(dir, "open.key") // the same key, readable by everyone
	b, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(open, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil { // past the umask
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{name: "a key file others can read is refused before the history folder is made",
			args: []string{"--key", open}, code: 1, msg: "--key: key: " + open + " has mode 0644"},
		{name: "a missing key file is refused before the history folder is made",
			args: []string{"--key", filepath.Join(dir, "nosuch.key")}, code: 1, msg: "--key: key: stat"},
		{name: "a missing witness policy is refused before the history folder is made",
			args: []string{"--key", key, "--witness-policy", filepath.Join(dir, "nosuch.policy")}, code: 1, msg: "--witness-policy: open"},
		{name: "a history database without a key is refused before the history folder is made",
			args: []string{"--history-db", "u@tcp(127.0.0.1:1)/db"}, code: 1, msg: "--history-db needs --key"},
		{name: "reranking with another pooling is a usage error before the history folder is made",
			args: []string{"--reranking", "--pooling", "mean"}, code: 1, msg: "--reranking needs pooling rank, not --pooling mean"},
		{name: "pooling rank on a model without a ranking head is refused before the history folder is made",
			args: []string{"--pooling", "rank"}, code: 2, msg: "--pooling rank: model: pooling rank needs a ranking head"},
		{name: "reranking on a model without a ranking head is refused before the history folder is made",
			args: []string{"--reranking"}, code: 2, msg: "--reranking: model: pooling rank needs a ranking head"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			history := filepath.Join(dir, "history", string(rune('a'+i)))
			args := append([]string{"serve", model, "--unpinned", "--port", "0", "--history", history}, tc.args...)
			code, _, stderr := runCLIInput("", args...)
			if code != tc.code || !strings.Contains(stderr, tc.msg) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.msg)
			}
			if _, err := os.Stat(history); !os.IsNotExist(err) {
				t.Fatalf("the history folder %s exists after the refusal (%v)", history, err)
			}
		})
	}
}
