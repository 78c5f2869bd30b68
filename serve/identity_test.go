package serve

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankml/bankml/provenance"
)

// pinnedCopy copies stories260K to a temporary folder and returns its path and sha256.
func pinnedCopy(t *testing.T) (path, sum string, src []byte) {
	t.Helper()
	src, err := os.ReadFile(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "stories260K.gguf")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if sum, err = provenance.SHA256File(path, nil); err != nil {
		t.Fatal(err)
	}
	return path, sum, src
}

// replaceFile writes data to a new file and renames it over path (a new inode, as a download or a copy
// does: the server's memory map keeps the bytes it loaded).
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// gateHash makes the server's re-hash wait until the returned function is called (once), so that a test
// sees the answers held meanwhile.
func gateHash(ts *testServer) (release func()) {
	gate := make(chan struct{})
	ts.verify.mu.Lock()
	ts.verify.hash = func(ctx context.Context, path string) (string, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return hashFile(ctx, path)
	}
	ts.verify.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// waitRehashed waits for the running re-hash (if any) to end.
func waitRehashed(t *testing.T, ts *testServer) {
	t.Helper()
	ts.verify.mu.Lock()
	done := ts.verify.done
	ts.verify.mu.Unlock()
	if done == nil {
		t.Fatal("no re-hash was started")
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the re-hash did not end")
	}
}

// routesAnswer checks every answering route and /health: each is 200 when ok, else a 503 unavailable_error
// whose message holds every string of want.
func routesAnswer(t *testing.T, ts *testServer, when string, ok bool, want ...string) {
	t.Helper()
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/completions"}, {"POST", "/v1/chat/completions"}, {"POST", "/completion"},
		{"GET", "/health"}, {"GET", "/v1/health"},
	} {
		var st int
		var b []byte
		if c.method == "GET" {
			st, b = ts.get(t, c.path)
		} else {
			st, b = ts.post(t, c.path, []byte(`{"prompt": "Once", "max_tokens": 2, "messages": [{"role": "user", "content": "x"}]}`))
		}
		if ok {
			if st != 200 {
				t.Errorf("%s: %s %s: %d %s, want 200", when, c.method, c.path, st, b)
			}
			continue
		}
		e := parseError(t, b)
		good := st == 503 && e.Error.Code == 503 && e.Error.Type == TypeUnavailable
		for _, w := range want {
			good = good && strings.Contains(e.Error.Message, w)
		}
		if !good {
			t.Errorf("%s: %s %s: %d %s, want 503 unavailable_error with %q", when, c.method, c.path, st, b, want)
		}
	}
}

// TestTouchedModelIsReverified: `touch model.gguf` (the same bytes, a new mtime) holds every answer and
// /health as 503 "re-verifying" while the file is hashed again, then the server answers again (the same
// sha256: logged), and nothing was recorded while it was held.
func TestTouchedModelIsReverified(t *testing.T) {
	path, sum, _ := pinnedCopy(t)
	l, _ := openLedger(t)
	var log bytes.Buffer
	ts := newTestServer(t, path, AdmitOptions{Manifest: sum}, Options{Ledger: l, Log: slog.New(slog.NewTextHandler(&log, nil))})
	routesAnswer(t, ts, "before the touch", true)
	release := gateHash(ts)
	defer release()
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	routesAnswer(t, ts, "while re-verifying", false, "model file re-verifying: the model file was modified", "retry shortly")
	release()
	waitRehashed(t, ts)
	routesAnswer(t, ts, "after the re-verification", true)
	if !strings.Contains(log.String(), "model file re-verified: same sha256, serving again") || !strings.Contains(log.String(), "sha256="+sum) {
		t.Errorf("the log does not say the model was re-verified:\n%s", log.String())
	}
	if id := ts.verify.identity(); id.Mtime != later.UnixNano() {
		t.Errorf("verified identity %+v, want the touched mtime %d", id, later.UnixNano())
	}
	if h := l.Head(); h.Size != 6 {
		t.Errorf("ledger has %d entries, want the 3 answers before the touch and the 3 after", h.Size)
	}
}

// TestModelWithAnotherHashIsRefused: a model file replaced by other bytes is held while it is re-hashed,
// then every answer and /health is a 503 naming both hashes and what to do; restoring the admitted bytes
// is re-verified and the server answers again.
func TestModelWithAnotherHashIsRefused(t *testing.T) {
	path, sum, src := pinnedCopy(t)
	ts := newTestServer(t, path, AdmitOptions{Manifest: sum}, Options{})
	other := bytes.Clone(src)
	other[len(other)-1] ^= 1
	replaceFile(t, path, other)
	otherSum, err := provenance.SHA256File(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	release := gateHash(ts)
	defer release()
	routesAnswer(t, ts, "after the replacement", false, "model file re-verifying: the model file was replaced")
	release()
	waitRehashed(t, ts)
	routesAnswer(t, ts, "once re-hashed", false, "its sha256 is now "+otherSum+", admitted "+sum,
		"restore the admitted file, or restart bankml serve to admit the new one")
	release = gateHash(ts)
	defer release()
	replaceFile(t, path, src)
	routesAnswer(t, ts, "after the restore", false, "model file re-verifying: the model file changed again")
	release()
	waitRehashed(t, ts)
	routesAnswer(t, ts, "once the restore is re-verified", true)
}
