package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/transparency-dev/tessera"
	"k8s.io/klog/v2"

	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
)

// proofFlags are serve's flags for signed receipts and the transparency log.
type proofFlags struct {
	Key                string        `name:"key" type:"path" placeholder:"FILE" help:"Operator key (bankml key new): signs every receipt; with --history, also the checkpoints of the transparency log the history is committed to (DIR/log, or --history-db). Without it receipts say signed: false and the history stays local."`
	HistoryDB          string        `name:"history-db" placeholder:"DSN" help:"Keep the transparency log in MySQL/MariaDB (user:password@tcp(host:port)/database) instead of DIR/log; several bankml serve processes (replicas, each with its own --history DIR) may append to one database. Needs --history and --key."`
	WitnessPolicy      string        `name:"witness-policy" type:"path" placeholder:"FILE" help:"Witnesses that must cosign each checkpoint before it is published (C2SP tlog-witness; tessera's policy file: 'witness NAME VKEY URL', 'group NAME N A B', 'quorum NAME'). bankml witness is one."`
	CheckpointInterval time.Duration `name:"checkpoint-interval" default:"1s" help:"How often the log's checkpoint is signed and published (a receipt's leaf can be proved once one covers it; at least 1s with --history-db)."`
}

// proofSetup is what checkProof read before anything is created on disk: the operator key (nil: none) and the
// witness group of --witness-policy (nil: none).
type proofSetup struct {
	signer    *provenance.Signer
	witnesses *tessera.WitnessGroup
}

// checkProof refuses the proof flags' combinations that cannot work and loads what they name (the operator
// key, the witness policy), so that a refused flag or key leaves nothing behind: Run calls it before the model
// is pulled or admitted and before the history folder is created.
func (c *serveCmd) checkProof() (proofSetup, error) {
	p := c.Proof
	switch {
	case p.HistoryDB != "" && c.History == "":
		return proofSetup{}, errors.New("serve: --history-db needs --history DIR: the private lines stay in DIR/history.jsonl, the database holds their commitments")
	case p.HistoryDB != "" && p.Key == "":
		return proofSetup{}, errors.New("serve: --history-db needs --key: the log's checkpoints are signed by the operator key")
	case p.WitnessPolicy != "" && (c.History == "" || p.Key == ""):
		return proofSetup{}, errors.New("serve: --witness-policy needs --history and --key (witnesses cosign the log's checkpoints)")
	}
	var ps proofSetup
	if p.Key == "" {
		return ps, nil
	}
	var err error
	if ps.signer, err = provenance.LoadSigner(p.Key); err != nil {
		return proofSetup{}, fmt.Errorf("serve: --key: %w", err)
	}
	if p.WitnessPolicy != "" {
		b, err := os.ReadFile(p.WitnessPolicy)
		if err != nil {
			return proofSetup{}, fmt.Errorf("serve: --witness-policy: %w", err)
		}
		wg, err := tessera.NewWitnessGroupFromPolicy(b)
		if err != nil {
			return proofSetup{}, fmt.Errorf("serve: --witness-policy %s: %w", p.WitnessPolicy, err)
		}
		ps.witnesses = &wg
	}
	return ps, nil
}

// openHistory opens what the proof flags ask for, one setup for the single-model server and the store
// server (whose models all share it): the history --history names (nil: none kept), then, with the key
// checkProof loaded, the transparency log beside it (openProof, which ctx stops), saying on stderr what it opened. The caller
// closes the log (closeLog), then the history, once every server appending to them is closed.
func (c *serveCmd) openHistory(ctx context.Context, ps proofSetup, stderr errWriter, log *slog.Logger) (*ledger.Ledger, *provenance.Signer, *ledger.Log, error) {
	var l *ledger.Ledger
	if c.History != "" {
		var opened ledger.Opened
		var err error
		// With a key the history has a transparency log: a partial last line is cut only once the log
		// shows it did not commit it (openProof, Ledger.Reconcile).
		if l, opened, err = ledger.OpenWith(c.History, ledger.OpenOptions{KeepPartial: c.Proof.Key != ""}); err != nil {
			return nil, nil, nil, fmt.Errorf("serve: --history: %w", err)
		}
		if opened.TrimmedBytes > 0 {
			fmt.Fprintf(stderr, "history: cut off a partial last line of %d bytes (a write a crash interrupted; that exchange was never committed)\n", opened.TrimmedBytes)
		}
		fmt.Fprintf(stderr, "history: %s, %d entries, root %s\n", c.History, opened.Size, opened.Root)
	}
	signer, tlog, err := c.openProof(ctx, ps, l, stderr, log)
	if err != nil {
		if l != nil {
			l.Close()
		}
		return nil, nil, nil, err
	}
	return l, signer, tlog, nil
}

// openProof opens the transparency log beside the history l (nil: none kept) with the key and witnesses
// checkProof loaded, adding to the log every history entry it does not have yet (a history kept before the
// log existed is so migrated; an append a crash or a database outage interrupted is so completed), and says
// what it did on stderr. A history behind its log (cut after the log committed its lines) is refused
// (ledger.ErrBehindLog) before its partial last line, if any, is cut. The catching up stops (the error wraps
// context.Canceled) when ctx, the command's signal context, is canceled, and fails after ten minutes. The
// caller closes the log (closeLog) before the history.
func (c *serveCmd) openProof(ctx context.Context, ps proofSetup, l *ledger.Ledger, stderr errWriter, log *slog.Logger) (*provenance.Signer, *ledger.Log, error) {
	p := c.Proof
	signer := ps.signer
	if signer == nil {
		fmt.Fprintln(stderr, "receipts: unsigned (no --key)")
		if l != nil {
			fmt.Fprintln(stderr, "history: local only (no --key: no transparency log)")
		}
		return nil, nil, nil
	}
	fmt.Fprintf(stderr, "receipts: signed by %s (key id %s)\n", signer.Name(), signer.KeyID())
	if l == nil {
		return signer, nil, nil
	}
	v, err := signer.Public().NoteVerifier()
	if err != nil {
		return nil, nil, fmt.Errorf("serve: %w", err)
	}
	o := ledger.LogOptions{CheckpointInterval: p.CheckpointInterval, Log: log, Witnesses: ps.witnesses}
	klog.SetSlogLogger(log.With("component", "tessera")) // tessera logs through klog
	var g *ledger.Log
	where := ""
	if p.HistoryDB != "" {
		g, err = ledger.OpenMySQLLog(p.HistoryDB, signer.NoteSigner(), v, o)
		where = "database"
	} else {
		where = filepath.Join(c.History, "log")
		g, err = ledger.OpenPOSIXLog(where, signer.NoteSigner(), v, o)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("serve: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	rec, err := l.Reconcile(rctx, g)
	cancel()
	if err != nil {
		closeLog(g, stderr)
		return nil, nil, fmt.Errorf("serve: %w", err)
	}
	if rec.Trimmed > 0 {
		fmt.Fprintf(stderr, "history: cut off a partial last line of %d bytes (a write a crash interrupted; the log had not committed it)\n", rec.Trimmed)
	}
	if rec.Added > 0 || rec.Found > 0 {
		fmt.Fprintf(stderr, "log: added %d history entries the log lacked, found %d already in it\n", rec.Added, rec.Found)
	}
	fmt.Fprintf(stderr, "log: %s in %s, served read-only at /bankml/ledger/ (C2SP tlog-tiles)\n", g.Origin(), where)
	return signer, g, nil
}

// closeLog shuts the log down, waiting (30 s at most) for a checkpoint that covers every entry added.
func closeLog(g *ledger.Log, stderr errWriter) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.Close(ctx); err != nil {
		fmt.Fprintf(stderr, "log: %v\n", err)
	}
}
