package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bankml/bankml/ledger"
)

// ledgerCmd is `bankml ledger verify DIR` and `bankml ledger prove DIR I`
// (package ledger).
type ledgerCmd struct {
	Verify ledgerVerifyCmd `cmd:"" help:"Check every entry of a history ledger and print its head (size, root, bytes, CID) as JSON; exit 2 with the reason when it does not verify."`
	Prove  ledgerProveCmd  `cmd:"" help:"Print the RFC 6962 inclusion proof of entry I (from 0) as JSON, checked as RFC 9162 prescribes; exit 2 when there is no such entry or the ledger does not verify."`
}

type ledgerVerifyCmd struct {
	Dir  string `arg:"" name:"DIR" help:"The ledger folder (serve's --history DIR)." type:"path"`
	Root string `help:"A head published earlier (GET /bankml/ledger's root, hex): the first --size entries must still have this RFC 6962 root (the only way to catch a changed or removed last entry)."`
	Size uint64 `help:"The entry count of the head given by --root."`
}

// ledgerVerdict is verify's JSON: the head, or ok false and the reason.
type ledgerVerdict struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
	*ledger.Report
}

func (c *ledgerVerifyCmd) Run(stdout io.Writer, stderr errWriter) error {
	if (c.Root == "") != (c.Size == 0) {
		return fmt.Errorf("ledger verify: --root and --size go together")
	}
	var leaves []ledger.Hash
	rep, err := ledger.VerifyEntries(c.Dir, func(e ledger.Entry) error {
		leaves = append(leaves, ledger.LeafHash(e.Line))
		return checkReceipt(e)
	})
	if err == nil {
		err = c.checkHead(leaves)
	}
	switch {
	case errors.Is(err, ledger.ErrCorrupt):
		if werr := writeJSON(stdout, ledgerVerdict{Reason: err.Error()}); werr != nil {
			return werr
		}
		return &exitError{code: 2, err: fmt.Errorf("ledger verify: %s: %w", c.Dir, err)}
	case err != nil:
		return fmt.Errorf("ledger verify: %w", err) // I/O: exit 1
	}
	if rep.TornBytes > 0 {
		fmt.Fprintf(stderr, "ledger verify: %s: the last %d bytes are a partial line (a write in progress, or cut short by a crash: the next open cuts them off); not counted\n", c.Dir, rep.TornBytes)
	}
	return writeJSON(stdout, ledgerVerdict{OK: true, Report: &rep})
}

// checkReceipt checks what the tree alone cannot: an entry's receipt hashes
// (request_sha256 of the stored request bytes, response_sha256 of the stored
// answer, as serve computes them). A mismatch wraps ledger.ErrCorrupt.
func checkReceipt(e ledger.Entry) error {
	if len(e.Receipt) == 0 {
		return nil
	}
	var r struct {
		Request  string `json:"request_sha256"`
		Response string `json:"response_sha256"`
	}
	if err := json.Unmarshal(e.Receipt, &r); err != nil {
		return fmt.Errorf("%w: entry %d: receipt: %w", ledger.ErrCorrupt, e.Index, err)
	}
	for _, h := range []struct {
		name, got string
		data      []byte
	}{{"request_sha256", r.Request, e.Request}, {"response_sha256", r.Response, e.Answer}} {
		if sum := sha256.Sum256(h.data); h.got != "" && h.got != hex.EncodeToString(sum[:]) {
			return fmt.Errorf("%w: entry %d: receipt %s %s is not the sha256 of the stored %s (%x)", ledger.ErrCorrupt, e.Index, h.name, h.got, strings.TrimSuffix(h.name, "_sha256"), sum)
		}
	}
	return nil
}

// checkHead checks, with --root and --size, that the first Size entries
// (their leaf hashes) still have the published root (RFC 6962 §2.1): the
// only check that catches a changed or removed last entry. A mismatch wraps
// ledger.ErrCorrupt.
func (c *ledgerVerifyCmd) checkHead(leaves []ledger.Hash) error {
	if c.Size == 0 {
		return nil
	}
	if uint64(len(leaves)) < c.Size {
		return fmt.Errorf("%w: the ledger has %d entries, the head given has %d: entries were removed", ledger.ErrCorrupt, len(leaves), c.Size)
	}
	if got := ledger.Root(leaves[:c.Size]); hex.EncodeToString(got[:]) != strings.ToLower(c.Root) {
		return fmt.Errorf("%w: the first %d entries have root %x, not the head given (%s): an entry was changed", ledger.ErrCorrupt, c.Size, got, c.Root)
	}
	return nil
}

type ledgerProveCmd struct {
	Dir   string `arg:"" name:"DIR" help:"The ledger folder." type:"path"`
	Index uint64 `arg:"" name:"I" help:"The entry's index, from 0."`
}

func (c *ledgerProveCmd) Run(stdout io.Writer) error {
	p, err := ledger.ProveFile(c.Dir, c.Index)
	switch {
	case errors.Is(err, ledger.ErrCorrupt), errors.Is(err, ledger.ErrNoEntry):
		return &exitError{code: 2, err: fmt.Errorf("ledger prove: %s: %w", c.Dir, err)}
	case err != nil:
		return fmt.Errorf("ledger prove: %w", err)
	}
	if err := p.Check(); err != nil {
		return &exitError{code: 70, err: fmt.Errorf("ledger prove: the proof of entry %d does not verify: %w", c.Index, err)}
	}
	return writeJSON(stdout, p)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
