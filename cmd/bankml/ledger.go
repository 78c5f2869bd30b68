package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/bankml/bankml/ledger"
)

// ledgerCmd is `bankml ledger verify DIR` and `bankml ledger prove DIR I`
// (package ledger).
type ledgerCmd struct {
	Verify ledgerVerifyCmd `cmd:"" help:"Check every entry of a history ledger and print its head (size, root, bytes, CID) as JSON; exit 2 with the reason when it does not verify."`
	Prove  ledgerProveCmd  `cmd:"" help:"Print the RFC 6962 inclusion proof of entry I (from 0) as JSON, checked as RFC 9162 prescribes; exit 2 when there is no such entry or the ledger does not verify."`
}

type ledgerVerifyCmd struct {
	Dir string `arg:"" name:"DIR" help:"The ledger folder (serve's --history DIR)." type:"path"`
}

// ledgerVerdict is verify's JSON: the head, or ok false and the reason.
type ledgerVerdict struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
	*ledger.Report
}

func (c *ledgerVerifyCmd) Run(stdout io.Writer, stderr errWriter) error {
	rep, err := ledger.Verify(c.Dir)
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
