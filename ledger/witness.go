package ledger

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	f_log "github.com/transparency-dev/formats/log"
	f_note "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Witness is a transparency-log witness (C2SP tlog-witness): it cosigns a log's checkpoint (C2SP
// tlog-cosignature, cosignature/v1) only after checking its signature by a log key it knows and, with a
// consistency proof, that it extends the last checkpoint it cosigned for that log; it keeps that
// checkpoint's size and root per log in a state file, written before it answers. bankml serve's log asks
// it through tessera's witness client (--witness-policy); any tlog-witness client can.
type Witness struct {
	signer *f_note.Signer
	logs   map[string]note.Verifier // origin -> the log's key
	state  string                   // the state file

	mu   sync.Mutex
	seen map[string]witnessed
}

// witnessed is the latest checkpoint cosigned for one log.
type witnessed struct {
	Size uint64 `json:"size"`
	Root []byte `json:"root"` // 32 bytes (base64 in the state file)
}

// NewWitness makes a witness signing with skey (a signed-note Ed25519 private key, as bankml key new
// writes; its cosignatures use the derived cosignature/v1 key: WitnessVerifierKey), trusting the logs whose
// verifier keys are logKeys (each key's name is its log's origin), keeping its state in stateFile (created
// when missing).
func NewWitness(skey string, logKeys []string, stateFile string) (*Witness, error) {
	s, err := f_note.NewSignerForCosignatureV1(strings.TrimSpace(skey))
	if err != nil {
		return nil, fmt.Errorf("ledger: witness key: %w", err)
	}
	w := &Witness{signer: s, logs: map[string]note.Verifier{}, state: stateFile, seen: map[string]witnessed{}}
	for _, k := range logKeys {
		v, err := note.NewVerifier(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("ledger: witness: log key %q: %w", k, err)
		}
		if _, dup := w.logs[v.Name()]; dup {
			return nil, fmt.Errorf("ledger: witness: two keys for the log %s", v.Name())
		}
		w.logs[v.Name()] = v
	}
	if len(w.logs) == 0 {
		return nil, errors.New("ledger: witness: no log key given: a witness cosigns only the logs it knows")
	}
	b, err := os.ReadFile(stateFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("ledger: witness state: %w", err)
	default:
		if err := json.Unmarshal(b, &w.seen); err != nil {
			return nil, fmt.Errorf("ledger: witness state %s: %w", stateFile, err)
		}
	}
	return w, nil
}

// WitnessVerifierKey is the verifier key of a witness's cosignatures (a cosignature/v1 vkey, type 0x04)
// for the witness's ordinary Ed25519 verifier key vkey: what a log's witness policy and a client
// requiring cosignatures name.
func WitnessVerifierKey(vkey string) (string, error) {
	k, err := f_note.VKeyToCosignatureV1(strings.TrimSpace(vkey))
	if err != nil {
		return "", fmt.Errorf("ledger: witness key: %w", err)
	}
	return k, nil
}

// WitnessVerifier is the verifier of a witness's cosignatures, given its verifier key (the ordinary
// Ed25519 one, or the cosignature/v1 one): what RequireCosignatures takes.
func WitnessVerifier(vkey string) (note.Verifier, error) {
	v, err := f_note.NewVerifierForCosignatureV1(strings.TrimSpace(vkey))
	if err != nil {
		return nil, fmt.Errorf("ledger: witness key: %w", err)
	}
	return v, nil
}

// Name is the witness's key name.
func (w *Witness) Name() string { return w.signer.Name() }

// Handler serves POST /add-checkpoint (C2SP tlog-witness).
func (w *Witness) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add-checkpoint", w.addCheckpoint)
	return mux
}

// maxAddCheckpoint bounds a request body: 63 proof lines, a checkpoint and its signatures fit well within.
const maxAddCheckpoint = 64 << 10

func (w *Witness) addCheckpoint(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, maxAddCheckpoint))
	if err != nil {
		http.Error(rw, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	old, proof, cpRaw, err := parseAddCheckpoint(body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	origin, _, _ := strings.Cut(string(cpRaw), "\n")
	v, ok := w.logs[origin]
	if !ok {
		http.Error(rw, fmt.Sprintf("unknown log %q", origin), http.StatusNotFound)
		return
	}
	n, err := note.Open(cpRaw, note.VerifierList(v))
	if err != nil {
		http.Error(rw, "no valid signature of the log's key: "+err.Error(), http.StatusForbidden)
		return
	}
	var cp f_log.Checkpoint
	if _, err := cp.Unmarshal([]byte(n.Text)); err != nil {
		http.Error(rw, "not a checkpoint: "+err.Error(), http.StatusBadRequest)
		return
	}
	if old > cp.Size {
		http.Error(rw, fmt.Sprintf("old size %d is larger than the checkpoint's %d", old, cp.Size), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.seen[origin]
	if old != prev.Size {
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(http.StatusConflict)
		fmt.Fprintf(rw, "%d\n", prev.Size)
		return
	}
	switch {
	case old == cp.Size:
		if old > 0 && !bytes.Equal(prev.Root, cp.Hash) {
			http.Error(rw, "same size as the checkpoint cosigned before, another root: the log forked", http.StatusConflict)
			return
		}
	case old == 0:
		if len(proof) != 0 {
			http.Error(rw, "a consistency proof from size 0 must be empty", http.StatusBadRequest)
			return
		}
	default:
		var from, to Hash
		copy(from[:], prev.Root)
		copy(to[:], cp.Hash)
		if err := VerifyConsistency(old, cp.Size, from, to, proof); err != nil {
			http.Error(rw, fmt.Sprintf("the consistency proof from %d to %d does not verify: %v", old, cp.Size, err), http.StatusUnprocessableEntity)
			return
		}
	}
	next := witnessed{Size: cp.Size, Root: cp.Hash}
	if err := w.persist(origin, next); err != nil {
		http.Error(rw, "the witness could not save its state: "+err.Error(), http.StatusInternalServerError)
		return
	}
	signed, err := note.Sign(&note.Note{Text: n.Text}, w.signer)
	if err != nil {
		http.Error(rw, "cosigning: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = rw.Write(signed[len(n.Text)+1:]) // the cosignature line(s) after the note's blank line
}

// parseAddCheckpoint splits an add-checkpoint body: "old N", up to 63 base64 hashes, an empty line, the
// checkpoint.
func parseAddCheckpoint(body []byte) (uint64, [][]byte, []byte, error) {
	head, cp, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return 0, nil, nil, errors.New("no empty line before the checkpoint")
	}
	sc := bufio.NewScanner(bytes.NewReader(head))
	if !sc.Scan() {
		return 0, nil, nil, errors.New("no old size line")
	}
	oldText, ok := strings.CutPrefix(sc.Text(), "old ")
	old, err := strconv.ParseUint(oldText, 10, 64)
	if !ok || err != nil || (len(oldText) > 1 && oldText[0] == '0') {
		return 0, nil, nil, fmt.Errorf("the old size line %q is not \"old N\"", sc.Text())
	}
	var proof [][]byte
	for sc.Scan() {
		h, err := base64.StdEncoding.DecodeString(sc.Text())
		if err != nil || len(h) != len(Hash{}) {
			return 0, nil, nil, fmt.Errorf("proof line %q is not a base64 hash", sc.Text())
		}
		proof = append(proof, h)
	}
	if len(proof) > 63 {
		return 0, nil, nil, fmt.Errorf("%d consistency proof lines: at most 63", len(proof))
	}
	return old, proof, cp, nil
}

// persist saves the state with origin's new checkpoint (a temporary file, synced, renamed over the old
// one), then keeps it in memory.
func (w *Witness) persist(origin string, c witnessed) error {
	seen := make(map[string]witnessed, len(w.seen)+1)
	for k, v := range w.seen {
		seen[k] = v
	}
	seen[origin] = c
	b, err := json.MarshalIndent(seen, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(w.state), ".witness-state-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), w.state); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	w.seen = seen
	return nil
}
