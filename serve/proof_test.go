//go:build !windows

package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
)

// proofServer serves stories260K with a history, a POSIX transparency log and an operator key. With
// witnessed, a bankml witness (ledger.Witness behind an httptest server) must cosign every checkpoint; its
// cosignature verifier key is returned.
func proofServer(t *testing.T, ao AdmitOptions, witnessed bool) (*testServer, *provenance.Signer, string, string) {
	t.Helper()
	l, dir := openLedger(t)
	keyPath := filepath.Join(t.TempDir(), "op.key")
	if _, err := provenance.WriteKeyFiles(keyPath, "bankml.test/serve"); err != nil {
		t.Fatal(err)
	}
	signer, err := provenance.LoadSigner(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := signer.Public().NoteVerifier()
	if err != nil {
		t.Fatal(err)
	}
	lo := ledger.LogOptions{CheckpointInterval: 100 * time.Millisecond, BatchMaxAge: 5 * time.Millisecond}
	cosig := ""
	if witnessed {
		wskey, wvkey, err := note.GenerateKey(nil, "witness.test/w1")
		if err != nil {
			t.Fatal(err)
		}
		w, err := ledger.NewWitness(wskey, []string{signer.Public().VerifierKey()}, filepath.Join(t.TempDir(), "witness.json"))
		if err != nil {
			t.Fatal(err)
		}
		ws := httptest.NewServer(w.Handler())
		t.Cleanup(ws.Close)
		if cosig, err = ledger.WitnessVerifierKey(wvkey); err != nil {
			t.Fatal(err)
		}
		wg, err := tessera.NewWitnessGroupFromPolicy(fmt.Appendf(nil, "witness w1 %s %s\nquorum w1\n", cosig, ws.URL))
		if err != nil {
			t.Fatal(err)
		}
		lo.Witnesses = &wg
	}
	g, err := ledger.OpenPOSIXLog(filepath.Join(dir, "log"), signer.NoteSigner(), v, lo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	ts := newTestServer(t, storiesPath(t), ao, Options{Ledger: l, TLog: g, Signer: signer})
	return ts, signer, dir, cosig
}

// streamedReceipt posts a streamed chat request and returns the text received and the receipt's bytes.
func streamedReceipt(t *testing.T, ts *testServer, body []byte) (string, []byte) {
	t.Helper()
	st, b := ts.post(t, "/v1/chat/completions", body)
	if st != 200 {
		t.Fatalf("status %d: %s", st, b)
	}
	var text strings.Builder
	var receipt []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Receipt json.RawMessage `json:"bankml_receipt"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		for _, c := range ev.Choices {
			if c.Delta.Content != nil {
				text.WriteString(*c.Delta.Content)
			}
		}
		if ev.Receipt != nil {
			receipt = ev.Receipt
		}
	}
	if receipt == nil {
		t.Fatalf("no receipt in the stream: %s", b)
	}
	return text.String(), receipt
}

// TestSignedReceiptsNameTheirLeafInTheLog: every answer's receipt (streamed and not) is signed by the
// operator key, names its leaf (ledger_index, entry_sha256 = the sha256 of its history line), and the
// leaf verifies with tessera's own client over the server's /bankml/ledger/ tiles, as does the
// consistency of an early checkpoint with a later one, and the server's own proof route.
func TestSignedReceiptsNameTheirLeafInTheLog(t *testing.T) {
	ts, signer, dir, _ := proofServer(t, AdmitOptions{}, false)
	ctx := context.Background()
	type answer struct {
		text    string
		receipt []byte
	}
	var answers []answer
	for i, stream := range []bool{false, true, true, false} {
		body := mustJSON(t, map[string]any{"messages": []map[string]string{{"role": "user", "content": strings.Repeat("Tell a story. ", i+1)}},
			"max_tokens": 6, "stream": stream, "temperature": 0})
		if stream {
			text, rc := streamedReceipt(t, ts, body)
			answers = append(answers, answer{text, rc})
			continue
		}
		st, b := ts.post(t, "/v1/chat/completions", body)
		var a struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
			Receipt json.RawMessage `json:"bankml_receipt"`
		}
		if err := json.Unmarshal(b, &a); st != 200 || err != nil || len(a.Choices) != 1 {
			t.Fatalf("status %d %v: %s", st, err, b)
		}
		answers = append(answers, answer{a.Choices[0].Message.Content, a.Receipt})
	}

	f, err := client.NewHTTPFetcher(must(url.Parse(ts.url+"/bankml/ledger/")), nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := signer.Public().NoteVerifier()
	var early []byte
	lines := map[string]ledger.Entry{}
	if err := ledger.Entries(dir, func(e ledger.Entry) error { lines[hex.EncodeToString(e.Commitment[:])] = e; return nil }); err != nil {
		t.Fatal(err)
	}
	verified := 0
	for i, a := range answers {
		var rc Receipt
		if err := json.Unmarshal(a.receipt, &rc); err != nil {
			t.Fatal(err)
		}
		if _, err := provenance.VerifyReceipt(a.receipt, signer.Public()); err != nil || !rc.Signed || rc.KeyID != signer.KeyID() {
			t.Fatalf("answer %d: receipt signature: %v (%s)", i, err, a.receipt)
		}
		if sum := sha256.Sum256([]byte(a.text)); rc.ResponseSHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("answer %d: response_sha256 is not the text's", i)
		}
		e, ok := lines[rc.EntrySHA256]
		if !ok || rc.LedgerIndex == nil || rc.LogOrigin != "bankml.test/serve" || string(e.Answer) != a.text {
			t.Fatalf("answer %d: entry_sha256 %s names no history line holding the answer (receipt %s)", i, rc.EntrySHA256, a.receipt)
		}
		// Wait for a checkpoint that covers the leaf, then verify with tessera's client over HTTP.
		var cp *ledger.Checkpoint
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			c, cpRaw, _, err := client.FetchCheckpoint(ctx, f.ReadCheckpoint, v, "bankml.test/serve")
			if err == nil && c.Size > *rc.LedgerIndex {
				cp = &ledger.Checkpoint{Raw: cpRaw, Size: c.Size, Root: ledger.Hash(c.Hash)}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no checkpoint covers leaf %d: %v", *rc.LedgerIndex, err)
			}
		}
		if early == nil {
			early = cp.Raw
		}
		pb, err := client.NewProofBuilder(ctx, cp.Size, f.ReadTile)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pb.InclusionProof(ctx, *rc.LedgerIndex)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, *rc.LedgerIndex, cp.Size, rfc6962.DefaultHasher.HashLeaf(e.Commitment[:]), p, cp.Root[:]); err != nil {
			t.Errorf("answer %d: tessera's client: %v", i, err)
		}
		// The server's proof route gives the same proof, with its checkpoint.
		st, pbody := ts.get(t, "/bankml/ledger/proof?index="+jsonNum(*rc.LedgerIndex))
		var lp logProof
		if err := json.Unmarshal(pbody, &lp); st != 200 || err != nil || lp.Leaf != rc.EntrySHA256 {
			t.Fatalf("GET proof: %d %s", st, pbody)
		}
		scp, err := ledger.OpenCheckpoint([]byte(lp.Checkpoint), "bankml.test/serve", v)
		if err != nil {
			t.Fatal(err)
		}
		var path [][]byte
		for _, h := range lp.Path {
			path = append(path, must(hex.DecodeString(h)))
		}
		if err := ledger.VerifyLeafInclusion(e.Commitment[:], lp.Index, scp.Size, path, scp.Root); err != nil {
			t.Errorf("answer %d: the server's proof: %v", i, err)
		}
		verified++
	}
	// Consistency of the first checkpoint seen with the latest, through tessera's LogStateTracker.
	lst, err := client.NewLogStateTracker(ctx, f.ReadTile, early, v, "bankml.test/serve", client.UnilateralConsensus(f.ReadCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := lst.Update(ctx); err != nil {
		t.Errorf("consistency: %v", err)
	}
	// A partial entry bundle holds exactly the entries its width says.
	st, b := ts.get(t, "/bankml/ledger/tile/entries/000.p/1")
	if st != 200 || len(b) != 2+32 {
		t.Errorf("tile/entries/000.p/1: %d, %d bytes, want 34", st, len(b))
	}
	if st, _ := ts.get(t, "/bankml/ledger/tile/0/x001/zzz"); st != 404 {
		t.Errorf("a malformed tile path: %d, want 404", st)
	}
	t.Logf("signed receipts with leaves verified by tessera's client over HTTP: %d of %d", verified, len(answers))
}

func jsonNum(u uint64) string { return string(must(json.Marshal(u))) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestReceiptsWithoutAKeySayUnsigned: no key, no signature fields, signed false; the key route says why.
func TestReceiptsWithoutAKeySayUnsigned(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	st, b := ts.post(t, "/v1/chat/completions", mustJSON(t, map[string]any{"messages": []map[string]string{{"role": "user", "content": "Hi"}}, "max_tokens": 2}))
	var a struct {
		Receipt map[string]any `json:"bankml_receipt"`
	}
	if err := json.Unmarshal(b, &a); st != 200 || err != nil {
		t.Fatalf("%d %v %s", st, err, b)
	}
	if a.Receipt["signed"] != false || a.Receipt["signature"] != nil || a.Receipt["key_id"] != nil {
		t.Errorf("receipt without a key: %v", a.Receipt)
	}
	if st, b := ts.get(t, "/bankml/ledger/key"); st != 404 || !strings.Contains(string(b), "--key") {
		t.Errorf("GET /bankml/ledger/key without a key: %d %s", st, b)
	}
}
