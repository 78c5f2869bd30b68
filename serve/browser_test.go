package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bankml/bankml/internal/testdata"
)

// newBrowser starts headless chromium (a fresh profile, no sandbox: the tests run as root) with
// host-resolver rules (Chromium's own DNS, for a name that rebinds to loopback) and returns a context
// whose tab is the browser's first. The browser is stopped when the test ends.
func newBrowser(t *testing.T, resolverRules string) context.Context {
	t.Helper()
	chromium := chromiumPath(t) // console_test.go: Debian's chromium or $BANKML_CHROMIUM
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-proxy-server", true), // every address the tests use is on this machine
	}
	if resolverRules != "" {
		opts = append(opts, chromedp.Flag("host-resolver-rules", resolverRules))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return ctx
}

// pageServer serves a blank HTML page on addr ("127.0.0.2:0") and returns its port.
func pageServer(t *testing.T, addr string) int {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		testdata.Absent(t, "listening on %s for the page's origin: %v", addr, err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>page</title><p>page</p>"))
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// fetchResult is what a page's fetch() gave: the answer's status and text, or the error it threw (a request
// CORS blocks throws "TypeError: Failed to fetch").
type fetchResult struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// browserFetch opens pageURL in the browser, runs fetch(url, init) there (init is fetch's options object,
// credentials "omit" added: a plain fetch) and returns what the page's script could read.
func browserFetch(t *testing.T, ctx context.Context, pageURL, url string, init map[string]any) fetchResult {
	t.Helper()
	opts := map[string]any{"credentials": "omit"}
	for k, v := range init {
		opts[k] = v
	}
	o, _ := json.Marshal(opts)
	js := fmt.Sprintf(`(async () => {
		try {
			const r = await fetch(%q, %s);
			return {status: r.status, body: await r.text(), error: ""};
		} catch (e) {
			return {status: 0, body: "", error: String(e)};
		}
	})()`, url, o)
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(pageURL)); err != nil {
		t.Fatalf("browser: opening %s: %v", pageURL, err)
	}
	res, err := chromedp.Run(tctx, chromedp.Evaluate[fetchResult](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("browser: on %s, fetch %s: %v", pageURL, url, err)
	}
	return res
}

// TestBrowserCrossOriginReads is the CORS and DNS-rebinding guard in a real browser (Debian's chromium,
// headless, driven by chromedp): a page from another loopback origin (http://127.0.0.2:PORT) that fetches
// the history's proof and /v1/models from a server on 127.0.0.1 must be blocked by CORS, a page from an
// allowed origin (http://localhost:PORT) must read them (with an API key too: its preflight lets
// Authorization through), and a page whose name rebinds to the server's address (Chromium's resolver maps
// rebind.test to 127.0.0.1, as an attacker's DNS would) must get the Host refusal for its same-origin reads.
func TestBrowserCrossOriginReads(t *testing.T) {
	path := storiesPath(t)
	l, _ := openLedger(t)
	ts := newTestServer(t, path, AdmitOptions{}, Options{Ledger: l})
	if st, b := ts.post(t, "/v1/completions", []byte(`{"prompt": "Once upon a time", "max_tokens": 4}`)); st != 200 {
		t.Fatalf("completion for the history: %d %s", st, b)
	}
	keyed := newTestServer(t, path, AdmitOptions{}, Options{APIKey: "sk-test"})
	ctx := newBrowser(t, "MAP rebind.test 127.0.0.1")
	foreign := fmt.Sprintf("http://127.0.0.2:%d/", pageServer(t, "127.0.0.2:0"))
	local := fmt.Sprintf("http://localhost:%d/", pageServer(t, "127.0.0.1:0"))
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.url, "http://"))
	rebound := fmt.Sprintf("http://rebind.test:%s", port)

	readable := func(r fetchResult, want string) bool { return r.Status == 200 && strings.Contains(r.Body, want) }
	blocked := func(r fetchResult, _ string) bool {
		return r.Status == 0 && strings.Contains(r.Error, "Failed to fetch")
	}
	auth := map[string]any{"headers": map[string]string{"Authorization": "Bearer sk-test"}}
	// a POST a page may send without a preflight (a CORS "simple" request): the server must refuse it before
	// generating, not only hide the answer
	simplePost := map[string]any{"method": "POST", "headers": map[string]string{"Content-Type": "text/plain"},
		"body": `{"prompt": "Once upon a time", "max_tokens": 4}`}
	cases := []struct {
		name string
		page string
		url  string
		init map[string]any // fetch's options
		want string         // a piece of the answer a readable fetch returns
		ok   func(fetchResult, string) bool
	}{
		{"a page from another loopback origin cannot read the history's proof", foreign, ts.url + "/bankml/ledger/proof?index=0", nil, "", blocked},
		{"a page from another loopback origin cannot read /v1/models", foreign, ts.url + "/v1/models", nil, "", blocked},
		{"a page from another loopback origin cannot have a completion generated", foreign, ts.url + "/v1/completions", simplePost, "", blocked},
		{"a page from localhost reads the history's proof", local, ts.url + "/bankml/ledger/proof?index=0", nil, `"leaf_hash"`, readable},
		{"a page from localhost reads /v1/models", local, ts.url + "/v1/models", nil, `"stories260K.gguf"`, readable},
		{"a page from localhost reads /v1/models with an API key (preflight lets Authorization through)", local, keyed.url + "/v1/models",
			auth, `"stories260K.gguf"`, readable},
		{"a page from another loopback origin cannot read /v1/models even with the API key", foreign, keyed.url + "/v1/models",
			auth, "", blocked},
		{"a rebinding name's same-origin read of /v1/models gets the Host refusal", rebound + "/", rebound + "/v1/models", nil, "",
			func(r fetchResult, _ string) bool { return r.Status == 403 && !strings.Contains(r.Body, "stories260K") }},
		{"a rebinding name's same-origin read of the proof gets the Host refusal", rebound + "/", rebound + "/bankml/ledger/proof?index=0", nil, "",
			func(r fetchResult, _ string) bool { return r.Status == 403 && !strings.Contains(r.Body, "leaf_hash") }},
	}
	passed := 0
	for _, c := range cases {
		before := l.Head().Size
		r := browserFetch(t, ctx, c.page, c.url, c.init)
		if !c.ok(r, c.want) {
			t.Errorf("%s: page %s fetch %s: status %d, error %q, body %.200s", c.name, c.page, c.url, r.Status, r.Error, r.Body)
			continue
		}
		if after := l.Head().Size; after != before {
			t.Errorf("%s: the history grew from %d to %d entries", c.name, before, after)
			continue
		}
		passed++
	}
	t.Logf("browser CORS and Host: %d of %d", passed, len(cases))
}
