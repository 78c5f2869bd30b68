//go:build !windows

package storeserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/storeserve"
)

// TestTheConsoleChatsWithAModelPickedOnTheStoreServer drives the console in headless Chromium on the store
// server: the page finds the router (GET /props: role "router"), lists the store's models to pick from, and
// names the one picked in every call (?model= on a GET, "model" in the chat request); the answers' receipts
// are unsigned (the store server takes no --key), shown as not checked, their hashes passing.
func TestTheConsoleChatsWithAModelPickedOnTheStoreServer(t *testing.T) {
	chromium := os.Getenv("BANKML_CHROMIUM")
	if chromium == "" {
		p, err := exec.LookPath("chromium")
		if err != nil {
			testdata.Absent(t, "chromium is not installed (scripts/install-chromium.sh): the console's browser test is skipped")
		}
		chromium = p
	}
	f := newFixture(t, storeserve.Options{})
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 1400))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelT()

	type answered struct {
		url    string
		status int64
	}
	var mu sync.Mutex
	var responses []answered
	var chats []string
	events := chromedp.Events(ctx, network.ResponseReceived)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			mu.Lock()
			responses = append(responses, answered{ev.Response.URL, ev.Response.Status})
			mu.Unlock()
		}
	}()
	sent := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range sent {
			if err != nil {
				return
			}
			if strings.HasSuffix(ev.Request.URL, "/v1/chat/completions") {
				var b strings.Builder
				for _, e := range ev.Request.PostDataEntries {
					b.Write(e.Bytes)
				}
				mu.Lock()
				chats = append(chats, b.String())
				mu.Unlock()
			}
		}
	}()
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	poll := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/console")); err != nil {
		t.Fatal(err)
	}
	poll("the console did not load", `document.body.dataset.ready === "true"`)

	mu.Lock()
	responses = responses[:0] // those of the first model's status
	mu.Unlock()
	// Pick the second model, then ask it.
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("model-select"); s.value = "tiny:q8_0"; s.dispatchEvent(new Event("change")); })()`),
	); err != nil {
		t.Fatal(err)
	}
	poll("the picked model's facts never showed", `document.getElementById("model-name").textContent === "tiny:q8_0"`)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("max-tokens"), "8"),
		chromedp.SetValue(chromedp.ID("prompt"), "Once upon a time"),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatal(err)
	}
	poll("the answer never got a verdict", `(() => { const a = document.querySelector("article.answer"); return !!a && a.dataset.verdict !== "pending"; })()`)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		shot := filepath.Join(os.TempDir(), "bankml-console-store.png")
		if d := os.Getenv("BANKML_SCREENSHOTS"); d != "" {
			shot = filepath.Join(d, "bankml-console-store.png")
		}
		if err := os.WriteFile(shot, png, 0o644); err == nil {
			t.Logf("screenshot %s", shot)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	var chatModel struct {
		Model string `json:"model"`
	}
	if len(chats) == 1 {
		_ = json.Unmarshal([]byte(chats[0]), &chatModel)
	}
	named, unnamed, refused := map[string]bool{}, []string{}, []string{}
	for _, r := range responses {
		u, _ := url.Parse(r.url)
		if u.Query().Get("model") == "tiny:q8_0" {
			named[u.Path] = true
		} else if strings.HasPrefix(u.Path, "/bankml/") {
			unnamed = append(unnamed, r.url)
		}
		// The ledger routes answer 404 (this server keeps no history and signs nothing); anything else is
		// a call the router could not route.
		if r.status >= 400 && !(r.status == 404 && (strings.HasPrefix(u.Path, "/bankml/ledger/") || u.Path == "/favicon.ico")) {
			refused = append(refused, fmt.Sprintf("%s %d", r.url, r.status))
		}
	}
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{name: "the picker lists the store's models", got: eval(`Array.from(document.querySelectorAll("#model-select option")).map(o => o.value).join(",")`), want: "stories260K:latest,tiny:q8_0"},
		{name: "the picker is shown", got: eval(`String(document.getElementById("model-pick").hidden)`), want: "false"},
		{name: "the picked model's /props is shown", got: eval(`document.getElementById("model-sha").textContent.length > 0 ? "sha256 shown" : "none"`), want: "sha256 shown"},
		{name: "the chat request names the picked model", got: chatModel.Model, want: "tiny:q8_0"},
		{name: "the answer's unsigned receipt is not checked", got: eval(`document.querySelector("article.answer").dataset.verdict`), want: "unsigned"},
		{name: "the signature is not checked, saying the store server takes no --key", got: eval(`document.querySelector('article.answer [data-check="signature"]').dataset.ok + " " + document.querySelector('article.answer [data-check="signature"]').dataset.detail`), want: "skipped the server signs no receipts (the store server takes no --key yet: bankml serve NAME --key FILE signs them)"},
		{name: "the answer's text hash passes", got: eval(`document.querySelector('article.answer [data-check="answer"]').dataset.ok`), want: "true"},
		{name: "the request's hash passes", got: eval(`document.querySelector('article.answer [data-check="request"]').dataset.ok`), want: "true"},
		{name: "the model check names the picked model's pinned file", got: eval(`document.querySelector('article.answer [data-check="model"]').dataset.ok`), want: "true"},
		{name: "the picked model's /props and key are asked for with the model in the query", got: fmt.Sprint(named["/props"], named["/bankml/ledger/key"]), want: "true true"},
		{name: "no ledger call leaves the model out", got: strings.Join(unnamed, "; "), want: ""},
		{name: "no call the page made was refused", got: strings.Join(refused, "; "), want: ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}
