package serve

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"

	"github.com/bankml/bankml/ledger"
)

// mountLedger adds bankml's history routes. GET /bankml/ledger is the summary (JSON); with a transparency
// log, /bankml/ledger/ is also the log's C2SP tlog-tiles prefix, read-only: checkpoint, tile/<L>/<N>[.p/<W>]
// and tile/entries/<N>[.p/<W>], so that any tlog-tiles client (tessera's client.HTTPFetcher) reads the log
// from this server; proof and consistency give proofs built from those tiles for clients that do not
// build their own (the console); key is the operator's public key.
func (s *Server) mountLedger(r chi.Router) {
	r.Get("/bankml/ledger", s.handleLedger)
	r.Get("/bankml/ledger/proof", s.handleLedgerProof)
	r.Get("/bankml/ledger/consistency", s.handleLedgerConsistency)
	r.Get("/bankml/ledger/key", s.handleLedgerKey)
	r.Get("/bankml/ledger/"+layout.CheckpointPath, s.handleCheckpoint)
	r.Get("/bankml/ledger/tile/*", s.handleTile)
}

// MountLedger adds the /bankml/ledger routes of a history that several Servers share (o.Ledger, o.TLog,
// o.Signer; o.Log for read errors), answered as one Server answers them: a router in front of those Servers
// (package storeserve, the store server) serves them once, with no model named or loaded.
func MountLedger(r chi.Router, o Options) {
	s := &Server{opt: o, log: o.Log}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mountLedger(r)
}

// ledgerSummary is GET /bankml/ledger's answer: the local history's head (ledger.Head: size, root, bytes,
// cid) and, with a log, the log's latest checkpoint and how many history entries it does not have yet.
type ledgerSummary struct {
	ledger.Head
	Log *logSummary `json:"log,omitempty"`
}

type logSummary struct {
	Origin      string `json:"origin"`
	Size        uint64 `json:"size"`       // entries the latest checkpoint commits to
	Root        string `json:"root"`       // hex of its RFC 6962 root
	Checkpoint  string `json:"checkpoint"` // the signed checkpoint (C2SP tlog-checkpoint), cosignatures included
	Tiles       string `json:"tiles"`      // the tlog-tiles prefix
	Unpublished int    `json:"unpublished"`
}

// handleLedger is GET /bankml/ledger: the history's head {size, root, bytes, cid} and, with a log, "log":
// {origin, size, root, checkpoint, tiles, unpublished}; 404 without --history.
func (s *Server) handleLedger(w http.ResponseWriter, r *http.Request) {
	if s.opt.Ledger == nil {
		writeError(w, noHistory())
		return
	}
	sum := ledgerSummary{Head: s.opt.Ledger.Head()}
	if s.opt.TLog != nil {
		cp, err := s.opt.TLog.Checkpoint(r.Context())
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			writeError(w, err)
			return
		}
		sum.Log = &logSummary{Origin: s.opt.TLog.Origin(), Size: cp.Size, Root: hex.EncodeToString(cp.Root[:]),
			Checkpoint: string(cp.Raw), Tiles: "/bankml/ledger/", Unpublished: s.opt.Ledger.Unpublished()}
	}
	writeJSON(w, http.StatusOK, sum)
}

// logProof is an inclusion proof of one leaf of the transparency log, all hashes in hex.
type logProof struct {
	Index      uint64   `json:"index"`
	Size       uint64   `json:"size"`
	Leaf       string   `json:"leaf"`      // the leaf's data: the entry's commitment (a receipt's entry_sha256)
	LeafHash   string   `json:"leaf_hash"` // SHA-256(0x00 || leaf)
	Path       []string `json:"path"`      // RFC 6962 §2.1.1 audit path, leaf to root
	Root       string   `json:"root"`      // root of the tree of Size, as the checkpoint says
	Checkpoint string   `json:"checkpoint"`
}

// uintParam reads query parameter name as an unsigned integer; def when absent (required when def is nil).
func uintParam(r *http.Request, name string, def *uint64) (uint64, error) {
	q := r.URL.Query().Get(name)
	if q == "" {
		if def == nil {
			return 0, badRequest("%s: missing", name)
		}
		return *def, nil
	}
	v, err := strconv.ParseUint(q, 10, 64)
	if err != nil {
		return 0, badRequest("%s %q: not an unsigned integer", name, q)
	}
	return v, nil
}

// handleLedgerProof is GET /bankml/ledger/proof?index=i. With a transparency log: the RFC 6962 inclusion
// proof of leaf i in the tree of the latest checkpoint, with the checkpoint itself (logProof; checked
// before it is sent); 404 while leaf i is not in a published checkpoint yet. Without a log: the inclusion
// proof of history entry i in the local tree (ledger.Proof, its entry's line included). A missing or
// malformed index is a 400.
func (s *Server) handleLedgerProof(w http.ResponseWriter, r *http.Request) {
	if s.opt.Ledger == nil {
		writeError(w, noHistory())
		return
	}
	i, err := uintParam(r, "index", nil)
	if err != nil {
		writeError(w, badRequest("index: missing or malformed (GET /bankml/ledger/proof?index=I)"))
		return
	}
	if s.opt.TLog == nil {
		p, err := s.opt.Ledger.Prove(i)
		if err != nil {
			if errors.Is(err, ledger.ErrNoEntry) {
				writeError(w, &APIError{Type: TypeNotFound, Message: err.Error()})
				return
			}
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, p)
		return
	}
	ctx := r.Context()
	cp, err := s.opt.TLog.Checkpoint(ctx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		writeError(w, err)
		return
	}
	if i >= cp.Size {
		writeError(w, &APIError{Type: TypeNotFound, Message: fmt.Sprintf("leaf %d is not in the latest checkpoint (%d entries) yet: a checkpoint is published every few seconds", i, cp.Size)})
		return
	}
	path, err := s.opt.TLog.InclusionProof(ctx, i, cp.Size)
	if err != nil {
		writeError(w, err)
		return
	}
	leaf, err := s.opt.TLog.Leaf(ctx, i, cp.Size)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := ledger.VerifyLeafInclusion(leaf, i, cp.Size, path, cp.Root); err != nil {
		writeError(w, fmt.Errorf("the log's own proof of leaf %d does not verify: %w", i, err))
		return
	}
	lh := ledger.LeafHash(leaf)
	writeJSON(w, http.StatusOK, logProof{Index: i, Size: cp.Size, Leaf: hex.EncodeToString(leaf), LeafHash: hex.EncodeToString(lh[:]),
		Path: hexAll(path), Root: hex.EncodeToString(cp.Root[:]), Checkpoint: string(cp.Raw)})
}

func hexAll(hs [][]byte) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = hex.EncodeToString(h)
	}
	return out
}

// handleLedgerConsistency is GET /bankml/ledger/consistency?from=m[&to=n]: the RFC 6962 consistency proof
// from the tree of m entries to that of n (default: the latest checkpoint's size, whose checkpoint is
// included), so that a client holding an older checkpoint can check the log only grew.
func (s *Server) handleLedgerConsistency(w http.ResponseWriter, r *http.Request) {
	if s.opt.TLog == nil {
		writeError(w, noLog())
		return
	}
	ctx := r.Context()
	cp, err := s.opt.TLog.Checkpoint(ctx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		writeError(w, err)
		return
	}
	from, err := uintParam(r, "from", nil)
	if err != nil {
		writeError(w, err)
		return
	}
	to, err := uintParam(r, "to", &cp.Size)
	if err != nil {
		writeError(w, err)
		return
	}
	if from > to || to > cp.Size {
		writeError(w, badRequest("consistency from %d to %d: want from ≤ to ≤ %d (the latest checkpoint's size)", from, to, cp.Size))
		return
	}
	p, err := s.opt.TLog.ConsistencyProof(ctx, from, to)
	if err != nil {
		writeError(w, err)
		return
	}
	out := map[string]any{"from": from, "to": to, "path": hexAll(p)}
	if to == cp.Size {
		out["checkpoint"] = string(cp.Raw)
	}
	writeJSON(w, http.StatusOK, out)
}

// handleLedgerKey is GET /bankml/ledger/key: the operator's public key (what receipts and checkpoints are
// signed with) as a signed-note verifier key, PEM and raw base64, with its name and key id. A client
// should pin it from a source it trusts; this route only says which key the server uses.
func (s *Server) handleLedgerKey(w http.ResponseWriter, r *http.Request) {
	if s.opt.Signer == nil {
		writeError(w, &APIError{Type: TypeNotFound, Message: "this server has no operator key: its receipts are unsigned (start bankml serve with --key FILE)"})
		return
	}
	p := s.opt.Signer.Public()
	writeJSON(w, http.StatusOK, map[string]string{"key_name": p.Name, "key_id": s.opt.Signer.KeyID(), "vkey": p.VerifierKey(),
		"pem": string(p.PEM()), "ed25519": base64.StdEncoding.EncodeToString(p.Key)})
}

// handleCheckpoint is GET /bankml/ledger/checkpoint: the latest signed checkpoint, as published.
func (s *Server) handleCheckpoint(w http.ResponseWriter, r *http.Request) {
	if s.opt.TLog == nil {
		writeError(w, noLog())
		return
	}
	b, err := s.opt.TLog.Reader().ReadCheckpoint(r.Context())
	if err != nil {
		s.tileError(w, "checkpoint", err)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(b)
}

// handleTile is GET /bankml/ledger/tile/<L>/<N>[.p/<W>] (a hash tile) and tile/entries/<N>[.p/<W>] (an
// entry bundle), C2SP tlog-tiles. A partial resource holds exactly W hashes or entries, even where the
// storage keeps a larger one (tessera's MySQL storage does). Full ones never change: they are cacheable
// for a year.
func (s *Server) handleTile(w http.ResponseWriter, r *http.Request) {
	if s.opt.TLog == nil {
		writeError(w, noLog())
		return
	}
	rest := chi.URLParam(r, "*")
	level, index, _ := strings.Cut(rest, "/")
	rd := s.opt.TLog.Reader()
	var b []byte
	var p uint8
	var err error
	if level == "entries" {
		var i uint64
		if i, p, err = layout.ParseTileIndexPartial(index); err != nil {
			s.tileError(w, rest, fs.ErrNotExist)
			return
		}
		if b, err = rd.ReadEntryBundle(r.Context(), i, p); err == nil && p > 0 {
			b, err = trimBundle(b, int(p))
		}
	} else {
		var l, i uint64
		if l, i, p, err = layout.ParseTileLevelIndexPartial(level, index); err != nil {
			s.tileError(w, rest, fs.ErrNotExist)
			return
		}
		if b, err = rd.ReadTile(r.Context(), l, i, p); err == nil && p > 0 {
			if want := int(p) * len(ledger.Hash{}); len(b) >= want {
				b = b[:want]
			} else {
				err = fs.ErrNotExist
			}
		}
	}
	if err != nil {
		s.tileError(w, rest, err)
		return
	}
	if p == 0 {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(b)
}

// trimBundle keeps the first n entries of a serialised entry bundle (each a 2-byte big-endian length and
// its data, C2SP tlog-tiles).
func trimBundle(b []byte, n int) ([]byte, error) {
	var eb api.EntryBundle
	if err := eb.UnmarshalText(b); err != nil {
		return nil, err
	}
	if len(eb.Entries) < n {
		return nil, fs.ErrNotExist
	}
	off := 0
	for range n {
		size := int(b[off])<<8 | int(b[off+1])
		off += 2 + size
	}
	return b[:off], nil
}

// tileError answers a log resource that could not be read: 404 for one that does not exist (yet), 500
// otherwise.
func (s *Server) tileError(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		writeError(w, &APIError{Type: TypeNotFound, Message: fmt.Sprintf("the log has no %s", what)})
		return
	}
	s.log.Error("transparency log: reading", "what", what, "err", err)
	writeError(w, &APIError{Type: TypeServer, Message: fmt.Sprintf("reading the log's %s: %v", what, err)})
}

func noHistory() *APIError {
	return &APIError{Type: TypeNotFound, Message: "this server keeps no history: start bankml serve with --history DIR"}
}

func noLog() *APIError {
	return &APIError{Type: TypeNotFound, Message: "this server keeps no transparency log: start bankml serve with --history DIR and --key FILE"}
}
