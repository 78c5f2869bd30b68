package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/ledger"
)

func writeLedger(t *testing.T, n int) (string, ledger.Head) {
	t.Helper()
	dir := t.TempDir()
	l, _, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range n {
		now := time.Now()
		if _, err := l.Append(ledger.Exchange{Request: []byte(fmt.Sprintf(`{"prompt":"%d"}`, i)), Answer: []byte("ok"),
			Receipt: json.RawMessage(`{"signed":false}`), Received: now, Answered: now}); err != nil {
			t.Fatal(err)
		}
	}
	return dir, l.Head()
}

// TestLedgerVerifyAndProve: `bankml ledger verify` prints the head and exits
// 0, or exits 2 with the reason for a changed line; `bankml ledger prove`
// prints a proof that checks, and exits 2 for an entry that does not exist.
func TestLedgerVerifyAndProve(t *testing.T) {
	dir, head := writeLedger(t, 6)
	code, stdout, stderr := runCLI("ledger", "verify", dir)
	var v struct {
		OK bool `json:"ok"`
		ledger.Head
		TornBytes int64 `json:"torn_bytes"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); code != 0 || err != nil || !v.OK || v.Head != head {
		t.Fatalf("verify: exit %d, %q (%v), stderr %q; want head %+v", code, stdout, err, stderr, head)
	}
	for i := range 6 {
		code, stdout, stderr = runCLI("ledger", "prove", dir, fmt.Sprint(i))
		var p ledger.Proof
		if err := json.Unmarshal([]byte(stdout), &p); code != 0 || err != nil || p.Check() != nil || p.Root != head.Root || p.Index != uint64(i) {
			t.Fatalf("prove %d: exit %d, %q, %q", i, code, stdout, stderr)
		}
	}
	if code, _, stderr = runCLI("ledger", "prove", dir, "6"); code != 2 || !strings.Contains(stderr, "no such entry") {
		t.Errorf("prove 6 of 6: exit %d, %q", code, stderr)
	}

	path := filepath.Join(dir, ledger.FileName)
	raw, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(raw, []byte(`\"prompt\":\"3\"`), []byte(`\"prompt\":\"4\"`), 1), 0o644)
	code, stdout, stderr = runCLI("ledger", "verify", dir)
	if code != 2 || !strings.Contains(stdout, `"ok": false`) || !strings.Contains(stdout, "entry 4") || !strings.Contains(stderr, "corrupt") {
		t.Errorf("verify of a changed line: exit %d, %q, %q", code, stdout, stderr)
	}
	if code, _, stderr = runCLI("ledger", "verify", filepath.Join(dir, "absent")); code != 1 {
		t.Errorf("verify of a missing folder: exit %d, %q", code, stderr)
	}
}

// TestLedgerVerifyCatchesTheLastEntry: a changed or removed last entry (which
// no later line commits to) is caught by a receipt whose response_sha256 no
// longer matches the stored answer, and by --root/--size of a head published
// earlier; the untouched ledger verifies against its own head.
func TestLedgerVerifyCatchesTheLastEntry(t *testing.T) {
	dir := t.TempDir()
	l, _, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		req, ans := []byte(fmt.Sprintf(`{"prompt":"%d"}`, i)), []byte(fmt.Sprintf("answer %d", i))
		rs, as := sha256.Sum256(req), sha256.Sum256(ans)
		now := time.Now()
		rc := json.RawMessage(fmt.Sprintf(`{"request_sha256":"%x","response_sha256":"%x","signed":false}`, rs, as))
		if _, err := l.Append(ledger.Exchange{Request: req, Answer: ans, Receipt: rc, Received: now, Answered: now}); err != nil {
			t.Fatal(err)
		}
	}
	head := l.Head()
	l.Close()
	size := fmt.Sprint(head.Size)
	if code, stdout, stderr := runCLI("ledger", "verify", dir, "--root", head.Root, "--size", size); code != 0 {
		t.Fatalf("untouched ledger against its head: exit %d, %q, %q", code, stdout, stderr)
	}
	path := filepath.Join(dir, ledger.FileName)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	for _, c := range []struct {
		name, want string
		data       []byte
		args       []string
	}{
		{"last answer changed", "response_sha256", bytes.Replace(raw, []byte(`answer 2`), []byte(`answer X`), 1), nil},
		{"last entry removed", "entries were removed", bytes.Join(lines[:2], nil), []string{"--root", head.Root, "--size", size}},
	} {
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI(append([]string{"ledger", "verify", dir}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want exit 2 naming %q", c.name, code, stderr, c.want)
		}
	}
	if code, _, stderr := runCLI("ledger", "verify", dir, "--root", head.Root); code != 1 || !strings.Contains(stderr, "go together") {
		t.Errorf("--root without --size: exit %d, %q; want the usage error (exit 1)", code, stderr)
	}
}
