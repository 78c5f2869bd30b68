package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
)

// receiptCmd is `bankml receipt verify RECEIPT` (provenance.VerifyReceipt, ledger's log client).
type receiptCmd struct {
	Verify receiptVerifyCmd `cmd:"" help:"Check a signed receipt: its Ed25519 signature by --key, and with --answer/--request the hashes of the text and request, with --log its leaf in the transparency log; print the verdict as JSON; exit 2 when a check fails or nothing was checked, 1 when a check could not be made (the answer's text without --answer, a log that cannot be read)."`
}

type receiptVerifyCmd struct {
	Receipt  string   `arg:"" name:"RECEIPT" type:"path" help:"A file holding the receipt (a bankml_receipt object, an answer carrying one as bankml_receipt, or a streamed answer saved as received: SSE data: lines or Ollama's NDJSON, whose last chunk carries it); - for standard input."`
	Key      string   `name:"key" placeholder:"PUB" help:"The operator's public key: a file (FILE.pub, FILE.pem, or the private key) or a verifier key inline. Without it the signature is not checked (the verdict says so; with no other check either, ok is false)."`
	Answer   string   `name:"answer" type:"path" placeholder:"FILE" help:"The answer text exactly as received: its sha256 must be the receipt's response_sha256. Without it the text is not checked (the verdict says NOT CHECKED, exit 1)."`
	Request  string   `name:"request" type:"path" placeholder:"FILE" help:"The request body exactly as sent: its sha256 must be the receipt's request_sha256."`
	Log      string   `name:"log" placeholder:"URL" help:"The transparency log (its tlog-tiles prefix, e.g. http://127.0.0.1:8080/bankml/ledger/, or a folder): the receipt's entry_sha256 must be leaf ledger_index of its latest checkpoint, signed by --key."`
	Witness  []string `name:"witness" placeholder:"VKEY" help:"With --log: require the checkpoint to be cosigned by this witness (its verifier key or a file holding it); repeatable."`
	TimeoutS int      `name:"timeout" default:"30" help:"Seconds to wait, with --log, for a signed checkpoint that includes the receipt's leaf (a server publishes one every second or so) and for the log's answers. A log that cannot be read leaves the inclusion not checked (exit 1); one that answers without the leaf in time fails it (exit 2)."`
}

// maxTimeoutS is the longest --timeout a time.Duration holds.
const maxTimeoutS = math.MaxInt64 / int64(time.Second)

// receiptVerdict is receipt verify's JSON.
type receiptVerdict struct {
	OK        bool              `json:"ok"`
	Reason    string            `json:"reason,omitempty"`
	Signature string            `json:"signature"` // "verified", "unsigned", "not checked: no --key"
	KeyName   string            `json:"key_name,omitempty"`
	KeyID     string            `json:"key_id,omitempty"`
	Checks    map[string]string `json:"checks"`
}

// receiptFields are the members receipt verify reads besides the signature's.
type receiptFields struct {
	Signed         bool    `json:"signed"`
	RequestSHA256  string  `json:"request_sha256"`
	ResponseSHA256 string  `json:"response_sha256"`
	LedgerIndex    *uint64 `json:"ledger_index"`
	EntrySHA256    string  `json:"entry_sha256"`
	LogOrigin      string  `json:"log_origin"`
}

// readReceipt reads RECEIPT: a receipt object, an object with a bankml_receipt member, or a saved stream
// (streamReceipt).
func readReceipt(path string, stdin io.Reader) ([]byte, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(b, &outer); err != nil {
		if r, ok, serr := streamReceipt(path, b); ok {
			return r, serr
		}
		return nil, fmt.Errorf("%s: neither a JSON object (an answer, or its receipt) nor a saved stream (SSE data: lines, or Ollama's NDJSON lines): %w", path, err)
	}
	if r, ok := outer["bankml_receipt"]; ok {
		if string(r) == "null" {
			return nil, fmt.Errorf("%s: its bankml_receipt is null", path)
		}
		return r, nil
	}
	// A receipt itself always has these members (serve.Receipt).
	for _, m := range []string{"signed", "request_sha256", "response_sha256"} {
		if _, ok := outer[m]; !ok {
			return nil, fmt.Errorf("%s holds no bankml_receipt (and is no receipt itself: it has no %s member)", path, m)
		}
	}
	return b, nil
}

// streamReceipt takes the receipt of a streamed answer saved as it arrived: llama-server's and OpenAI's SSE
// (events of "data: JSON" lines, "data: [DONE]" at the end) or Ollama's NDJSON (one JSON object a line). serve
// puts the receipt on the stream's last answer chunk (the final choice chunk, and OpenAI's usage chunk after
// it, the same receipt; Ollama's done line), once the whole answer was sent: so the chunk that carries it must
// end the answer (only chunks carrying the same receipt may follow), or the file holds more than the receipt
// covers. ok is false when b is not such a stream (then the caller's error stands); err says why a stream has
// no receipt to take.
func streamReceipt(path string, b []byte) (r json.RawMessage, ok bool, err error) {
	var chunks [][]byte
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	least := 2 // NDJSON of one line would have read as one JSON object
	if strings.HasPrefix(text, "data:") || strings.Contains(text, "\ndata:") {
		least = 1
		var data []string
		dispatch := func() {
			if len(data) > 0 {
				if d := strings.Join(data, "\n"); d != "[DONE]" {
					chunks = append(chunks, []byte(d))
				}
			}
			data = nil
		}
		for line := range strings.SplitSeq(text, "\n") { // the SSE event stream format (WHATWG HTML §9.2.6)
			field, value, _ := strings.Cut(line, ":")
			switch {
			case line == "":
				dispatch()
			case field == "data":
				data = append(data, strings.TrimPrefix(value, " "))
			}
		}
		dispatch()
	} else {
		for line := range strings.SplitSeq(text, "\n") {
			if strings.TrimSpace(line) != "" {
				chunks = append(chunks, []byte(line))
			}
		}
	}
	if len(chunks) < least {
		return nil, false, nil
	}
	var errMsg string
	for i, c := range chunks {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(c, &obj); err != nil {
			if i == 0 {
				return nil, false, nil
			}
			return nil, true, fmt.Errorf("%s: chunk %d of the stream is no JSON object (the file was cut short or changed): %w", path, i+1, err)
		}
		if e, has := obj["error"]; has && errMsg == "" {
			errMsg = string(e)
		}
		rc, has := obj["bankml_receipt"]
		switch {
		case r == nil && has && string(rc) != "null":
			r = rc
		case r != nil && !bytes.Equal(rc, r):
			return nil, true, fmt.Errorf("%s: chunk %d of the stream comes after the chunk that carries the receipt and is not covered by it (save one answer's stream per file, as received)", path, i+1)
		}
	}
	if r == nil {
		why := "it was cut short before its last chunk"
		if errMsg != "" {
			why = "it ended with an error: " + errMsg
		}
		return nil, true, fmt.Errorf("%s: a stream of %d chunks with no bankml_receipt (the last chunk of an answer carries it: %s)", path, len(chunks), why)
	}
	return r, true, nil
}

func (c *receiptVerifyCmd) Run(stdin io.Reader, stdout io.Writer) error {
	// A wait of no time would read no checkpoint and report the leaf missing (exit 2): a bad flag value (1).
	if err := checkRanges(intRange{"--timeout", c.TimeoutS, 1, maxTimeoutS, "seconds to wait for the log"}); err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	raw, err := readReceipt(c.Receipt, stdin)
	if err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	var rf receiptFields
	if err := json.Unmarshal(raw, &rf); err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	v := receiptVerdict{OK: true, Checks: map[string]string{}}
	failed := false
	fail := func(check, reason string) {
		v.Checks[check] = "FAILED: " + reason
		if !failed { // a check that failed is the reason, before one that could not be made
			v.OK, v.Reason, failed = false, check+": "+reason, true
		}
	}
	// notChecked records a check that could not be made (the log could not be read, no --answer to check the
	// text against): no verdict on the receipt, exit 1 unless another check failed.
	notChecked := func(check, reason string) {
		v.Checks[check] = "NOT CHECKED: " + reason
		if v.OK {
			v.OK, v.Reason = false, check+": not checked: "+reason
		}
	}
	var key provenance.PublicKey
	switch {
	case !rf.Signed:
		v.Signature = "unsigned"
		if c.Key != "" {
			fail("signature", "the receipt is not signed (the server had no --key)")
		}
	case c.Key == "":
		v.Signature = "not checked: no --key"
	default:
		if key, err = publicKeyArg("--key", c.Key); err != nil {
			return fmt.Errorf("receipt verify: %w", err)
		}
		rk, err := provenance.VerifyReceipt(raw, key)
		v.KeyName, v.KeyID = rk.Name, rk.ID
		if err != nil {
			fail("signature", err.Error())
			v.Signature = "FAILED"
		} else {
			v.Signature = "verified"
		}
	}
	for _, h := range []struct{ check, file, want string }{
		{"answer", c.Answer, rf.ResponseSHA256}, {"request", c.Request, rf.RequestSHA256},
	} {
		if h.file == "" {
			continue
		}
		b, err := os.ReadFile(h.file)
		if err != nil {
			return fmt.Errorf("receipt verify: %w", err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != h.want {
			fail(h.check, fmt.Sprintf("%s hashes to %s, the receipt says %s", h.file, got, h.want))
		} else {
			v.Checks[h.check] = "sha256 matches"
		}
	}
	if c.Log != "" {
		if err := c.checkLog(rf, key, &v, fail, notChecked); err != nil {
			return err
		}
	}
	if v.OK && v.Signature != "verified" && len(v.Checks) == 0 {
		// Without --key, --answer, --request or --log nothing was checked: the receipt's hashes are of
		// bytes only the client holds, its signature needs the key.
		v.OK, v.Reason = false, "nothing verified: give --key (and --log) to check the signature (and the leaf), --answer and --request to check the hashes"
	} else if c.Answer == "" {
		// A verified signature (or leaf) vouches for the receipt, not for a text the client holds: the answer a
		// file carries (a saved stream's deltas, an answer's text) may have been changed after the receipt was
		// made. Without --answer that is said, as a log that cannot be read is: not checked, exit 1.
		notChecked("answer", "no --answer: the answer's text is covered only by the receipt's response_sha256; give the text as received with --answer FILE")
	}
	if werr := writeJSON(stdout, v); werr != nil {
		return werr
	}
	switch {
	case failed || (!v.OK && len(v.Checks) == 0):
		return &exitError{code: 2, err: fmt.Errorf("receipt verify: %s", v.Reason)}
	case !v.OK: // a check could not be made: I/O
		return fmt.Errorf("receipt verify: %s", v.Reason)
	}
	return nil
}

// checkLog checks the receipt's leaf in the log at --log: a checkpoint signed by --key (and cosigned by
// every --witness) that includes leaf ledger_index, whose data is entry_sha256. A log that answers and
// disproves it (a checkpoint not signed by the key or not cosigned, no signed checkpoint including the leaf
// within --timeout, a proof that does not verify) fails the check; a log that cannot be read (no server,
// a wrong address, an HTTP error, no answer within --timeout) leaves it not checked.
func (c *receiptVerifyCmd) checkLog(rf receiptFields, key provenance.PublicKey, v *receiptVerdict, fail, notChecked func(string, string)) error {
	if c.Key == "" {
		return errors.New("receipt verify: --log needs --key (the log's checkpoints are signed by the operator key)")
	}
	if rf.LedgerIndex == nil || rf.EntrySHA256 == "" {
		fail("inclusion", "the receipt names no log leaf (the server kept no transparency log)")
		return nil
	}
	if key.Name == "" {
		key.Name = rf.LogOrigin // a PEM key has no name: the log's origin is the key's name
	}
	lv, err := key.NoteVerifier()
	if err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	witnesses, err := witnessVerifiers(c.Witness)
	if err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	data, err := hex.DecodeString(rf.EntrySHA256)
	if err != nil || len(data) != sha256.Size {
		fail("inclusion", "entry_sha256 is not a hex sha256")
		return nil
	}
	f, closeF, err := ledger.OpenLogFetcher(c.Log)
	if err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	defer closeF()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(c.TimeoutS)*time.Second)
	defer cancel()
	unread := func(what string, err error) {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer within --timeout %d s", c.TimeoutS)
		}
		notChecked("inclusion", fmt.Sprintf("the log %s could not be read (%s): %v", c.Log, what, err))
	}
	var cp ledger.Checkpoint
	read := false
	for { // a checkpoint is published every second or so: wait for one that includes the leaf
		raw, err := f.ReadCheckpoint(ctx)
		if err != nil && !(read && ctx.Err() != nil) {
			unread("its checkpoint", err)
			return nil
		}
		if err == nil {
			read = true
			if cp, err = ledger.OpenCheckpoint(raw, lv.Name(), lv); err != nil {
				fail("checkpoint", err.Error())
				return nil
			}
			if cp.Size > *rf.LedgerIndex {
				if err := ledger.RequireCosignatures(raw, witnesses...); err != nil {
					fail("checkpoint", err.Error())
					return nil
				}
				break
			}
		}
		select {
		case <-ctx.Done():
			fail("inclusion", fmt.Sprintf("no checkpoint signed by %s includes leaf %d after %d s (the latest has %d entries)", lv.Name(), *rf.LedgerIndex, c.TimeoutS, cp.Size))
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
	v.Checks["checkpoint"] = fmt.Sprintf("signed by %s, %d entries", lv.Name(), cp.Size)
	p, err := ledger.NewProver(ctx, f, cp)
	if err != nil {
		unread("its tiles", err)
		return nil
	}
	if err := p.Inclusion(ctx, *rf.LedgerIndex, data); err != nil {
		if errors.Is(err, ledger.ErrProof) {
			fail("inclusion", err.Error())
		} else {
			unread("its tiles", err)
		}
		return nil
	}
	v.Checks["inclusion"] = fmt.Sprintf("leaf %d of %d (RFC 6962, tiles read through tessera's client)", *rf.LedgerIndex, cp.Size)
	return nil
}

// witnessVerifiers reads --witness values (verifier keys inline or in files) as cosignature/v1 verifiers.
func witnessVerifiers(keys []string) ([]note.Verifier, error) {
	var vs []note.Verifier
	for _, k := range keys {
		text := k
		if b, err := os.ReadFile(k); err == nil {
			text = string(b)
		}
		v, err := ledger.WitnessVerifier(text)
		if err != nil {
			return nil, fmt.Errorf("--witness %q: %w", k, err)
		}
		vs = append(vs, v)
	}
	return vs, nil
}
