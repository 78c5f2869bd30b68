package storeserve_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

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
