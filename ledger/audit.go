package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/transparency-dev/tessera/client"
	tmysql "github.com/transparency-dev/tessera/storage/mysql"
	"golang.org/x/mod/sumdb/note"
)

// LogFetcher reads a log's resources as C2SP tlog-tiles names them: the checkpoint, hash tiles and entry
// bundles (tessera's client.HTTPFetcher and client.FileFetcher, and its MySQL storage, are ones).
type LogFetcher interface {
	ReadCheckpoint(ctx context.Context) ([]byte, error)
	ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error)
	ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error)
}

// OpenLogFetcher reads a log at where: an http(s) URL of its tlog-tiles prefix (bankml serve's
// http://HOST/bankml/ledger/), "mysql:" and a database DSN (tessera's MySQL storage, read-only), or a
// folder (a POSIX log). close releases what it opened.
func OpenLogFetcher(where string) (f LogFetcher, close func() error, err error) {
	nothing := func() error { return nil }
	switch {
	case strings.HasPrefix(where, "http://") || strings.HasPrefix(where, "https://"):
		u, err := url.Parse(where)
		if err != nil {
			return nil, nil, fmt.Errorf("ledger: log URL %q: %w", where, err)
		}
		h, err := client.NewHTTPFetcher(u, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("ledger: log URL %q: %w", where, err)
		}
		return h, nothing, nil
	case strings.HasPrefix(where, "mysql:"):
		dsn := strings.TrimPrefix(where, "mysql:")
		if _, err := mysql.ParseDSN(dsn); err != nil {
			return nil, nil, fmt.Errorf("ledger: log database: %w", err)
		}
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, nil, fmt.Errorf("ledger: log database: %w", err)
		}
		s, err := tmysql.New(context.Background(), db)
		if err != nil {
			db.Close()
			return nil, nil, fmt.Errorf("ledger: log database: %w", err)
		}
		return s, db.Close, nil
	default:
		return client.FileFetcher{Root: where}, nothing, nil
	}
}

// Audit is what AuditLog found: the verified checkpoint and every leaf's data with its index.
type Audit struct {
	Checkpoint Checkpoint
	Leaves     map[Hash]uint64 // leaf data (a commitment) -> its index
	Consistent uint64          // the size of the earlier checkpoint proven consistent with this one (0: none given)
}

// AuditLog checks a whole log: its latest checkpoint is signed by verifier (origin its name) and, for
// each of witnesses, cosigned; every entry bundle up to the checkpoint's size is read, no leaf data
// appears twice, and the RFC 6962 root of all the leaves is the checkpoint's; when since (an earlier
// checkpoint of the log) is given, tessera's ProofBuilder gives the consistency proof from it, verified
// with transparency-dev/merkle. Errors wrap ErrProof for a log that does not verify.
func AuditLog(ctx context.Context, f LogFetcher, verifier note.Verifier, witnesses []note.Verifier, since []byte) (Audit, error) {
	raw, err := f.ReadCheckpoint(ctx)
	if err != nil {
		return Audit{}, fmt.Errorf("ledger: reading the checkpoint: %w", err)
	}
	cp, err := OpenCheckpoint(raw, verifier.Name(), verifier)
	if err != nil {
		return Audit{}, err
	}
	if err := RequireCosignatures(raw, witnesses...); err != nil {
		return Audit{}, err
	}
	a := Audit{Checkpoint: cp, Leaves: make(map[Hash]uint64, cp.Size)}
	var leaves []Hash
	var dup error
	err = scanEntries(ctx, f.ReadEntryBundle, 0, cp.Size, func(i uint64, data []byte) bool {
		var h Hash
		if len(data) == len(h) {
			copy(h[:], data)
			if j, seen := a.Leaves[h]; seen {
				dup = fmt.Errorf("%w: leaves %d and %d hold the same data %x: an entry was logged twice", ErrProof, j, i, data)
				return false
			}
			a.Leaves[h] = i
		}
		leaves = append(leaves, LeafHash(data))
		return true
	})
	if err == nil {
		err = dup
	}
	if err != nil {
		return a, err
	}
	if uint64(len(leaves)) != cp.Size {
		return a, fmt.Errorf("%w: the log's bundles hold %d entries, its checkpoint says %d", ErrProof, len(leaves), cp.Size)
	}
	if r := Root(leaves); r != cp.Root {
		return a, fmt.Errorf("%w: the %d leaves have root %x, the checkpoint says %x", ErrProof, cp.Size, r[:], cp.Root[:])
	}
	if since != nil {
		old, err := OpenCheckpoint(since, verifier.Name(), verifier)
		if err != nil {
			return a, fmt.Errorf("the earlier checkpoint: %w", err)
		}
		if old.Size > cp.Size {
			return a, fmt.Errorf("%w: the log has %d entries, fewer than the %d of the earlier checkpoint", ErrProof, cp.Size, old.Size)
		}
		pb, err := client.NewProofBuilder(ctx, cp.Size, f.ReadTile)
		if err != nil {
			return a, err
		}
		p, err := pb.ConsistencyProof(ctx, old.Size, cp.Size)
		if err != nil {
			return a, fmt.Errorf("ledger: consistency proof: %w", err)
		}
		if err := VerifyConsistency(old.Size, cp.Size, old.Root, cp.Root, p); err != nil {
			return a, fmt.Errorf("consistency with the earlier checkpoint of %d entries: %w", old.Size, err)
		}
		a.Consistent = old.Size
	}
	return a, nil
}

// Prover checks leaves against one checkpoint with inclusion proofs that tessera's client.ProofBuilder
// builds from a log's tiles (its tile cache shared by every proof). Not safe for concurrent use.
type Prover struct {
	pb *client.ProofBuilder
	cp Checkpoint
}

// NewProver makes a Prover for checkpoint cp of the log f reads.
func NewProver(ctx context.Context, f LogFetcher, cp Checkpoint) (*Prover, error) {
	pb, err := client.NewProofBuilder(ctx, cp.Size, f.ReadTile)
	if err != nil {
		return nil, err
	}
	return &Prover{pb: pb, cp: cp}, nil
}

// Inclusion checks that data is leaf index of the checkpoint's tree.
func (p *Prover) Inclusion(ctx context.Context, index uint64, data []byte) error {
	if index >= p.cp.Size {
		return fmt.Errorf("%w: leaf %d is not in the checkpoint of %d entries", ErrProof, index, p.cp.Size)
	}
	path, err := p.pb.InclusionProof(ctx, index)
	if err != nil {
		return fmt.Errorf("ledger: inclusion proof of %d: %w", index, err)
	}
	return VerifyLeafInclusion(data, index, p.cp.Size, path, p.cp.Root)
}
