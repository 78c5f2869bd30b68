package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/bankml/bankml/ledger"
)

// ledgerCmd is `bankml ledger verify DIR` and `bankml ledger prove DIR I`
// (package ledger).
type ledgerCmd struct {
	Verify ledgerVerifyCmd `cmd:"" help:"Check every entry of a history ledger and print its head (size, root, bytes, CID) as JSON; exit 2 with the reason when it does not verify."`
	Prove  ledgerProveCmd  `cmd:"" help:"Print the RFC 6962 inclusion proof of entry I (from 0) as JSON, checked as RFC 9162 prescribes; exit 2 when there is no such entry or the ledger does not verify."`
}

type ledgerVerifyCmd struct {
	Dir  string      `arg:"" name:"DIR" help:"The ledger folder (serve's --history DIR)." type:"path"`
	Root string      `help:"A head published earlier (GET /bankml/ledger's root, hex): the first --size entries must still have this RFC 6962 root (the only way to catch a changed or removed last entry)."`
	Size *entryCount `help:"The entry count of the head given by --root (at least 1); --root and --size are given together."`

	Key          string   `name:"key" placeholder:"PUB" help:"The operator's public key (FILE.pub, FILE.pem, the private key file, or a verifier key inline): also audit the transparency log the history is committed to, whose checkpoints it signs."`
	Log          string   `name:"log" placeholder:"WHERE" help:"The transparency log: its tlog-tiles URL (http://HOST/bankml/ledger/), a folder, or mysql:DSN (default with --key: DIR/log, serve's POSIX log)."`
	Witness      []string `name:"witness" placeholder:"VKEY" help:"Require the log's checkpoint to be cosigned by this witness (verifier key inline or in a file); repeatable."`
	Since        string   `name:"since" type:"path" placeholder:"FILE" help:"An earlier checkpoint of the log (a file): the current one must be consistent with it (RFC 6962 consistency proof from the log's tiles)."`
	AllPublished bool     `name:"all-published" help:"Fail when a history entry is not in the log yet (by default it is counted as unpublished: a server still running may not have published its last entries)."`
	SharedLog    bool     `name:"shared-log" help:"Other histories append to the log too (serve --history-db replicas): its leaves that are no entry of this history are allowed. Without it every leaf must be an entry of the history."`
}

// ledgerVerdict is verify's JSON: the head, or ok false and the reason.
type ledgerVerdict struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
	*ledger.Report
	Log *logVerdict `json:"log,omitempty"`
}

// logVerdict is what verify found of the transparency log.
type logVerdict struct {
	Origin        string `json:"origin"`
	Size          uint64 `json:"size"`
	Root          string `json:"root"`
	Published     int    `json:"published"`      // history entries found in the log, each proved included
	Unpublished   int    `json:"unpublished"`    // history entries not in the log's checkpoint
	ConsistentTo  uint64 `json:"consistent_to"`  // the size of --since, proved consistent (0: not given)
	Cosigned      int    `json:"cosigned"`       // witnesses whose cosignatures were required and verified
	LeavesChecked uint64 `json:"leaves_checked"` // leaves read and hashed to the checkpoint's root
}

func (c *ledgerVerifyCmd) Run(stdout io.Writer, stderr errWriter) error {
	if err := c.checkHeadFlags(); err != nil {
		return fmt.Errorf("ledger verify: %w", err)
	}
	if c.Root != "" {
		// A head that is no hash is a bad flag value (exit 1), not a changed ledger (2).
		if _, err := hashArg("--root", c.Root); err != nil {
			return fmt.Errorf("ledger verify: %w", err)
		}
	}
	// The log is read before the history: every leaf of its checkpoint then has its line in the history
	// read after it, even while a server appends to both.
	var lg *logAudit
	var err error
	if c.Key != "" || c.Log != "" {
		lg, err = c.auditLog()
		if lg != nil {
			defer lg.close()
		}
	}
	var rep ledger.Report
	var leaves, commits []ledger.Hash
	if err == nil {
		rep, err = ledger.VerifyEntries(c.Dir, func(e ledger.Entry) error {
			leaves = append(leaves, ledger.LeafHash(e.Line))
			commits = append(commits, e.Commitment)
			return checkReceipt(e)
		})
	}
	if err == nil {
		err = c.checkHead(leaves)
	}
	var lv *logVerdict
	if err == nil && lg != nil {
		lv, err = c.checkLog(lg, commits, rep.TornBytes)
	}
	switch {
	case errors.Is(err, ledger.ErrCorrupt), errors.Is(err, ledger.ErrProof):
		if werr := writeJSON(stdout, ledgerVerdict{Reason: err.Error()}); werr != nil {
			return werr
		}
		return &exitError{code: 2, err: fmt.Errorf("ledger verify: %s: %w", c.Dir, err)}
	case err != nil:
		return fmt.Errorf("ledger verify: %w", err) // I/O: exit 1
	}
	if rep.TornBytes > 0 {
		fmt.Fprintf(stderr, "ledger verify: %s: the last %d bytes are a partial line (a write in progress, or cut short by a crash: the next open cuts them off once the log shows it did not commit them); not counted\n", c.Dir, rep.TornBytes)
	}
	return writeJSON(stdout, ledgerVerdict{OK: true, Report: &rep, Log: lv})
}

// logAudit is what verify read of the transparency log before the history.
type logAudit struct {
	audit    ledger.Audit
	recorded map[uint64]uint64 // history.leaves: entry -> leaf index
	prover   *ledger.Prover
	close    func() error // closes the log's fetcher once the proofs are made (Run)
}

// auditLog audits the transparency log (ledger.AuditLog: signature, cosignatures, every leaf, no leaf
// twice, the root, consistency with --since) and reads history.leaves.
func (c *ledgerVerifyCmd) auditLog() (*logAudit, error) {
	if c.Key == "" {
		return nil, errors.New("--log needs --key (the log's checkpoints are signed by the operator key)")
	}
	key, err := publicKeyArg("--key", c.Key)
	if err != nil {
		return nil, err
	}
	if key.Name == "" {
		return nil, errors.New("--key: a PEM key has no name; give the verifier key (FILE.pub), whose name is the log's origin")
	}
	v, err := key.NoteVerifier()
	if err != nil {
		return nil, err
	}
	witnesses, err := witnessVerifiers(c.Witness)
	if err != nil {
		return nil, err
	}
	where := c.Log
	if where == "" {
		where = filepath.Join(c.Dir, "log")
		if _, err := os.Stat(where); err != nil {
			return nil, fmt.Errorf("no log at %s (serve's POSIX log): give --log URL, folder or mysql:DSN", where)
		}
	}
	var since []byte
	if c.Since != "" {
		if since, err = os.ReadFile(c.Since); err != nil {
			return nil, err
		}
	}
	f, closeF, err := ledger.OpenLogFetcher(where)
	if err != nil {
		return nil, err
	}
	kept := false
	defer func() {
		if !kept {
			closeF()
		}
	}()
	ctx := context.Background()
	audit, err := ledger.AuditLog(ctx, f, v, witnesses, since)
	if err != nil {
		return nil, err
	}
	recorded, err := ledger.ReadLeafIndices(c.Dir)
	if err != nil {
		return nil, err
	}
	prover, err := ledger.NewProver(ctx, f, audit.Checkpoint)
	if err != nil {
		return nil, err
	}
	kept = true
	return &logAudit{audit: audit, recorded: recorded, prover: prover, close: closeF}, nil
}

// checkLog proves each history entry's commitment included at its leaf with tessera's ProofBuilder; a
// leaf index recorded in history.leaves must be the one found, and no record may name an entry the
// history lacks. Unless --shared-log, the log is the history's own: every leaf must be the commitment of
// a history entry, so the log can hold no more leaves than the history has entries (a history cut or
// restored from an older copy after the log committed its lines fails, naming both sizes).
func (c *ledgerVerifyCmd) checkLog(lg *logAudit, commits []ledger.Hash, torn int64) (*logVerdict, error) {
	cp := lg.audit.Checkpoint
	lv := &logVerdict{Origin: cp.Origin, Size: cp.Size, Root: hex.EncodeToString(cp.Root[:]),
		ConsistentTo: lg.audit.Consistent, Cosigned: len(c.Witness), LeavesChecked: cp.Size}
	n := uint64(len(commits))
	cut := func(what string) error {
		partial := ""
		if torn > 0 {
			partial = fmt.Sprintf(" and a partial last line of %d bytes", torn)
		}
		return fmt.Errorf("%w: the history has %d entries%s, the log's checkpoint %d leaves%s: the log committed lines the history does not have (it was cut, changed or restored from an older copy)",
			ledger.ErrCorrupt, n, partial, cp.Size, what)
	}
	for e, li := range lg.recorded {
		if e >= n {
			return nil, cut(fmt.Sprintf(", and %s records entry %d as leaf %d", ledger.LeavesName, e, li))
		}
	}
	if !c.SharedLog && cp.Size > n {
		return nil, cut("")
	}
	ctx := context.Background()
	mine := make(map[ledger.Hash]bool, len(commits))
	for e, commit := range commits {
		mine[commit] = true
		li, ok := lg.audit.Leaves[commit]
		if !ok {
			lv.Unpublished++
			continue
		}
		if r, has := lg.recorded[uint64(e)]; has && r != li {
			return nil, fmt.Errorf("%w: entry %d is leaf %d of the log, history.leaves says %d", ledger.ErrCorrupt, e, li, r)
		}
		if err := lg.prover.Inclusion(ctx, li, commit[:]); err != nil {
			return nil, fmt.Errorf("entry %d (leaf %d): %w", e, li, err)
		}
		lv.Published++
	}
	if !c.SharedLog && uint64(lv.Published) < cp.Size {
		first, found := uint64(0), false
		for h, li := range lg.audit.Leaves {
			if !mine[h] && (!found || li < first) {
				first, found = li, true
			}
		}
		what := fmt.Sprintf(", %d of which are no entry of the history", cp.Size-uint64(lv.Published))
		if found {
			what += fmt.Sprintf(" (the first: leaf %d)", first)
		}
		return nil, cut(what + "; give --shared-log if other histories (serve --history-db replicas) append to this log")
	}
	if c.AllPublished && lv.Unpublished > 0 {
		return nil, fmt.Errorf("%w: %d history entries are not in the log's checkpoint of %d entries (--all-published)", ledger.ErrCorrupt, lv.Unpublished, lv.Size)
	}
	return lv, nil
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

// hashArg reads a flag's value that must be a SHA-256 (an RFC 6962 root): 64 hex digits, either case. Anything
// else is a usage error naming the flag (exit 1, docs/cli.md's table), never taken for a hash that differs.
func hashArg(flag, v string) (ledger.Hash, error) {
	var h ledger.Hash
	b, err := hex.DecodeString(v)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("%s %q: not a SHA-256 hash: want 64 hex digits", flag, v)
	}
	copy(h[:], b)
	return h, nil
}

// entryCount is ledger verify's --size: a count of entries, read as kong reads an unsigned flag (decimal, or
// 0x, 0o, 0b and _ as Go writes integers) but refused in outOfRange's words, as --size 0 is (checkHeadFlags):
// a negative count is out of [1, inf), one past 2^64-1 out of [1, 18446744073709551615] (no ledger holds more
// entries), and a value that is no integer is named as not one, never kong's "expected a valid 64 bit uint".
type entryCount uint64

// sizeNote is what --size's range means, on each of its refusals.
const sizeNote = "the entry count of the head given by --root: a published head has at least one entry"

// Decode implements kong.MapperValue.
func (n *entryCount) Decode(ctx *kong.DecodeContext) error {
	t, err := ctx.Scan.PopValue("size")
	if err != nil {
		return err
	}
	s := fmt.Sprint(t.Value) // kong gives a string, or a number from a config
	v, err := strconv.ParseUint(s, 0, 64)
	switch {
	case err == nil:
		*n = entryCount(v)
		return nil
	case errors.Is(err, strconv.ErrRange):
		return rangeMessage("--size", s, fmt.Sprintf("[1, %d]", uint64(math.MaxUint64)), sizeNote)
	}
	if digits, neg := strings.CutPrefix(s, "-"); neg {
		if _, err := strconv.ParseUint(digits, 0, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return rangeMessage("--size", s, "[1, inf)", sizeNote)
		}
	}
	return fmt.Errorf("--size: value %q is not an integer", s)
}

// checkHeadFlags refuses a head given by halves or with no entries: --root without --size, --size without
// --root, and --size 0 (no published head has no entries: its root would prove nothing), each named.
func (c *ledgerVerifyCmd) checkHeadFlags() error {
	switch {
	case c.Size != nil && *c.Size == 0:
		return outOfRange("--size", 0, 1, inf, sizeNote)
	case c.Root != "" && c.Size == nil:
		return errors.New("--root needs --size: the entry count of the head whose root it is")
	case c.Root == "" && c.Size != nil:
		return fmt.Errorf("--size %d needs --root: the root of the head of %d entries", *c.Size, *c.Size)
	}
	return nil
}

// checkHead checks, with --root and --size, that the first Size entries
// (their leaf hashes) still have the published root (RFC 6962 §2.1): the
// only check that catches a changed or removed last entry. A mismatch wraps
// ledger.ErrCorrupt.
func (c *ledgerVerifyCmd) checkHead(leaves []ledger.Hash) error {
	if c.Size == nil {
		return nil
	}
	size := uint64(*c.Size)
	if uint64(len(leaves)) < size {
		return fmt.Errorf("%w: the ledger has %d entries, the head given has %d: entries were removed", ledger.ErrCorrupt, len(leaves), size)
	}
	want, err := hashArg("--root", c.Root)
	if err != nil {
		return err
	}
	if got := ledger.Root(leaves[:size]); got != want {
		return fmt.Errorf("%w: the first %d entries have root %x, not the head given (%s): an entry was changed", ledger.ErrCorrupt, size, got, c.Root)
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
