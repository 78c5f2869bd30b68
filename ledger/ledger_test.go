package ledger

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

func hd(t *testing.T, s string) Hash {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		t.Fatalf("bad hex %q", s)
	}
	var h Hash
	copy(h[:], b)
	return h
}

// The RFC 6962 reference leaves and roots of the Certificate Transparency
// test suite, as published by transparency-dev/merkle in
// testonly/constants.go (commit 582a6ad190b6848f1d26f8bf08ddef29955d9db1):
// LeafInputs() and RootHashes(), the roots indexed by tree size from 0.
var (
	ctLeaves = []string{"", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"}
	ctRoots  = []string{
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
		"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
		"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
		"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
		"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
		"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
		"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
		"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
	}
)

func ctLeafHashes(t *testing.T) []Hash {
	t.Helper()
	var out []Hash
	for _, s := range ctLeaves {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, LeafHash(b))
	}
	return out
}

// TestRootsMatchRFC6962Vectors: the tree head of every prefix of the
// reference leaves, from the recursive definition and from the incremental
// frontier, is the published root.
func TestRootsMatchRFC6962Vectors(t *testing.T) {
	leaves := ctLeafHashes(t)
	var f frontier
	for n := 0; n <= len(leaves); n++ {
		want := hd(t, ctRoots[n])
		if got := Root(leaves[:n]); got != want {
			t.Errorf("size %d: root %x, published %x", n, got, want)
		}
		if got := f.root(); got != want {
			t.Errorf("size %d: incremental root %x, published %x", n, got, want)
		}
		if n < len(leaves) {
			f.push(leaves[n])
		}
	}
}

// The published inclusion proofs (transparency-dev/merkle proof/verify_test.go,
// commit 02194e9afb6c1d95b5381350007963aa70fff472, inclusionProofs): leaf
// numbers there are 1-based.
var ctProofs = []struct {
	leaf, size uint64
	path       []string
}{
	{1, 8, []string{"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
		"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
		"6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
	{6, 8, []string{"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
		"ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
		"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
	{3, 3, []string{"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"}},
	{2, 5, []string{"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
		"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
		"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}},
}

// TestInclusionProofsMatchVectors: InclusionPath gives the published paths,
// VerifyInclusion accepts them, and rejects every corruption of them: another
// index or size, another leaf, a flipped bit, a missing, extra or inserted
// hash, another root.
func TestInclusionProofsMatchVectors(t *testing.T) {
	leaves := ctLeafHashes(t)
	for _, v := range ctProofs {
		idx := v.leaf - 1
		var want []Hash
		for _, s := range v.path {
			want = append(want, hd(t, s))
		}
		got, err := InclusionPath(leaves[:v.size], idx)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("leaf %d of %d: path %x (%v), published %x", idx, v.size, got, err, want)
		}
		root := hd(t, ctRoots[v.size])
		if err := VerifyInclusion(leaves[idx], idx, v.size, want, root); err != nil {
			t.Errorf("leaf %d of %d: published proof rejected: %v", idx, v.size, err)
		}
		flip := func(i int) []Hash {
			p := append([]Hash(nil), want...)
			p[i][0] ^= 8
			return p
		}
		type probe struct {
			name        string
			leaf        Hash
			index, size uint64
			path        []Hash
			root        Hash
		}
		bad := []probe{
			{"index+1", leaves[idx], idx + 1, v.size, want, root},
			{"index^2", leaves[idx], idx ^ 2, v.size, want, root},
			{"size*2", leaves[idx], idx, v.size * 2, want, root},
			{"size/2", leaves[idx], idx, v.size / 2, want, root},
			{"other leaf", leaves[(idx+1)%v.size], idx, v.size, want, root},
			{"empty root", leaves[idx], idx, v.size, want, EmptyRoot()},
			{"trailing hash", leaves[idx], idx, v.size, append(append([]Hash(nil), want...), root), root},
			{"preceding hash", leaves[idx], idx, v.size, append([]Hash{root}, want...), root},
			{"flipped bit", leaves[idx], idx, v.size, flip(0), root},
			{"flipped last", leaves[idx], idx, v.size, flip(len(want) - 1), root},
			{"removed hash", leaves[idx], idx, v.size, want[:len(want)-1], root},
		}
		if idx > 0 {
			bad = append(bad, probe{"index-1", leaves[idx], idx - 1, v.size, want, root})
		}
		for _, b := range bad {
			if err := VerifyInclusion(b.leaf, b.index, b.size, b.path, b.root); !errors.Is(err, ErrProof) {
				t.Errorf("leaf %d of %d, %s: %v, want ErrProof", idx, v.size, b.name, err)
			}
		}
	}
}

// TestEveryProofVerifiesAndNoOtherLeaf: in every tree of 1 to 70 leaves,
// every leaf's path verifies against the root, and against no other leaf.
func TestEveryProofVerifiesAndNoOtherLeaf(t *testing.T) {
	var leaves []Hash
	for i := range 70 {
		leaves = append(leaves, LeafHash([]byte{byte(i), byte(i * 7)}))
	}
	for n := 1; n <= len(leaves); n++ {
		root := Root(leaves[:n])
		for i := range n {
			p, err := InclusionPath(leaves[:n], uint64(i))
			if err != nil {
				t.Fatal(err)
			}
			if err := VerifyInclusion(leaves[i], uint64(i), uint64(n), p, root); err != nil {
				t.Fatalf("size %d leaf %d: %v", n, i, err)
			}
			j := (i + 1) % n
			if j != i && VerifyInclusion(leaves[j], uint64(i), uint64(n), p, root) == nil {
				t.Fatalf("size %d: leaf %d's proof verifies leaf %d", n, i, j)
			}
		}
	}
	if _, err := InclusionPath(leaves[:3], 3); err == nil {
		t.Error("a path outside the tree")
	}
}

// TestCIDOfPublishedInputs: the CIDv1 (raw, sha2-256, base32) of inputs whose
// CIDs are published: "Hello world" in the ipfs-cid package's documentation
// (PyPI ipfs-cid 0.1.1, encode_cid_v1(b"Hello world")), "hello" in excid's
// (hexdocs.pm/excid 1.0.2, Cid.cid("hello") with base32, which it states is
// the CID IPFS returns for the same raw data).
func TestCIDOfPublishedInputs(t *testing.T) {
	for in, want := range map[string]string{
		"Hello world": "bafkreide5semuafsnds3ugrvm6fbwuyw2ijpj43gwjdxemstjkfozi37hq",
		"hello":       "bafkreibm6jg3ux5qumhcn2b3flc3tyu6dmlb4xa7u5bf44yegnrjhc4yeq",
	} {
		if got := CID([]byte(in)); got != want {
			t.Errorf("CID(%q) = %s, published %s", in, got, want)
		}
	}
}

func exchange(i int) Exchange {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6000*i, time.UTC)
	ex := Exchange{
		Request:  []byte(fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"question %d <&>\n"}]}`, i)),
		Answer:   []byte(fmt.Sprintf("answer %d: \"quoted\"\nline 2 ✓", i)),
		Receipt:  json.RawMessage(fmt.Sprintf(`{"bankml_receipt":{"prompt_tokens":%d,  "signed":false}}`, i)),
		Received: t0, Answered: t0.Add(time.Duration(i) * time.Millisecond),
	}
	if i%5 == 3 {
		ex.Answer = append(ex.Answer, 0xff, 0xfe, 0) // not UTF-8: kept as base64
	}
	if i%7 == 4 {
		ex.Receipt = nil
	}
	return ex
}

func openT(t *testing.T, dir string) (*Ledger, Opened) {
	t.Helper()
	l, op, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, op
}

// TestAppendReopenAndVerify: appended exchanges read back byte for byte after
// reopening; the head is the RFC 6962 root of the lines and the CID that of
// the file, whether computed incrementally, on Open or by Verify; proofs of
// every entry check.
func TestAppendReopenAndVerify(t *testing.T) {
	dir := t.TempDir()
	l, op := openT(t, dir)
	if op.Size != 0 || op.Root != ctRoots[0] || op.TrimmedBytes != 0 {
		t.Fatalf("new ledger: %+v", op)
	}
	var last Appended
	for i := range 23 {
		a, err := l.Append(exchange(i))
		if err != nil {
			t.Fatal(err)
		}
		if a.Index != uint64(i) || a.Head.Size != uint64(i+1) {
			t.Fatalf("append %d: %+v", i, a)
		}
		last = a
	}
	if l.Head() != last.Head {
		t.Errorf("Head %+v, last append %+v", l.Head(), last.Head)
	}
	for i := uint64(0); i < 23; i += 5 {
		p, err := l.Prove(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Check(); err != nil {
			t.Errorf("proof of %d: %v", i, err)
		}
	}
	if _, err := l.Prove(23); err == nil {
		t.Error("a proof past the end")
	}
	l.Close()

	raw, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	var leaves []Hash
	for _, ln := range bytes.SplitAfter(raw, []byte("\n")) {
		if len(ln) > 0 {
			leaves = append(leaves, LeafHash(ln[:len(ln)-1]))
		}
	}
	r := Root(leaves)
	want := Head{Size: 23, Root: hex.EncodeToString(r[:]), Bytes: int64(len(raw)), CID: CID(raw)}
	if last.Head != want {
		t.Errorf("head %+v, recomputed %+v", last.Head, want)
	}
	rep, err := Verify(dir)
	if err != nil || rep.Head != want || rep.TornBytes != 0 {
		t.Errorf("Verify: %+v, %v", rep, err)
	}
	_, op = openT(t, dir)
	if op.Head != want {
		t.Errorf("reopened: %+v", op)
	}
	i := 0
	err = Entries(dir, func(e Entry) error {
		ex := exchange(i)
		if e.Index != uint64(i) || !bytes.Equal(e.Request, ex.Request) || !bytes.Equal(e.Answer, ex.Answer) ||
			!e.Received.Equal(ex.Received) || !e.Answered.Equal(ex.Answered) || (ex.Receipt == nil) != (e.Receipt == nil) {
			return fmt.Errorf("entry %d reads back as %+v", i, e)
		}
		if ex.Receipt != nil && !json.Valid(e.Receipt) {
			return fmt.Errorf("entry %d: receipt %s", i, e.Receipt)
		}
		i++
		return nil
	})
	if err != nil || i != 23 {
		t.Errorf("Entries: %d, %v", i, err)
	}
}

// TestChangedBytesFailProofsAndVerification: a changed byte in an entry fails
// its proof and Verify; a proof shown with another entry fails.
func TestChangedBytesFailProofsAndVerification(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir)
	for i := range 9 {
		if _, err := l.Append(exchange(i)); err != nil {
			t.Fatal(err)
		}
	}
	p4, err := l.Prove(4)
	if err != nil {
		t.Fatal(err)
	}
	p6, err := l.Prove(6)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	for i := range len(p4.Entry) {
		q := p4
		b := []byte(p4.Entry)
		b[i] ^= 1
		q.Entry = string(b)
		if err := q.Check(); !errors.Is(err, ErrProof) {
			t.Fatalf("byte %d changed: %v", i, err)
		}
	}
	q := p4
	q.Entry, q.LeafHash = p6.Entry, p6.LeafHash // entry 6 with entry 4's path
	if err := q.Check(); !errors.Is(err, ErrProof) {
		t.Errorf("another leaf's entry: %v", err)
	}
	if err := p4.Check(); err != nil {
		t.Errorf("the untouched proof: %v", err)
	}

	path := filepath.Join(dir, FileName)
	raw, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(raw, []byte("\n"))
	// Change a character inside entry 2's answer text ("answer 2" -> "answer 3").
	k := bytes.Index(lines[2], []byte("answer 2"))
	lines[2][k+7] = '3'
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(dir); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Verify of a changed line: %v", err)
	}
	if _, _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open of a changed line: %v", err)
	}
	// Remove entry 5.
	lines[2][k+7] = '2'
	if err := os.WriteFile(path, bytes.Join(append(lines[:5:5], lines[6:]...), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(dir); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Verify with a line removed: %v", err)
	}
}

// TestTornLastLineIsCutOff: bytes after the last newline (a write cut short)
// are reported by Verify, cut off by Open with their size, and the ledger
// then verifies and takes new entries.
func TestTornLastLineIsCutOff(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir)
	for i := range 5 {
		if _, err := l.Append(exchange(i)); err != nil {
			t.Fatal(err)
		}
	}
	head := l.Head()
	l.Close()
	line, err := encodeLine(5, hd(t, head.Root), time.Now(), exchange(5))
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{1, len(line) / 2, len(line) - 1} { // never the newline
		f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(line[:cut])
		f.Close()
		rep, err := Verify(dir)
		if err != nil || rep.Head != head || rep.TornBytes != int64(cut) {
			t.Fatalf("cut %d: Verify %+v, %v", cut, rep, err)
		}
		l, op, err := Open(dir)
		if err != nil || op.Head != head || op.TrimmedBytes != int64(cut) {
			t.Fatalf("cut %d: Open %+v, %v", cut, op, err)
		}
		l.Close()
		if rep, err := Verify(dir); err != nil || rep.TornBytes != 0 {
			t.Fatalf("cut %d: after Open: %+v, %v", cut, rep, err)
		}
	}
	l, _ = openT(t, dir)
	if a, err := l.Append(exchange(5)); err != nil || a.Index != 5 {
		t.Fatalf("append after recovery: %+v, %v", a, err)
	}
}

// TestGarbageLineIsCorruptionNotTrimmed: a committed line that is not an
// entry stops Open with ErrCorrupt and is left in place.
func TestGarbageLineIsCorruptionNotTrimmed(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir)
	for i := range 3 {
		l.Append(exchange(i))
	}
	l.Close()
	path := filepath.Join(dir, FileName)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("not json\n")
	f.Close()
	before, _ := os.ReadFile(path)
	if _, _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("Open changed a corrupt ledger")
	}
}

// TestConcurrentAppendsAreSerialised: appends from many goroutines get
// distinct consecutive indices and the ledger verifies.
func TestConcurrentAppendsAreSerialised(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir)
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[uint64]bool{}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				a, err := l.Append(exchange(g*100 + i))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[a.Index] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := range uint64(200) {
		if !seen[i] {
			t.Fatalf("index %d never returned", i)
		}
	}
	if rep, err := Verify(dir); err != nil || rep.Size != 200 {
		t.Fatalf("Verify: %+v, %v", rep, err)
	}
}

// Subprocess modes of this test binary (TestMain-free: the helpers run as
// tests selected by -test.run, guarded by an environment variable).
const (
	envHelper = "BANKML_LEDGER_HELPER" // "append" or "hold"
	envDir    = "BANKML_LEDGER_DIR"
)

// TestHelperProcess is not a test: it is the child of the crash and lock
// tests. "append" appends large exchanges until killed; "hold" opens the
// ledger, prints "held" and waits for stdin to close.
func TestHelperProcess(t *testing.T) {
	mode, dir := os.Getenv(envHelper), os.Getenv(envDir)
	if mode == "" {
		t.Skip("helper for other tests")
	}
	l, _, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	switch mode {
	case "append":
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB answers: kills land mid-write
		for i := 0; ; i++ {
			ex := exchange(i)
			ex.Answer = big
			if _, err := l.Append(ex); err != nil {
				fmt.Fprintln(os.Stderr, "helper:", err)
				os.Exit(4)
			}
		}
	case "hold":
		fmt.Println("held")
		var b [1]byte
		os.Stdin.Read(b[:])
	}
	os.Exit(0)
}

func helper(t *testing.T, mode, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelper+"="+mode, envDir+"="+dir)
	return cmd
}

// TestKillDashNineMidAppendLeavesAVerifiableLedger: a process appending 1 MiB
// entries is killed with SIGKILL at random points; every time, the ledger
// opens (cutting off at most the line being written) and verifies, and
// every entry that was committed is there.
func TestKillDashNineMidAppendLeavesAVerifiableLedger(t *testing.T) {
	dir := t.TempDir()
	torn := 0
	prev, size := uint64(0), int64(0)
	for round := range 6 {
		cmd := helper(t, "append", dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Once it has committed something new, kill it at a random moment:
		// mid-write, mid-fsync or between entries.
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if st, err := os.Stat(filepath.Join(dir, FileName)); err == nil && st.Size() > size {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(40_000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if stderr.Len() > 0 {
			t.Fatalf("helper: %s", stderr.String())
		}
		rep, err := Verify(dir)
		if err != nil {
			t.Fatalf("round %d: Verify after kill -9: %v", round, err)
		}
		if rep.TornBytes > 0 {
			torn++
		}
		l, op, err := Open(dir)
		if err != nil {
			t.Fatalf("round %d: Open after kill -9: %v", round, err)
		}
		if op.Size < prev || op.TrimmedBytes != rep.TornBytes {
			t.Fatalf("round %d: %+v after %d entries (Verify %+v)", round, op, prev, rep)
		}
		prev, size = op.Size, op.Bytes
		l.Close()
		if rep, err := Verify(dir); err != nil || rep.TornBytes != 0 {
			t.Fatalf("round %d: after Open: %+v, %v", round, rep, err)
		}
	}
	t.Logf("6 kills: %d entries survive, %d kills landed mid-line (cut off on Open)", prev, torn)
}

// TestSecondAppenderIsLockedOut: while one process holds the ledger, Open
// fails with ErrLocked in another process and in this one; once it is closed
// (or its process gone), Open succeeds.
func TestSecondAppenderIsLockedOut(t *testing.T) {
	dir := t.TempDir()
	cmd := helper(t, "hold", dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := out.Read(buf); err != nil || string(buf) != "held" {
		t.Fatalf("helper said %q, %v", buf, err)
	}
	if _, _, err := Open(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("Open while another process holds it: %v", err)
	}
	stdin.Close()
	cmd.Wait()
	l, _ := openT(t, dir)
	if _, _, err := Open(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("second Open in this process: %v", err)
	}
	l.Close()
	l2, _ := openT(t, dir)
	if _, err := l2.Append(exchange(0)); err != nil {
		t.Error(err)
	}
}

func TestExchangeNeedsValidReceipt(t *testing.T) {
	l, _ := openT(t, t.TempDir())
	ex := exchange(0)
	ex.Receipt = json.RawMessage(`{"broken":`)
	if _, err := l.Append(ex); err == nil {
		t.Error("an invalid receipt was accepted")
	}
	if h := l.Head(); h.Size != 0 {
		t.Errorf("head after a refused append: %+v", h)
	}
}
