package storeserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/storeserve"
)

// TestTheRouterAnswersTheSharedHistorysRoutesOnceWithoutAModel: the /bankml/ledger routes are the router's
// own, over the history and key every model shares (Options.Serve), answered with no model named and none
// loaded, as a model's server answers them; two models' answers land in that one history in order. Before,
// the router forwarded them to a model's server, so a request naming no model was refused.
func TestTheRouterAnswersTheSharedHistorysRoutesOnceWithoutAModel(t *testing.T) {
	dir := t.TempDir()
	l, _, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() }) // the caller's, after the router's Close (newFixture's cleanup runs first)
	keyPath := t.TempDir() + "/op.key"
	if _, err := provenance.WriteKeyFiles(keyPath, "bankml.test/router"); err != nil {
		t.Fatal(err)
	}
	signer, err := provenance.LoadSigner(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, storeserve.Options{Serve: serve.Options{Ledger: l, Signer: signer}})
	get := func(path string) (int, string) {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name   string
		answer string // a model to ask one completion first ("": none)
		path   string
		status int
		want   string
	}{
		{name: "the history's summary answers before any model is loaded", path: "/bankml/ledger", status: 200, want: `"size":0`},
		{name: "the operator key answers with no model named", path: "/bankml/ledger/key", status: 200, want: `"key_name":"bankml.test/router"`},
		{name: "a model's answer is entry 0 of the shared history", answer: "stories260K", path: "/bankml/ledger", status: 200, want: `"size":1`},
		{name: "another model's answer is entry 1 of the same history", answer: "tiny:q8_0", path: "/bankml/ledger/proof?index=1", status: 200, want: `"index":1`},
		{name: "a bad index is the model server's 400", path: "/bankml/ledger/proof?index=x", status: 400, want: "index: missing or malformed"},
		{name: "no transparency log is the model server's 404", path: "/bankml/ledger/checkpoint", status: 404, want: "keeps no transparency log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loaded := len(f.r.Loaded())
			if tc.answer != "" {
				st, b := f.post(t, "/v1/completions", `{"model":"`+tc.answer+`","prompt":"Once upon a time","max_tokens":4,"temperature":0}`)
				var a struct {
					Receipt struct {
						ModelSHA256 string `json:"model_sha256"`
						Signed      bool   `json:"signed"`
					} `json:"bankml_receipt"`
				}
				if err := json.Unmarshal(b, &a); st != 200 || err != nil || !a.Receipt.Signed {
					t.Fatalf("%s: %d %s %v", tc.answer, st, b, err)
				}
				m, err := f.s.Get(tc.answer)
				if err != nil || a.Receipt.ModelSHA256 != m.Model.SHA256 {
					t.Fatalf("%s's receipt names %s, want its file's %v (%v)", tc.answer, a.Receipt.ModelSHA256, m, err)
				}
				loaded++
			}
			st, body := get(tc.path)
			if st != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("GET %s: %d %s; want %d with %q", tc.path, st, body, tc.status, tc.want)
			}
			if got := len(f.r.Loaded()); got != loaded {
				t.Fatalf("GET %s changed the loaded models to %v", tc.path, f.r.Loaded())
			}
		})
	}
}

// TestModelsAnsweringAtOnceAppendToTheSharedHistoryAndLogEachOnce: several models answering at the same time
// share one history and one transparency log safely (ledger.Ledger and ledger.Log serialise their appends):
// every answer is one history entry and one distinct leaf, and its receipt names its model's file.
func TestModelsAnsweringAtOnceAppendToTheSharedHistoryAndLogEachOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		models []string // one request each, all at once
	}{
		{name: "two models answering two requests each at once get four distinct leaves", models: []string{"stories260K", "tiny:q8_0", "stories260K", "tiny:q8_0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			keyPath := t.TempDir() + "/op.key"
			if _, err := provenance.WriteKeyFiles(keyPath, "bankml.test/router"); err != nil {
				t.Fatal(err)
			}
			signer, err := provenance.LoadSigner(keyPath)
			if err != nil {
				t.Fatal(err)
			}
			l, _, err := ledger.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			v, _ := signer.Public().NoteVerifier()
			g, err := ledger.OpenPOSIXLog(dir+"/log", signer.NoteSigner(), v, ledger.LogOptions{CheckpointInterval: 100 * time.Millisecond, BatchMaxAge: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.Close(context.Background()) })
			f := newFixture(t, storeserve.Options{Serve: serve.Options{Ledger: l, TLog: g, Signer: signer}})
			type got struct {
				model, sha string
				leaf       uint64
				err        error
			}
			out := make(chan got, len(tc.models))
			for _, m := range tc.models {
				go func() {
					resp, err := http.Post(f.srv.URL+"/v1/completions", "application/json",
						strings.NewReader(`{"model":"`+m+`","prompt":"Once upon a time","max_tokens":4,"temperature":0}`))
					if err != nil {
						out <- got{model: m, err: err}
						return
					}
					defer resp.Body.Close()
					var a struct {
						Receipt struct {
							ModelSHA256 string  `json:"model_sha256"`
							LedgerIndex *uint64 `json:"ledger_index"`
						} `json:"bankml_receipt"`
					}
					if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 200 || a.Receipt.LedgerIndex == nil {
						out <- got{model: m, err: fmt.Errorf("status %d, receipt %+v: %v", resp.StatusCode, a.Receipt, err)}
						return
					}
					out <- got{model: m, sha: a.Receipt.ModelSHA256, leaf: *a.Receipt.LedgerIndex}
				}()
			}
			leaves := map[uint64]bool{}
			for range tc.models {
				r := <-out
				if r.err != nil {
					t.Fatalf("%s: %v", r.model, r.err)
				}
				m, err := f.s.Get(r.model)
				if err != nil || r.sha != m.Model.SHA256 {
					t.Errorf("%s's receipt names %s, want its file's (%v)", r.model, r.sha, err)
				}
				if leaves[r.leaf] || r.leaf >= uint64(len(tc.models)) {
					t.Errorf("%s's receipt names leaf %d, already named or past %d", r.model, r.leaf, len(tc.models))
				}
				leaves[r.leaf] = true
			}
			if h := l.Head(); h.Size != uint64(len(tc.models)) || l.Unpublished() != 0 {
				t.Fatalf("the history holds %d entries (%d unpublished), want %d, all published", h.Size, l.Unpublished(), len(tc.models))
			}
		})
	}
}
