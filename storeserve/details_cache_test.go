package storeserve_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/bankml/bankml/storeserve"
)

// TestTheDetailsCacheForgetsFilesNoModelNames: the details the router keeps per file (for /api/tags,
// /api/show, /api/ps) are forgotten once no model of the store names the file: removed or copied over by a
// route, removed by another process and found at the next listing or request.
func TestTheDetailsCacheForgetsFilesNoModelNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, f *fixture)
	}{
		{name: "a model deleted with DELETE /api/delete is forgotten", change: func(t *testing.T, f *fixture) {
			req, _ := http.NewRequest(http.MethodDelete, f.srv.URL+"/api/delete", strings.NewReader(`{"model":"tiny:q8_0"}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("delete: %d", resp.StatusCode)
			}
		}},
		{name: "a name copied over with POST /api/copy forgets its old file", change: func(t *testing.T, f *fixture) {
			if st, b := f.post(t, "/api/copy", `{"source":"stories260K","destination":"tiny:q8_0"}`); st != 200 {
				t.Fatalf("copy: %d %s", st, b)
			}
		}},
		{name: "a model removed by another process is forgotten at the next listing", change: func(t *testing.T, f *fixture) {
			if err := f.s.Remove("tiny:q8_0"); err != nil {
				t.Fatal(err)
			}
			f.get(t, "/api/tags")
		}},
		{name: "a loaded model removed by another process is forgotten when a request finds it gone", change: func(t *testing.T, f *fixture) {
			completion(t, f, "tiny:q8_0")
			if err := f.s.Remove("tiny:q8_0"); err != nil {
				t.Fatal(err)
			}
			if st, _ := f.post(t, "/v1/completions", `{"model":"tiny:q8_0","prompt":"Once","max_tokens":1}`); st != 404 {
				t.Fatalf("a request for the removed model: %d, want 404", st)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, storeserve.Options{})
			stories, err := f.s.Get("stories260K")
			if err != nil {
				t.Fatal(err)
			}
			q8, err := f.s.Get("tiny:q8_0")
			if err != nil {
				t.Fatal(err)
			}
			f.get(t, "/api/tags")
			both := []string{stories.Model.SHA256, q8.Model.SHA256}
			if both[0] > both[1] {
				both[0], both[1] = both[1], both[0]
			}
			if got := f.r.CachedDetails(); !reflect.DeepEqual(got, both) {
				t.Fatalf("after /api/tags the cache holds %v; want %v", got, both)
			}
			tc.change(t, f)
			if got, want := f.r.CachedDetails(), []string{stories.Model.SHA256}; !reflect.DeepEqual(got, want) {
				t.Errorf("the cache holds %v; want only stories260K's file %v", got, want)
			}
		})
	}
}
