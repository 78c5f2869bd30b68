package main

import (
	"bytes"
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
