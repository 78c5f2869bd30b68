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
	f      *os.File
	at     map[uint64]uint64 // entry index -> leaf index
	beyond *leafRecord       // the first record of an entry the history does not have (ErrBehindLog at Open)
}

type leafRecord struct {
	Entry     uint64 `json:"entry"`
	LeafIndex uint64 `json:"leaf_index"`
}

// openLeafIndex reads dir's history.leaves (records of entries below n; a line that does not read back,
// as a write cut short by a crash, ends the reading: the entries after it are looked up again; the first
// record of an entry at or past n is kept in beyond) and opens it for appending.
func openLeafIndex(dir string, n uint64) (*leafIndex, error) {
	at, beyond, err := readLeafIndex(dir, n)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, LeavesName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return &leafIndex{f: f, at: at, beyond: beyond}, nil
}

func readLeafIndex(dir string, n uint64) (map[uint64]uint64, *leafRecord, error) {
	at := map[uint64]uint64{}
	b, err := os.ReadFile(filepath.Join(dir, LeavesName))
	if errors.Is(err, os.ErrNotExist) {
		return at, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r leafRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			break
		}
		if r.Entry >= n {
			// A record is written only after its entry's line was synced: the history lost that line.
			return at, &r, nil
		}
		at[r.Entry] = r.LeafIndex
	}
	return at, nil, nil
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
	Found   int   `json:"found"`   // entries already in the log whose record was missing (a crash between the append and the record)
	Added   int   `json:"added"`   // entries added: a ledger kept before it had a log (migrated), or appends that failed
	Trimmed int64 `json:"trimmed"` // bytes of a partial last line kept at OpenWith and cut off: the log had not committed it
}

// Reconcile brings the log up to the ledger: every entry not recorded as published is looked up in the
// log (a scan of its entry bundles) and, when absent, added, in entry order, so that every committed
// line of the history is in the log exactly once. A ledger written before it had a log is migrated so,
// without changing a byte of it. Call it before serving (it must not run beside Publish of the same
// entries).
//
// A log that is this history's own (a POSIX log; a MySQL log may be shared by replicas) must not be ahead
// of it: a log holding more leaves than the history has entries, or a leaf that is no entry of it, fails
// with ErrBehindLog naming both sizes, before anything is changed; so does (any log) a history.leaves
// record of an entry past the history's end, kept by OpenWith. Only then is a partial last line kept
// at OpenWith cut off (Reconciled.Trimmed): the log did not commit it, a write a crash interrupted.
// Cancelling ctx stops the adding between batches (the error wraps ctx.Err()); what was added is
// recorded, and a later Reconcile adds the rest.
func (l *Ledger) Reconcile(ctx context.Context, g *Log) (Reconciled, error) {
	l.mu.Lock()
	var todo []pending
	for i, c := range l.s.commits {
		if _, ok := l.li.at[uint64(i)]; !ok {
			todo = append(todo, pending{uint64(i), c})
		}
	}
	n, recorded, partial, beyond := uint64(len(l.s.commits)), uint64(len(l.li.at)), l.partial, l.li.beyond
	l.mu.Unlock()
	var rec Reconciled
	size, err := g.reader.IntegratedSize(ctx)
	if err != nil {
		return rec, fmt.Errorf("ledger: reconciling with the log: %w", err)
	}
	own := g.db == nil // a POSIX log is one history's; replicas share a MySQL one
	behind := func(what string) error {
		return fmt.Errorf("%w: %s has %d entries%s, its transparency log has %d leaves%s: the history was cut or restored from an older copy "+
			"after the log committed its lines; restore %s with all the log's entries (or keep a new history and log in another folder): "+
			"serving would give new exchanges the indices of committed ones", ErrBehindLog, filepath.Join(l.dir, FileName), n, partialNote(partial), size, what, FileName)
	}
	if beyond != nil {
		return rec, behind(fmt.Sprintf(", and %s records entry %d as leaf %d", LeavesName, beyond.Entry, beyond.LeafIndex))
	}
	if own && size > n {
		return rec, behind("")
	}
	var rest []pending
	if len(todo) > 0 {
		if rest, err = l.findLogged(ctx, g, size, todo, &rec); err != nil {
			return rec, err
		}
	}
	if own && size > recorded+uint64(rec.Found) {
		return rec, behind(fmt.Sprintf(", %d of which are no entry of the history", size-recorded-uint64(rec.Found)))
	}
	l.mu.Lock()
	rec.Trimmed, err = l.cutPartial()
	l.mu.Unlock()
	if err != nil {
		return rec, err
	}
	// The rest are added in entry order, a batch at a time: all of a batch's appends are queued before the
	// first is awaited, so that tessera sequences them together; one that fails is added again through
	// Log.Add's look-up-then-retry.
	for len(rest) > 0 {
		// A canceled ctx (serve stopped while it catches a long history up) stops between batches: every
		// entry added so far is recorded, the others stay unpublished for the next Reconcile.
		if err := ctx.Err(); err != nil {
			return rec, fmt.Errorf("ledger: adding the history's entries to the log (%d added, %d left): %w", rec.Added, len(rest), err)
		}
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

// pending is an entry Reconcile has no leaf index for.
type pending struct {
	entry  uint64
	commit Hash
}

// findLogged looks the entries of todo up in the first size leaves of the log, records the leaf index
// of each found (counted in rec.Found) and returns the others, in entry order.
func (l *Ledger) findLogged(ctx context.Context, g *Log, size uint64, todo []pending, rec *Reconciled) ([]pending, error) {
	want := make(map[Hash]int, len(todo))
	for k, p := range todo {
		want[p.commit] = k
	}
	found := make([]bool, len(todo))
	var recErr error
	err := g.scan(ctx, 0, size, func(i uint64, data []byte) bool {
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
		return nil, fmt.Errorf("ledger: reconciling with the log: %w", err)
	}
	var rest []pending
	for k, p := range todo {
		if !found[k] {
			rest = append(rest, p)
		}
	}
	return rest, nil
}

// ReadLeafIndices reads the leaf indices recorded for the ledger in dir (entry index -> leaf index),
// without locking it.
func ReadLeafIndices(dir string) (map[uint64]uint64, error) {
	at, _, err := readLeafIndex(dir, ^uint64(0))
	return at, err
}
