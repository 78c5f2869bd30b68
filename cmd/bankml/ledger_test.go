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
	if code, _, stderr := runCLI("ledger", "verify", dir, "--root", head.Root); code != 1 || !strings.Contains(stderr, "--root needs --size") {
		t.Errorf("--root without --size: exit %d, %q; want the usage error (exit 1)", code, stderr)
	}
}

// TestAHashOrSizeFlagThatIsNoHashIsAUsageErrorNotTampering: a --root that is not 64 hex digits was compared with
// the ledger's root and reported as a changed ledger (exit 2, "an entry was changed"); it is a bad flag value,
// exit 1 naming --root, as docs/cli.md's table says, and so is every other hash or size flag of the ledger and
// receipt commands that is no value (a --size that is no count, a --timeout of no time). A well-formed head
// that differs is still tampering (exit 2).
func TestAHashOrSizeFlagThatIsNoHashIsAUsageErrorNotTampering(t *testing.T) {
	dir, head := writeLedger(t, 3)
	other := strings.Repeat("0", 64)
	receipt := filepath.Join(t.TempDir(), "receipt.json")
	if err := os.WriteFile(receipt, []byte(`{"signed":false,"request_sha256":"","response_sha256":""}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string // standard error's last line, whole
	}{
		{"a root of two hex digits", []string{"ledger", "verify", dir, "--root", "00", "--size", "4"}, 1,
			`bankml: ledger verify: --root "00": not a SHA-256 hash: want 64 hex digits`},
		{"a root that is no hex", []string{"ledger", "verify", dir, "--root", strings.Repeat("z", 64), "--size", "1"}, 1,
			`bankml: ledger verify: --root "` + strings.Repeat("z", 64) + `": not a SHA-256 hash: want 64 hex digits`},
		{"a root one hex digit short", []string{"ledger", "verify", dir, "--root", head.Root[:63], "--size", "3"}, 1,
			`bankml: ledger verify: --root "` + head.Root[:63] + `": not a SHA-256 hash: want 64 hex digits`},
		{"a size that is no count", []string{"ledger", "verify", dir, "--root", head.Root, "--size", "-1"}, 1,
			`bankml: ledger verify: --size: value -1 out of range [1, inf) (the entry count of the head given by --root: a published head has at least one entry)`},
		{"a timeout of no time", []string{"receipt", "verify", receipt, "--timeout", "0"}, 1,
			`bankml: receipt verify: --timeout: value 0 out of range [1, 9223372036] (seconds to wait for the log)`},
		{"a negative timeout", []string{"receipt", "verify", receipt, "--timeout", "-5"}, 1,
			`bankml: receipt verify: --timeout: value -5 out of range [1, 9223372036] (seconds to wait for the log)`},
		{"the root in upper case is the same root", []string{"ledger", "verify", dir, "--root", strings.ToUpper(head.Root), "--size", "3"}, 0, ""},
		{"another well-formed root is tampering", []string{"ledger", "verify", dir, "--root", other, "--size", "3"}, 2,
			"bankml: ledger verify: " + dir + ": ledger: corrupt: the first 3 entries have root " + head.Root + ", not the head given (" + other + "): an entry was changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(c.args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if got := lines[len(lines)-1]; code != c.code || got != c.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit %d and\n%s", code, got, c.code, c.want)
			}
		})
	}
}
