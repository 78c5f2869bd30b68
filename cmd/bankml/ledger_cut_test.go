//go:build !windows

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
)

// signedHistory writes a history of n entries, each published to its POSIX log (DIR/log) signed by a new
// key, and waits for the checkpoint; it returns the folder and the key file.
func signedHistory(t *testing.T, n int) (dir, keyPath string) {
	t.Helper()
	dir = t.TempDir()
	keyPath = filepath.Join(t.TempDir(), "op.key")
	if _, err := provenance.WriteKeyFiles(keyPath, "bankml.test/cut"); err != nil {
		t.Fatal(err)
	}
	prompts := make([]string, n)
	for i := range prompts {
		prompts[i] = strings.Repeat("x", i)
	}
	publish(t, dir, keyPath, prompts, func(i int, entry, leaf uint64) {})
	return dir, keyPath
}

// publishOne opens the history in dir as serve did before it checked the log (cutting a partial last
// line), appends one entry and publishes it to DIR/log, and waits for its checkpoint: the entry must land
// at index 0 of the cut history and leaf 1 of the log.
func publishOne(t *testing.T, dir, keyPath string) {
	t.Helper()
	publish(t, dir, keyPath, []string{"after the cut"}, func(i int, entry, leaf uint64) {
		if entry != 0 || leaf != 1 {
			t.Fatalf("entry %d leaf %d, want entry 0 at leaf 1", entry, leaf)
		}
	})
}

// publish opens the history in dir (ledger.Open) and its POSIX log DIR/log signed with keyPath's key,
// appends and publishes one exchange per prompt (check sees each entry's index and leaf), and waits for
// a checkpoint covering every leaf.
func publish(t *testing.T, dir, keyPath string, prompts []string, check func(i int, entry, leaf uint64)) {
	t.Helper()
	ctx := context.Background()
	signer, err := provenance.LoadSigner(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := signer.Public().NoteVerifier()
	l, _, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	g, err := ledger.OpenPOSIXLog(filepath.Join(dir, "log"), signer.NoteSigner(), v, ledger.LogOptions{CheckpointInterval: 100 * time.Millisecond, BatchMaxAge: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	var last uint64
	for i, p := range prompts {
		now := time.Now()
		a, err := l.Append(ledger.Exchange{Request: []byte(`{"prompt":"` + p + `"}`), Answer: []byte("ok"), Received: now, Answered: now})
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := l.Publish(ctx, g, a)
		if err != nil {
			t.Fatal(err)
		}
		check(i, uint64(a.Index), uint64(leaf))
		last = uint64(leaf)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if cp, err := g.Checkpoint(ctx); err == nil && cp.Size == last+1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of %d leaves", last+1)
		}
	}
}

// copyCut copies the history folder src as `cp -r` does, then removes the last cut bytes of
// history.jsonl (truncate -s -cut) and, unless keepLeaves, history.leaves.
func copyCut(t *testing.T, src string, cut int64, keepLeaves bool) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if !keepLeaves {
		if err := os.Remove(filepath.Join(dst, ledger.LeavesName)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dst, ledger.FileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()-cut); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestLedgerVerifyFailsOnAHistoryBehindItsLog: ledger verify --key passes a history and its log, and
// exits 2 naming both sizes for a copy whose last line was cut short after the log committed it (with
// and without history.leaves) and for one whose next entry 0 was then published as leaf 1 (what serve
// did with such a copy before it refused it); --shared-log allows leaves of other histories but not a history.leaves
// record of an entry the history lacks.
func TestLedgerVerifyFailsOnAHistoryBehindItsLog(t *testing.T) {
	src, keyPath := signedHistory(t, 1)
	pub := keyPath + ".pub"
	withLeaves := copyCut(t, src, 10, true)
	noLeaves := copyCut(t, src, 10, false)
	// What serve did before it refused such a history: cut the line, and publish the next answer as
	// entry 0 but leaf 1.
	diverged := copyCut(t, src, 10, false)
	publishOne(t, diverged, keyPath)
	pass, total := 0, 0
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"entry 0 published as leaf 1 after the cut", []string{diverged, "--key", pub}, 2, "the history has 1 entries, the log's checkpoint 2 leaves"},
		{"the history and its log", []string{src, "--key", pub, "--all-published"}, 0, `"published": 1`},
		{"the last line cut short, history.leaves kept", []string{withLeaves, "--key", pub}, 2, "the history has 0 entries and a partial last line of"},
		{"the last line cut short, history.leaves lost", []string{noLeaves, "--key", pub}, 2, "the history has 0 entries and a partial last line of"},
		{"the log's size named", []string{noLeaves, "--key", pub}, 2, "the log's checkpoint 1 leaves"},
		{"--shared-log allows leaves of other histories", []string{diverged, "--key", pub, "--shared-log"}, 0, `"published": 1`},
		{"--shared-log with history.leaves kept", []string{withLeaves, "--key", pub, "--shared-log"}, 2, "records entry 0 as leaf 0"},
	} {
		total++
		code, stdout, stderr := runCLI(append([]string{"ledger", "verify"}, c.args...)...)
		if code != c.code || !strings.Contains(stdout, c.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", c.name, code, c.code, c.want, stdout, stderr)
			continue
		}
		pass++
	}
	t.Logf("ledger verify of histories behind their log: %d of %d as expected", pass, total)
}

// TestServeRefusesAHistoryBehindItsLog: bankml serve --history --key on a copy whose last line was cut
// short after the log committed it refuses to start (exit 1, naming the history's and the log's sizes and
// what to do) and leaves history.jsonl as it was, with or without history.leaves.
func TestServeRefusesAHistoryBehindItsLog(t *testing.T) {
	model := storiesPath(t)
	src, keyPath := signedHistory(t, 1)
	for _, c := range []struct {
		name       string
		keepLeaves bool
		want       []string
	}{
		{"history.leaves kept", true, []string{"has 0 entries and a partial last line of", "its transparency log has 1 leaves", "records entry 0 as leaf 0", "restore history.jsonl"}},
		{"history.leaves lost", false, []string{"has 0 entries and a partial last line of", "its transparency log has 1 leaves", "restore history.jsonl"}},
	} {
		dir := copyCut(t, src, 10, c.keepLeaves)
		before, err := os.ReadFile(filepath.Join(dir, ledger.FileName))
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			code   int
			stderr string
		}
		done := make(chan result, 1)
		go func() {
			code, _, stderr := runCLI("serve", model, "--unpinned", "--port", "0", "--history", dir, "--key", keyPath)
			done <- result{code, stderr}
		}()
		var code int
		var stderr string
		select {
		case r := <-done:
			code, stderr = r.code, r.stderr
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: serve started on a history behind its log (still running after 60 s)", c.name)
		}
		for _, w := range c.want {
			if code != 1 || !strings.Contains(stderr, w) {
				t.Errorf("%s: exit %d, want 1 with %q:\n%s", c.name, code, w, stderr)
			}
		}
		t.Logf("%s: %s", c.name, strings.TrimSpace(stderr[strings.LastIndex(strings.TrimSpace(stderr), "\n")+1:]))
		if strings.Contains(stderr, "cut off") {
			t.Errorf("%s: serve says it cut a line:\n%s", c.name, stderr)
		}
		if after, err := os.ReadFile(filepath.Join(dir, ledger.FileName)); err != nil || string(after) != string(before) {
			t.Errorf("%s: history.jsonl changed (%d bytes, was %d; %v)", c.name, len(after), len(before), err)
		}
	}
}
