package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	f_log "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"
)

// Defaults of LogOptions.
const (
	DefaultCheckpointInterval = time.Second           // tessera's MySQL storage refuses less
	DefaultBatchMaxAge        = 25 * time.Millisecond // how long an append waits for others to share its batch
	DefaultBatchMaxSize       = 256                   // entries sequenced in one batch at most
	DefaultRetryFor           = 30 * time.Second      // how long Add retries a storage that fails (a database restarting)
	DefaultWitnessTimeout     = tessera.DefaultWitnessTimeout
)

// ErrLogUnavailable is wrapped by Add's error when the storage kept failing for RetryFor.
var ErrLogUnavailable = errors.New("ledger: the transparency log is unavailable")

// LogOptions configure a Log. Zero values take the defaults named.
type LogOptions struct {
	CheckpointInterval time.Duration // how often a new checkpoint is signed and published
	BatchMaxAge        time.Duration
	BatchMaxSize       uint
	RetryFor           time.Duration
	// Witnesses, when not nil, must cosign every checkpoint before it is published (C2SP tlog-witness,
	// through tessera's witness client); WitnessFailOpen publishes one the witnesses did not cosign.
	Witnesses       *tessera.WitnessGroup
	WitnessTimeout  time.Duration
	WitnessFailOpen bool
	Log             *slog.Logger // nil: discard
}

func (o *LogOptions) defaults() {
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.BatchMaxAge <= 0 {
		o.BatchMaxAge = DefaultBatchMaxAge
	}
	if o.BatchMaxSize == 0 {
		o.BatchMaxSize = DefaultBatchMaxSize
	}
	if o.RetryFor <= 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.WitnessTimeout <= 0 {
		o.WitnessTimeout = DefaultWitnessTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Log is bankml's transparency log: an append-only C2SP tlog-tiles log written through tessera (POSIX
// files or a MySQL/MariaDB database), whose leaves are the commitments of history lines (32 bytes each:
// the sha256 of a line), hashed as RFC 6962, with checkpoints (C2SP tlog-checkpoint) signed by the
// operator key. Several processes may append to one database-backed log. Its methods are safe for
// concurrent use.
type Log struct {
	origin   string
	verifier note.Verifier
	opt      LogOptions
	app      *tessera.Appender
	shutdown func(context.Context) error
	reader   tessera.LogReader
	cancel   context.CancelFunc
	db       *sql.DB // the MySQL storage's database; nil for POSIX

	known atomic.Uint64 // a size the log is known to have reached (a lower bound of its size)
}

// appendOptions are tessera's options for o, signing with signer.
func appendOptions(signer note.Signer, o LogOptions) *tessera.AppendOptions {
	opts := tessera.NewAppendOptions().
		WithCheckpointSigner(signer).
		WithCheckpointInterval(o.CheckpointInterval).
		WithBatching(o.BatchMaxSize, o.BatchMaxAge)
	if o.Witnesses != nil {
		opts = opts.WithWitnesses(*o.Witnesses, &tessera.WitnessOptions{Timeout: o.WitnessTimeout, FailOpen: o.WitnessFailOpen})
	}
	return opts
}

// newLog starts the appender of driver d.
func newLog(d tessera.Driver, signer note.Signer, verifier note.Verifier, o LogOptions, db *sql.DB) (*Log, error) {
	if signer.Name() != verifier.Name() || signer.KeyHash() != verifier.KeyHash() {
		return nil, fmt.Errorf("ledger: the log's signer (%s) and verifier (%s) are not one key", signer.Name(), verifier.Name())
	}
	ctx, cancel := context.WithCancel(context.Background())
	app, shutdown, reader, err := tessera.NewAppender(ctx, d, appendOptions(signer, o))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("ledger: starting the transparency log: %w", err)
	}
	g := &Log{origin: signer.Name(), verifier: verifier, opt: o, app: app, shutdown: shutdown, reader: reader, cancel: cancel, db: db}
	if n, err := reader.IntegratedSize(ctx); err == nil {
		g.known.Store(n)
	}
	return g, nil
}

// Origin is the log's origin line (the key's name).
func (g *Log) Origin() string { return g.origin }

// Verifier is the log's checkpoint verifier.
func (g *Log) Verifier() note.Verifier { return g.verifier }

// Reader gives read access to the log's checkpoint, tiles and entry bundles (tessera's LogReader).
func (g *Log) Reader() tessera.LogReader { return g.reader }

// Add appends commitment (the leaf data) and returns its leaf index once the entry is durably sequenced
// and integrated into the tree, exactly once: when the storage fails (a database restarting), Add waits,
// looks the commitment up in the entries added since it started (the failed batch may have been
// committed before the failure reached us) and adds it again only when it is not there, for RetryFor
// at most (then ErrLogUnavailable), or until ctx ends. A commitment must not be added by two calls at
// once (commitments of history lines are unique).
func (g *Log) Add(ctx context.Context, commitment Hash) (uint64, error) {
	// The entry cannot land below a size the log had before this call.
	return g.addFrom(ctx, commitment, g.known.Load(), nil)
}

// addFrom is Add for an entry that cannot be at an index below from; failed, when not nil, is the error of
// an append of it already made (Reconcile's), whose entry may have been committed: it is looked up first.
func (g *Log) addFrom(ctx context.Context, commitment Hash, from uint64, failed error) (uint64, error) {
	deadline := time.Now().Add(g.opt.RetryFor)
	wait := 50 * time.Millisecond
	for {
		err := failed
		failed = nil
		if err == nil {
			idx, aerr := g.app.Add(ctx, tessera.NewEntry(commitment[:]))()
			if aerr == nil {
				g.raiseKnown(idx.Index + 1)
				return idx.Index, nil
			}
			err = aerr
		}
		g.opt.Log.Warn("transparency log: append failed; looking the entry up before retrying", "err", err)
		for {
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("%w: %v (for %v)", ErrLogUnavailable, err, g.opt.RetryFor)
			}
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("ledger: transparency log: %w (after %v)", ctx.Err(), err)
			case <-time.After(wait):
			}
			wait = min(2*wait, time.Second)
			i, found, ferr := g.find(ctx, commitment, from)
			if ferr != nil {
				err = ferr
				continue // the storage is still down: wait again before looking
			}
			if found {
				return i, nil
			}
			break // not there: add it again
		}
	}
}

func (g *Log) raiseKnown(n uint64) {
	for {
		k := g.known.Load()
		if n <= k || g.known.CompareAndSwap(k, n) {
			return
		}
	}
}

// find looks for commitment among the integrated entries from index from on.
func (g *Log) find(ctx context.Context, commitment Hash, from uint64) (uint64, bool, error) {
	size, err := g.reader.IntegratedSize(ctx)
	if err != nil {
		return 0, false, err
	}
	var at uint64
	found := false
	err = g.scan(ctx, from, size, func(i uint64, data []byte) bool {
		if string(data) == string(commitment[:]) {
			at, found = i, true
			return false
		}
		return true
	})
	return at, found, err
}

// scan calls visit with every entry's index and data in [from, size) of the tree of size size, in order,
// until visit returns false.
func (g *Log) scan(ctx context.Context, from, size uint64, visit func(uint64, []byte) bool) error {
	return scanEntries(ctx, g.reader.ReadEntryBundle, from, size, visit)
}

// scanEntries is scan over any entry-bundle reader (a LogReader's or an HTTP fetcher's).
func scanEntries(ctx context.Context, read client.EntryBundleFetcherFunc, from, size uint64, visit func(uint64, []byte) bool) error {
	for b := from / layout.EntryBundleWidth; b*layout.EntryBundleWidth < size; b++ {
		bundle, err := client.GetEntryBundle(ctx, read, b, size)
		if err != nil {
			return fmt.Errorf("ledger: reading entry bundle %d: %w", b, err)
		}
		for j, data := range bundle.Entries {
			i := b*layout.EntryBundleWidth + uint64(j)
			if i < from || i >= size {
				continue
			}
			if !visit(i, data) {
				return nil
			}
		}
	}
	return nil
}

// Checkpoint is a verified checkpoint: its text (signed note, cosignatures included) and what it says.
type Checkpoint struct {
	Raw    []byte
	Origin string
	Size   uint64
	Root   Hash
}

// Checkpoint returns the latest published checkpoint, its signature checked against the log's key.
// os.ErrNotExist (wrapped) when none is published yet.
func (g *Log) Checkpoint(ctx context.Context) (Checkpoint, error) {
	raw, err := g.reader.ReadCheckpoint(ctx)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ledger: reading the checkpoint: %w", err)
	}
	return OpenCheckpoint(raw, g.origin, g.verifier)
}

// OpenCheckpoint parses a checkpoint and checks its signature by verifier and its origin (C2SP
// tlog-checkpoint, through transparency-dev/formats); otherVerifiers' signatures (witness cosignatures)
// are checked when present but not required (see RequireCosignatures).
func OpenCheckpoint(raw []byte, origin string, verifier note.Verifier, otherVerifiers ...note.Verifier) (Checkpoint, error) {
	cp, _, _, err := f_log.ParseCheckpoint(raw, origin, verifier, otherVerifiers...)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint: %v", ErrProof, err)
	}
	if len(cp.Hash) != len(Hash{}) {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint root of %d bytes", ErrProof, len(cp.Hash))
	}
	c := Checkpoint{Raw: raw, Origin: cp.Origin, Size: cp.Size}
	copy(c.Root[:], cp.Hash)
	return c, nil
}

// RequireCosignatures checks that raw (a checkpoint) carries a valid signature of every verifier in
// witnesses (C2SP tlog-cosignature, cosignature/v1 keys from transparency-dev/formats/note).
func RequireCosignatures(raw []byte, witnesses ...note.Verifier) error {
	for _, w := range witnesses {
		n, err := note.Open(raw, note.VerifierList(w))
		if err != nil || len(n.Sigs) == 0 {
			return fmt.Errorf("%w: the checkpoint carries no valid cosignature of witness %s (%08x)", ErrProof, w.Name(), w.KeyHash())
		}
	}
	return nil
}

// InclusionProof returns the RFC 6962 inclusion proof of leaf index in the tree of size size, built from
// the log's tiles by tessera's client.ProofBuilder.
func (g *Log) InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error) {
	if index >= size {
		return nil, fmt.Errorf("%w: leaf %d in a tree of %d", ErrNoEntry, index, size)
	}
	pb, err := client.NewProofBuilder(ctx, size, g.reader.ReadTile)
	if err != nil {
		return nil, err
	}
	p, err := pb.InclusionProof(ctx, index)
	if err != nil {
		return nil, fmt.Errorf("ledger: inclusion proof of %d in %d: %w", index, size, err)
	}
	return p, nil
}

// ConsistencyProof returns the RFC 6962 consistency proof from the tree of size from to the tree of size
// to (from ≤ to), built from the log's tiles.
func (g *Log) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	if from > to {
		return nil, fmt.Errorf("%w: consistency from %d to the smaller %d", ErrProof, from, to)
	}
	pb, err := client.NewProofBuilder(ctx, to, g.reader.ReadTile)
	if err != nil {
		return nil, err
	}
	p, err := pb.ConsistencyProof(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("ledger: consistency proof from %d to %d: %w", from, to, err)
	}
	return p, nil
}

// Leaf returns the data (the commitment) of leaf index in the tree of size size.
func (g *Log) Leaf(ctx context.Context, index, size uint64) ([]byte, error) {
	if index >= size {
		return nil, fmt.Errorf("%w: leaf %d in a tree of %d", ErrNoEntry, index, size)
	}
	var data []byte
	err := g.scan(ctx, index, index+1, func(_ uint64, d []byte) bool { data = d; return false })
	if err == nil && data == nil {
		err = fmt.Errorf("%w: leaf %d", ErrNoEntry, index)
	}
	return data, err
}

// VerifyLeafInclusion checks that data is leaf index of the tree of size size with root root, given the
// inclusion proof (transparency-dev/merkle's RFC 6962 verifier).
func VerifyLeafInclusion(data []byte, index, size uint64, path [][]byte, root Hash) error {
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, size, rfc6962.DefaultHasher.HashLeaf(data), path, root[:]); err != nil {
		return fmt.Errorf("%w: %v", ErrProof, err)
	}
	return nil
}

// VerifyConsistency checks a consistency proof between two roots (transparency-dev/merkle).
func VerifyConsistency(from, to uint64, fromRoot, toRoot Hash, path [][]byte) error {
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, from, to, path, fromRoot[:], toRoot[:]); err != nil {
		return fmt.Errorf("%w: %v", ErrProof, err)
	}
	return nil
}

// Close stops the log: it waits (bounded by ctx) until every entry Add returned is covered by a published
// checkpoint (tessera's shutdown), then stops its background work and closes the database.
func (g *Log) Close(ctx context.Context) error {
	err := g.shutdown(ctx)
	g.cancel()
	if g.db != nil {
		err = errors.Join(err, g.db.Close())
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ledger: closing the transparency log: %w", err)
	}
	return nil
}
