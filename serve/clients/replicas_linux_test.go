package clients

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/mariadbtest"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
)

// stop sends SIGTERM (bankml serve's graceful shutdown: answers in flight finish, the log publishes a
// checkpoint covering every entry added) and waits for the process.
func (p *serveProcess) stop(t testing.TB) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(time.Minute):
		t.Errorf("bankml serve did not stop in a minute after SIGTERM\n%s", p.Stderr())
		p.kill()
	}
}

// received is an answer a client got whole: the request it sent, the text and the receipt.
type received struct {
	body, receipt []byte
	text          string
}

// TestReplicasShareOneLogThroughKills runs three bankml serve processes appending to one MariaDB-backed
// transparency log under a bounded load (4 clients, 60 requests), kills one replica with SIGKILL and the
// database with SIGKILL mid-run, restarts both, and then checks every answer a client received: its
// receipt is signed by the operator key, hashes the text and request received and sent, and names a leaf
// that is in the log (tessera's ProofBuilder inclusion proof against the signed checkpoint), no leaf twice
// (the whole log audited); and bankml ledger verify --all-published passes for every replica's history.
func TestReplicasShareOneLogThroughKills(t *testing.T) {
	db := mariadbtest.Start(t, "bankml")
	model := testdata.Model(t, "stories260K.gguf")
	keyPath := filepath.Join(t.TempDir(), "operator.key")
	pub, err := provenance.WriteKeyFiles(keyPath, "bankml.test/replicas")
	if err != nil {
		t.Fatal(err)
	}
	const replicas, clients, requests = 3, 4, 60
	dirs := make([]string, replicas)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	start := func(i int) *serveProcess {
		return startServe(t, model, "--history", dirs[i], "--key", keyPath, "--history-db", db.DSN(),
			"--checkpoint-interval", "1s", "-np", "1", "-c", "256", "-t", "1")
	}
	var mu sync.Mutex
	var all []*serveProcess // every process started, for their logs
	procs := make([]*serveProcess, replicas)
	alive := make([]bool, replicas)
	for i := range procs {
		procs[i], alive[i] = start(i), true
		all = append(all, procs[i])
	}
	pick := func(n int) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		for k := range replicas {
			if i := (n + k) % replicas; alive[i] {
				return i, procs[i].URL
			}
		}
		return -1, ""
	}

	var answers []received
	var sent, failed, done atomic.Int64
	events := make(chan struct{})
	go func() { // the faults, at points of the run measured in answers received
		defer close(events)
		wait := func(n int64) {
			for done.Load() < n {
				time.Sleep(5 * time.Millisecond)
			}
		}
		wait(12)
		mu.Lock()
		alive[1] = false
		mu.Unlock()
		procs[1].kill()
		wait(24)
		db.Kill()
		time.Sleep(800 * time.Millisecond)
		db.Start()
		wait(36)
		p := start(1)
		mu.Lock()
		procs[1], alive[1] = p, true
		all = append(all, p)
		mu.Unlock()
	}()
	hc := &http.Client{Timeout: 2 * time.Minute}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := sent.Add(1)
				if n > requests {
					return
				}
				body := fmt.Appendf(nil, `{"prompt": "Once upon a time, request %d of client %d,", "max_tokens": 4, "temperature": 0}`, n, c)
				_, url := pick(int(n))
				resp, err := hc.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					failed.Add(1)
					continue
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				var a struct {
					Choices []struct {
						Text string `json:"text"`
					} `json:"choices"`
					Receipt json.RawMessage `json:"bankml_receipt"`
				}
				if err != nil || resp.StatusCode != 200 || json.Unmarshal(b, &a) != nil || len(a.Choices) != 1 || a.Receipt == nil {
					failed.Add(1)
					continue
				}
				mu.Lock()
				answers = append(answers, received{body: body, receipt: a.Receipt, text: a.Choices[0].Text})
				mu.Unlock()
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	<-events
	for _, p := range procs {
		p.stop(t)
	}

	ctx := context.Background()
	v, err := pub.NoteVerifier()
	if err != nil {
		t.Fatal(err)
	}
	f, closeF, err := ledger.OpenLogFetcher("mysql:" + db.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer closeF()
	audit, err := ledger.AuditLog(ctx, f, v, nil, nil) // signature, every leaf, no leaf twice, the root
	if err != nil {
		t.Fatal(err)
	}
	prover, err := ledger.NewProver(ctx, f, audit.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	verified := 0
	leafOf := map[uint64]int{}
	for k, a := range answers {
		var rc struct {
			RequestSHA256  string  `json:"request_sha256"`
			ResponseSHA256 string  `json:"response_sha256"`
			LedgerIndex    *uint64 `json:"ledger_index"`
			EntrySHA256    string  `json:"entry_sha256"`
		}
		if err := json.Unmarshal(a.receipt, &rc); err != nil || rc.LedgerIndex == nil {
			t.Errorf("answer %d: receipt %s: %v", k, a.receipt, err)
			continue
		}
		sumText, sumBody := sha256.Sum256([]byte(a.text)), sha256.Sum256(a.body)
		var c ledger.Hash
		cb, _ := hex.DecodeString(rc.EntrySHA256)
		copy(c[:], cb)
		_, sigErr := provenance.VerifyReceipt(a.receipt, pub)
		at, inLog := audit.Leaves[c]
		prev, twice := leafOf[*rc.LedgerIndex]
		switch {
		case sigErr != nil:
			t.Errorf("answer %d: %v", k, sigErr)
		case rc.ResponseSHA256 != hex.EncodeToString(sumText[:]) || rc.RequestSHA256 != hex.EncodeToString(sumBody[:]):
			t.Errorf("answer %d: the receipt's hashes are not those of the text and request", k)
		case !inLog || at != *rc.LedgerIndex:
			t.Errorf("answer %d: leaf %d (%s) is not in the log there (found %v at %d)", k, *rc.LedgerIndex, rc.EntrySHA256, inLog, at)
		case twice:
			t.Errorf("answers %d and %d name the same leaf %d", prev, k, *rc.LedgerIndex)
		default:
			if err := prover.Inclusion(ctx, *rc.LedgerIndex, c[:]); err != nil {
				t.Errorf("answer %d: %v", k, err)
				continue
			}
			leafOf[*rc.LedgerIndex] = k
			verified++
		}
	}
	// Every replica's history is in the log, each line proved, the killed replica's included (--shared-log:
	// the other replicas' leaves are in the same log).
	for i, d := range dirs {
		out, err := exec.Command(bankmlBinary(t), "ledger", "verify", d, "--key", keyPath+provenance.PubSuffix, "--log", "mysql:"+db.DSN(), "--all-published", "--shared-log").CombinedOutput()
		if err != nil {
			t.Errorf("replica %d: bankml ledger verify: %v\n%s", i, err, out)
		}
	}
	retried := 0
	for _, p := range all {
		retried += strings.Count(p.Stderr(), "append failed; looking the entry up before retrying")
	}
	if retried == 0 {
		t.Error("no replica's append failed while the database was down: the crash met no answer in flight")
	}
	if len(answers) < requests/2 {
		t.Errorf("only %d of %d requests were answered", len(answers), requests)
	}
	t.Logf("3 replicas, one killed and the database killed mid-run: %d answers received (%d requests failed; %d appends met the dead database and were looked up, then retried), %d of %d verified in the log exactly once; log size %d",
		len(answers), failed.Load(), retried, verified, len(answers), audit.Checkpoint.Size)
}
