//go:build !windows

package ledger

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"
)

// testKey is a fresh Ed25519 signed-note key pair named origin.
func testKey(t testing.TB, origin string) (note.Signer, note.Verifier) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(nil, origin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// fastLog opens a POSIX log in dir with short intervals for tests.
func fastLog(t testing.TB, dir string, s note.Signer, v note.Verifier) *Log {
	t.Helper()
	g, err := OpenPOSIXLog(dir, s, v, LogOptions{CheckpointInterval: 100 * time.Millisecond, BatchMaxAge: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// waitCheckpoint waits until the log has published a checkpoint of at least size entries.
func waitCheckpoint(t testing.TB, g *Log, size uint64) Checkpoint {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		cp, err := g.Checkpoint(context.Background())
		if err == nil && cp.Size >= size {
			return cp
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of %d entries after 20 s (last: %+v, %v)", size, cp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testExchange(i int) Exchange {
	now := time.Date(2026, 1, 2, 3, 4, 5, i, time.UTC)
	return Exchange{Request: []byte(fmt.Sprintf(`{"prompt":"question %d"}`, i)), Answer: []byte(fmt.Sprintf("answer %d", i)),
		Receipt: []byte(`{"signed":false}`), Received: now, Answered: now.Add(time.Second)}
}

// TestTesseraClientVerifiesALogWrittenByBankml writes a history through Ledger.Publish into a POSIX log
// and checks it with tessera's own client (client.FileFetcher over the folder, FetchCheckpoint,
// ProofBuilder, LogStateTracker) and transparency-dev/merkle's verifiers: the checkpoint's signature,
// every entry's inclusion, and the consistency of an early checkpoint with the last one.
func TestTesseraClientVerifiesALogWrittenByBankml(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, v := testKey(t, "bankml.test/log")
	logDir := filepath.Join(dir, "log")
	g := fastLog(t, logDir, s, v)
	defer g.Close(ctx)

	publish := func(from, to int) {
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				a, err := l.Append(testExchange(i))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := l.Publish(ctx, g, a); err != nil {
					t.Error(err)
				}
			}(i)
		}
		wg.Wait()
	}
	publish(0, 7)
	early := waitCheckpoint(t, g, 7)
	publish(7, 300) // past one entry bundle (256) and one hash tile
	waitCheckpoint(t, g, 300)

	f := client.FileFetcher{Root: logDir}
	cp, cpRaw, _, err := client.FetchCheckpoint(ctx, f.ReadCheckpoint, v, "bankml.test/log")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := client.NewProofBuilder(ctx, cp.Size, f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[Hash]uint64{}
	verified := 0
	err = Entries(dir, func(e Entry) error {
		li, ok := l.LeafIndex(e.Index)
		if !ok {
			return fmt.Errorf("entry %d has no leaf index", e.Index)
		}
		if prev, dup := seen[e.Commitment]; dup {
			return fmt.Errorf("entries %d and %d have one commitment", prev, e.Index)
		}
		seen[e.Commitment] = li
		bundle, err := client.GetEntryBundle(ctx, f.ReadEntryBundle, li/256, cp.Size)
		if err != nil {
			return err
		}
		if got := bundle.Entries[li%256]; string(got) != string(e.Commitment[:]) || e.Commitment != sha256.Sum256(e.Line) {
			return fmt.Errorf("leaf %d holds %x, entry %d's commitment is %x", li, got, e.Index, e.Commitment)
		}
		p, err := pb.InclusionProof(ctx, li)
		if err != nil {
			return err
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, li, cp.Size, rfc6962.DefaultHasher.HashLeaf(e.Commitment[:]), p, cp.Hash); err != nil {
			return fmt.Errorf("entry %d (leaf %d): %v", e.Index, li, err)
		}
		verified++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if verified != 300 || cp.Size != 300 {
		t.Fatalf("%d inclusion proofs verified, log size %d; want 300 of 300", verified, cp.Size)
	}
	cons, err := pb.ConsistencyProof(ctx, early.Size, cp.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, early.Size, cp.Size, cons, early.Root[:], cp.Hash); err != nil {
		t.Errorf("consistency of the checkpoint of %d with that of %d: %v", early.Size, cp.Size, err)
	}
	// LogStateTracker: starting from the early checkpoint, an update proves consistency itself.
	lst, err := client.NewLogStateTracker(ctx, f.ReadTile, early.Raw, v, "bankml.test/log", client.UnilateralConsensus(f.ReadCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, newRaw, err := lst.Update(ctx); err != nil || string(newRaw) != string(cpRaw) {
		t.Errorf("LogStateTracker.Update from %d: %v", early.Size, err)
	}
	// bankml's own proofs agree with tessera's.
	mine, err := g.InclusionProof(ctx, 299, cp.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyLeafInclusion(mustLeaf(t, g, 299, cp.Size), 299, cp.Size, mine, Hash(cp.Hash)); err != nil {
		t.Error(err)
	}
	t.Logf("tessera client: %d of %d inclusion proofs, consistency %d→%d verified", verified, cp.Size, early.Size, cp.Size)
}

func mustLeaf(t testing.TB, g *Log, i, size uint64) []byte {
	t.Helper()
	d, err := g.Leaf(context.Background(), i, size)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestReconcileMigratesALedgerWithoutLosingOrDoublingAnEntry: a ledger kept before there was a log gets
// every entry added once, in order; a lost history.leaves is rebuilt from the log without adding any
// entry again.
func TestReconcileMigratesALedgerWithoutLosingOrDoublingAnEntry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if _, err := l.Append(testExchange(i)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	s, v := testKey(t, "bankml.test/log")
	g := fastLog(t, filepath.Join(dir, "log"), s, v)
	defer g.Close(ctx)
	if l.Unpublished() != 12 {
		t.Fatalf("Unpublished %d before the migration, want 12", l.Unpublished())
	}
	rec, err := l.Reconcile(ctx, g)
	if err != nil || rec.Added != 12 || rec.Found != 0 {
		t.Fatalf("first Reconcile: %+v %v, want 12 added", rec, err)
	}
	if rec, err := l.Reconcile(ctx, g); err != nil || rec != (Reconciled{}) {
		t.Fatalf("second Reconcile: %+v %v, want nothing to do", rec, err)
	}
	a, err := l.Append(testExchange(12))
	if err != nil {
		t.Fatal(err)
	}
	if i, err := l.Publish(ctx, g, a); err != nil || i != 12 {
		t.Fatalf("Publish after the migration: leaf %d %v, want 12", i, err)
	}
	l.Close()
	if err := os.Remove(filepath.Join(dir, LeavesName)); err != nil {
		t.Fatal(err)
	}
	l, _, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rec, err = l.Reconcile(ctx, g)
	if err != nil || rec.Found != 13 || rec.Added != 0 {
		t.Fatalf("Reconcile after history.leaves was lost: %+v %v, want 13 found, none added", rec, err)
	}
	cp := waitCheckpoint(t, g, 13)
	if cp.Size != 13 {
		t.Fatalf("log size %d, want 13 (no entry twice)", cp.Size)
	}
	after, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if string(after[:len(before)]) != string(before) {
		t.Error("the migration changed the history's bytes")
	}
	for e := range uint64(13) {
		li, ok := l.LeafIndex(e)
		if !ok || li != e {
			t.Errorf("entry %d: leaf %d %v, want %d (migrated in order)", e, li, ok, e)
		}
	}
}

// cutHistory copies the history folder src (history.jsonl, history.leaves when keepLeaves, and the POSIX
// log) to a new folder, with the last cut bytes of history.jsonl removed, as `cp -r; truncate -s -cut` does.
func cutHistory(t *testing.T, src string, cut int64, keepLeaves bool) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dst, LockName))
	if !keepLeaves {
		if err := os.Remove(filepath.Join(dst, LeavesName)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dst, FileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()-cut); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestAHistoryBehindItsLogIsRefusedNeverCut: a history whose last committed line was cut short after the
// log committed it is refused (ErrBehindLog, naming both sizes) by Open when history.leaves records the
// entry, else by Reconcile from the log's size, and its bytes stay as they were; a history whose last
// line was replaced by another is refused as the log holding a leaf that is no entry of it; a partial
// line the log did not commit (a torn write) is cut by Reconcile only, and the next entry is then both
// entry 2 and leaf 2.
func TestAHistoryBehindItsLogIsRefusedNeverCut(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	l, _, err := Open(src)
	if err != nil {
		t.Fatal(err)
	}
	s, v := testKey(t, "bankml.test/log")
	g := fastLog(t, filepath.Join(src, "log"), s, v)
	for i := range 2 {
		a, err := l.Append(testExchange(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Publish(ctx, g, a); err != nil {
			t.Fatal(err)
		}
	}
	waitCheckpoint(t, g, 2)
	l.Close()
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// reopen opens dir with a kept partial line and its log, and reconciles them.
	reopen := func(t *testing.T, dir string) (*Ledger, Opened, Reconciled, error) {
		l, op, err := OpenWith(dir, OpenOptions{KeepPartial: true})
		if err != nil {
			return nil, op, Reconciled{}, err
		}
		t.Cleanup(func() { l.Close() })
		g := fastLog(t, filepath.Join(dir, "log"), s, v)
		t.Cleanup(func() { g.Close(ctx) })
		rec, err := l.Reconcile(ctx, g)
		return l, op, rec, err
	}
	unchanged := func(t *testing.T, dir string, want []byte) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(dir, FileName))
		if err != nil || string(got) != string(want) {
			t.Errorf("history.jsonl changed: %d bytes, want %d (%v)", len(got), len(want), err)
		}
	}
	pass, total := 0, 0
	check := func(name string, ok bool, format string, args ...any) {
		t.Helper()
		total++
		if !ok {
			t.Errorf(name+": "+format, args...)
			return
		}
		pass++
	}

	// Cut 10 bytes, history.leaves kept: Open (with or without KeepPartial) refuses before cutting.
	dir := cutHistory(t, src, 10, true)
	before, _ := os.ReadFile(filepath.Join(dir, FileName))
	_, _, err = Open(dir)
	check("Open of a history cut behind its history.leaves", errors.Is(err, ErrBehindLog) && strings.Contains(err.Error(), "has 1 entries and a partial last line of"),
		"err %v, want ErrBehindLog naming 1 entry and the partial line", err)
	unchanged(t, dir, before)

	// history.leaves lost too: the log's size shows it.
	dir = cutHistory(t, src, 10, false)
	before, _ = os.ReadFile(filepath.Join(dir, FileName))
	_, op, _, err := reopen(t, dir)
	check("Reconcile of a history cut behind its log", errors.Is(err, ErrBehindLog) && strings.Contains(err.Error(), "has 1 entries and a partial last line of") &&
		strings.Contains(err.Error(), "its transparency log has 2 leaves") && op.PartialBytes > 0 && op.TrimmedBytes == 0,
		"err %v, opened %+v; want ErrBehindLog naming 1 entry and 2 leaves, the partial line kept", err, op)
	unchanged(t, dir, before)

	// The last line replaced by another (cut whole, another entry appended without the log).
	dir = cutHistory(t, src, 0, false)
	b, _ := os.ReadFile(filepath.Join(dir, FileName))
	first := b[:strings.IndexByte(string(b), '\n')+1]
	if err := os.WriteFile(filepath.Join(dir, FileName), first, 0o644); err != nil {
		t.Fatal(err)
	}
	l2, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l2.Append(testExchange(7)); err != nil {
		t.Fatal(err)
	}
	l2.Close()
	before, _ = os.ReadFile(filepath.Join(dir, FileName))
	_, _, _, err = reopen(t, dir)
	check("Reconcile of a history whose last line was replaced", errors.Is(err, ErrBehindLog) && strings.Contains(err.Error(), "1 of which are no entry of the history"),
		"err %v, want ErrBehindLog naming the leaf that is no entry", err)
	unchanged(t, dir, before)

	// A torn write the log did not commit: kept by OpenWith, Append refused until Reconcile cuts it.
	dir = cutHistory(t, src, 0, true)
	torn := []byte(`{"index":2,"prev_root":"`)
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(torn)
	f.Close()
	l3, op, err := OpenWith(dir, OpenOptions{KeepPartial: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l3.Append(testExchange(2))
	check("Append before Reconcile with a kept partial line", err != nil && strings.Contains(err.Error(), "awaits Reconcile"), "err %v", err)
	g3 := fastLog(t, filepath.Join(dir, "log"), s, v)
	rec, err := l3.Reconcile(ctx, g3)
	check("Reconcile cuts a partial line the log did not commit", err == nil && rec.Trimmed == int64(len(torn)) && op.PartialBytes == int64(len(torn)),
		"rec %+v opened %+v err %v, want %d bytes cut", rec, op, err, len(torn))
	a, err := l3.Append(testExchange(2))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := l3.Publish(ctx, g3, a)
	check("the next entry after the cut", err == nil && a.Index == 2 && leaf == 2, "entry %d leaf %d %v, want 2 and 2", a.Index, leaf, err)
	l3.Close()
	g3.Close(ctx)
	t.Logf("histories behind their log: %d of %d as expected", pass, total)
}

// TestReconcileStopsWhenItsContextIsCanceled: catching a log up with a long history stops when its context is
// canceled (serve's Ctrl-C while it migrates a history), with an error that says so, and a later Reconcile adds
// every entry once: nothing is lost or doubled by the stop.
func TestReconcileStopsWhenItsContextIsCanceled(t *testing.T) {
	dir := t.TempDir()
	l, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 12 {
		if _, err := l.Append(testExchange(i)); err != nil {
			t.Fatal(err)
		}
	}
	s, v := testKey(t, "bankml.test/log")
	g := fastLog(t, filepath.Join(dir, "log"), s, v)
	defer g.Close(context.Background())
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if rec, err := l.Reconcile(canceled, g); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reconcile with a canceled context: %+v %v, want context.Canceled", rec, err)
	}
	rec, err := l.Reconcile(context.Background(), g)
	if err != nil || rec.Added+rec.Found != 12 {
		t.Fatalf("Reconcile after the stop: %+v %v, want the 12 entries added or found", rec, err)
	}
	if cp := waitCheckpoint(t, g, 12); cp.Size != 12 {
		t.Fatalf("log size %d, want 12 (no entry twice)", cp.Size)
	}
}
