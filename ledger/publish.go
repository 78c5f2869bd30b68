package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/transparency-dev/tessera"
)

// LeavesName is the file beside history.jsonl that records, for each entry published to the
// transparency log, its leaf index: one JSON line {"entry": i, "leaf_index": j} per entry. It is derived
// data: a missing or cut-short record costs Reconcile a scan of the log, never a lost or doubled entry.
const LeavesName = "history.leaves"

// leafIndex is a ledger's history.leaves, read at Open and appended by Publish.
type leafIndex struct {
	f  *os.File
	at map[uint64]uint64 // entry index -> leaf index
}

type leafRecord struct {
	Entry     uint64 `json:"entry"`
	LeafIndex uint64 `json:"leaf_index"`
}

// openLeafIndex reads dir's history.leaves (records of entries below n; a line that does not read back,
// as a write cut short by a crash, ends the reading: the entries after it are looked up again) and opens
// it for appending.
func openLeafIndex(dir string, n uint64) (*leafIndex, error) {
	at, err := readLeafIndex(dir, n)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, LeavesName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return &leafIndex{f: f, at: at}, nil
}

func readLeafIndex(dir string, n uint64) (map[uint64]uint64, error) {
	at := map[uint64]uint64{}
	b, err := os.ReadFile(filepath.Join(dir, LeavesName))
	if errors.Is(err, os.ErrNotExist) {
		return at, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r leafRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Entry >= n {
			break
		}
		at[r.Entry] = r.LeafIndex
	}
	return at, nil
}

// record notes entry's leaf index (not synced: see LeavesName).
func (li *leafIndex) record(entry, leaf uint64) error {
	li.at[entry] = leaf
	b, _ := json.Marshal(leafRecord{Entry: entry, LeafIndex: leaf})
	if _, err := li.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("ledger: recording entry %d's leaf index: %w", entry, err)
	}
	return nil
}

func (li *leafIndex) close() error { return li.f.Close() }

// LeafIndex returns entry's leaf index in the transparency log, if it was published.
func (l *Ledger) LeafIndex(entry uint64) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, ok := l.li.at[entry]
	return i, ok
}

// Unpublished is the number of entries whose commitment is not (yet) known to be in the log.
func (l *Ledger) Unpublished() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.s.commits) - len(l.li.at)
}

// Publish appends an appended entry's commitment to the transparency log g (exactly once: Log.Add) and
// records its leaf index. On an error the entry stays unpublished: Reconcile adds it later.
func (l *Ledger) Publish(ctx context.Context, g *Log, a Appended) (uint64, error) {
	i, err := g.Add(ctx, a.Commitment)
	if err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return i, errors.New("ledger: closed")
	}
	return i, l.li.record(a.Index, i)
}

// Reconciled is what Reconcile did.
type Reconciled struct {
	Found int `json:"found"` // entries already in the log whose record was missing (a crash between the append and the record)
	Added int `json:"added"` // entries added: a ledger kept before it had a log (migrated), or appends that failed
}

// Reconcile brings the log up to the ledger: every entry not recorded as published is looked up in the
// log (a scan of its entry bundles) and, when absent, added, in entry order, so that every committed
// line of the history is in the log exactly once. A ledger written before it had a log is migrated so,
// without changing a byte of it. Call it before serving (it must not run beside Publish of the same
// entries).
func (l *Ledger) Reconcile(ctx context.Context, g *Log) (Reconciled, error) {
	l.mu.Lock()
	type pending struct {
		entry  uint64
		commit Hash
	}
	var todo []pending
	for i, c := range l.s.commits {
		if _, ok := l.li.at[uint64(i)]; !ok {
			todo = append(todo, pending{uint64(i), c})
		}
	}
	l.mu.Unlock()
	var rec Reconciled
	if len(todo) == 0 {
		return rec, nil
	}
	size, err := g.reader.IntegratedSize(ctx)
	if err != nil {
		return rec, fmt.Errorf("ledger: reconciling with the log: %w", err)
	}
	want := make(map[Hash]int, len(todo))
	for k, p := range todo {
		want[p.commit] = k
	}
	found := make([]bool, len(todo))
	var recErr error
	err = g.scan(ctx, 0, size, func(i uint64, data []byte) bool {
		var h Hash
		if len(data) != len(h) {
			return true
		}
		copy(h[:], data)
		if k, ok := want[h]; ok && !found[k] {
			found[k] = true
			rec.Found++
			l.mu.Lock()
			recErr = l.li.record(todo[k].entry, i)
			l.mu.Unlock()
		}
		return recErr == nil
	})
	if err == nil {
		err = recErr
	}
	if err != nil {
		return rec, fmt.Errorf("ledger: reconciling with the log: %w", err)
	}
	// The rest are added in entry order, a batch at a time: all of a batch's appends are queued before the
	// first is awaited, so that tessera sequences them together; one that fails is added again through
	// Log.Add's look-up-then-retry.
	var rest []pending
	for k, p := range todo {
		if !found[k] {
			rest = append(rest, p)
		}
	}
	for len(rest) > 0 {
		n := min(len(rest), int(g.opt.BatchMaxSize))
		from := g.known.Load()
		futures := make([]tessera.IndexFuture, n)
		for k, p := range rest[:n] {
			futures[k] = g.app.Add(ctx, tessera.NewEntry(p.commit[:]))
		}
		for k, p := range rest[:n] {
			idx, err := futures[k]()
			i := idx.Index
			if err != nil {
				if i, err = g.addFrom(ctx, p.commit, from, err); err != nil {
					return rec, fmt.Errorf("ledger: adding entry %d to the log: %w", p.entry, err)
				}
			}
			g.raiseKnown(i + 1)
			rec.Added++
			l.mu.Lock()
			err = l.li.record(p.entry, i)
			l.mu.Unlock()
			if err != nil {
				return rec, err
			}
		}
		rest = rest[n:]
	}
	return rec, nil
}

// ReadLeafIndices reads the leaf indices recorded for the ledger in dir (entry index -> leaf index),
// without locking it.
func ReadLeafIndices(dir string) (map[uint64]uint64, error) {
	return readLeafIndex(dir, ^uint64(0))
}
