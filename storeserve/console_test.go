package storeserve_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/storeserve"
)

// TestTheStoreServerServesTheConsolesFilesWithoutAModel: the page and the files it loads by relative URL
// (console.css, verify.js, console.js) are served by the router itself, with no ?model= and no API key, as
// llama-server's router serves its web UI; the API calls the page makes still need both.
func TestTheStoreServerServesTheConsolesFilesWithoutAModel(t *testing.T) {
	f := newFixture(t, storeserve.Options{Serve: serve.Options{APIKey: "sekrit"}})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		name, path string
		status     int
		want       string // in the body, or the Location of a redirect
		ctype      string
	}{
		{name: "the console's address redirects to its folder", path: "/console", status: 301, want: "/console/"},
		{name: "the page is served without a model", path: "/console/", status: 200, want: "<title>bankml console</title>", ctype: "text/html"},
		{name: "its style sheet is served without a model", path: "/console/console.css", status: 200, want: "--ok", ctype: "text/css"},
		{name: "its checks are served without a model", path: "/console/verify.js", status: 200, want: "bankmlVerify", ctype: "javascript"},
		{name: "its chat script is served without a model", path: "/console/console.js", status: 200, want: "bankmlVerify", ctype: "javascript"},
		{name: "a file the console lacks is a 404, loading no model", path: "/console/nope.js", status: 404},
		{name: "the API the page calls still needs the key", path: "/props", status: 401, want: "Invalid API Key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := noRedirect.Get(f.srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			got := string(b)
			if tc.status == 301 {
				got = resp.Header.Get("Location")
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want it to hold %q", got, tc.want)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, tc.ctype) {
				t.Errorf("Content-Type %q, want %q", ct, tc.ctype)
			}
			if tc.status == 200 && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "connect-src 'self'") {
				t.Errorf("no console Content-Security-Policy: %q", resp.Header.Get("Content-Security-Policy"))
			}
		})
	}
	if l := f.r.Loaded(); len(l) != 0 {
		t.Errorf("serving the console loaded %v", l)
	}
}
