//go:build !windows

package ledger

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
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
