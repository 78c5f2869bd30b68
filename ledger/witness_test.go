//go:build !windows

package ledger

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	f_log "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/tessera"
	"golang.org/x/mod/sumdb/note"
)

// testWitness runs a Witness for the log key vkey behind an httptest server; it returns the server's URL
// and the witness's cosignature verifier key.
func testWitness(t *testing.T, logVKey string) (string, string, *Witness) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(nil, "witness.test/w1")
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWitness(skey, []string{logVKey}, filepath.Join(t.TempDir(), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	t.Cleanup(srv.Close)
	cosig, err := WitnessVerifierKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, cosig, w
}

// TestTesseraPublishesCheckpointsOurWitnessCosigns: a log whose policy names a bankml witness gets every
// published checkpoint cosigned through tessera's own witness client (the first with "old 0", later ones
// with consistency proofs), and a client requiring that witness accepts them while one requiring another
// witness does not.
func TestTesseraPublishesCheckpointsOurWitnessCosigns(t *testing.T) {
	ctx := context.Background()
	skey, vkey, err := note.GenerateKey(nil, "bankml.test/witnessed")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := note.NewSigner(skey)
	v, _ := note.NewVerifier(vkey)
	url, cosig, _ := testWitness(t, vkey)
	wg, err := tessera.NewWitnessGroupFromPolicy([]byte(fmt.Sprintf("witness w1 %s %s\nquorum w1\n", cosig, url)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	g, err := OpenPOSIXLog(dir, s, v, LogOptions{CheckpointInterval: 100 * time.Millisecond, BatchMaxAge: 5 * time.Millisecond, Witnesses: &wg})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	wv, err := WitnessVerifier(cosig)
	if err != nil {
		t.Fatal(err)
	}
	_, otherV, _ := note.GenerateKey(nil, "witness.test/other")
	other, _ := WitnessVerifier(otherV)
	cosigned := 0
	for round := range 3 {
		for i := range 5 {
			if _, err := g.Add(ctx, Hash{byte(round), byte(i), 1}); err != nil {
				t.Fatal(err)
			}
		}
		cp := waitCheckpoint(t, g, uint64(5*(round+1)))
		if err := RequireCosignatures(cp.Raw, wv); err != nil {
			t.Fatalf("round %d: checkpoint of %d: %v\n%s", round, cp.Size, err, cp.Raw)
		}
		if err := RequireCosignatures(cp.Raw, other); !errors.Is(err, ErrProof) {
			t.Errorf("requiring another witness: %v, want ErrProof", err)
		}
		cosigned++
	}
	t.Logf("checkpoints cosigned by the bankml witness through tessera's witness client: %d of 3", cosigned)
}

// TestWitnessRefusesWhatTheProtocolRefuses checks the witness's answers of C2SP tlog-witness: unknown log
// 404, no valid log signature 403, old size not the one cosigned 409 with the size, a consistency proof
// that does not verify 422, a fork at the same size 409.
func TestWitnessRefusesWhatTheProtocolRefuses(t *testing.T) {
	skey, vkey, _ := note.GenerateKey(nil, "bankml.test/w")
	s, _ := note.NewSigner(skey)
	url, _, _ := testWitness(t, vkey)
	otherSKey, _, _ := note.GenerateKey(nil, "bankml.test/w")
	otherS, _ := note.NewSigner(otherSKey)
	strangerSKey, _, _ := note.GenerateKey(nil, "bankml.test/stranger")
	strangerS, _ := note.NewSigner(strangerSKey)

	// Leaves 0..7 and the trees of 4 and 8 of them.
	var leaves []Hash
	for i := range 8 {
		leaves = append(leaves, LeafHash([]byte{byte(i)}))
	}
	checkpoint := func(signer note.Signer, size int, root Hash) string {
		n, err := note.Sign(&note.Note{Text: string(f_log.Checkpoint{Origin: signer.Name(), Size: uint64(size), Hash: root[:]}.Marshal())}, signer)
		if err != nil {
			t.Fatal(err)
		}
		return string(n)
	}
	post := func(old int, proof [][]byte, cp string) (int, string) {
		var b strings.Builder
		fmt.Fprintf(&b, "old %d\n", old)
		for _, p := range proof {
			b.WriteString(base64.StdEncoding.EncodeToString(p) + "\n")
		}
		b.WriteString("\n" + cp)
		resp, err := http.Post(url+"/add-checkpoint", "text/plain", strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// The consistency proof from 4 to 8: the root of leaves 4..7 (RFC 6962 §2.1.4.1: 4 is a power of two).
	proof48 := [][]byte{hashOf(Root(leaves[4:8]))}
	badProof := [][]byte{hashOf(Root(leaves[0:4]))}
	for _, c := range []struct {
		name   string
		old    int
		proof  [][]byte
		cp     string
		status int
		body   string
	}{
		{"an unknown log", 0, nil, checkpoint(strangerS, 4, Root(leaves[:4])), 404, ""},
		{"a checkpoint signed by another key of the same name", 0, nil, checkpoint(otherS, 4, Root(leaves[:4])), 403, ""},
		{"the first checkpoint, old 0", 0, nil, checkpoint(s, 4, Root(leaves[:4])), 200, "— witness.test/w1 "},
		{"old 0 again, after cosigning 4", 0, nil, checkpoint(s, 8, Root(leaves)), 409, "4\n"},
		{"a proof that does not verify", 4, badProof, checkpoint(s, 8, Root(leaves)), 422, ""},
		{"old larger than the checkpoint", 4, nil, checkpoint(s, 3, Root(leaves[:3])), 400, ""},
		{"a fork at the size cosigned", 4, nil, checkpoint(s, 4, Root(leaves[1:5])), 409, ""},
		{"the checkpoint of 8 with its consistency proof", 4, proof48, checkpoint(s, 8, Root(leaves)), 200, "— witness.test/w1 "},
		{"the same checkpoint again", 8, nil, checkpoint(s, 8, Root(leaves)), 200, "— witness.test/w1 "},
	} {
		st, body := post(c.old, c.proof, c.cp)
		if st != c.status || !strings.HasPrefix(body, c.body) {
			t.Errorf("%s: %d %q, want %d %q…", c.name, st, body, c.status, c.body)
		}
	}
}

func hashOf(h Hash) []byte { return h[:] }
