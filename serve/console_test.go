//go:build !windows

package serve

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/provenance"
)

// chromiumPath is Debian's chromium (scripts/install-chromium.sh), or $BANKML_CHROMIUM.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BANKML_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		testdata.Absent(t, "chromium is not installed (scripts/install-chromium.sh): the console's browser test is skipped")
	}
	return p
}

// screenshotDir is where the browser test saves its screenshots (BANKML_SCREENSHOTS, default /tmp).
func screenshotDir() string {
	if d := os.Getenv("BANKML_SCREENSHOTS"); d != "" {
		return d
	}
	return os.TempDir()
}

// firstLetter is the first letter of the first non-empty delta content of an SSE stream.
var firstLetter = regexp.MustCompile(`"content":"[^"A-Za-z\\]*([A-Za-z])`)

// tamperStream changes one letter of the answer text in an SSE stream (its case), keeping the length, and
// leaves the receipt as the server signed it: what a proxy rewriting answers would do.
func tamperStream(b []byte) ([]byte, bool) {
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("data: ")) || !bytes.Contains(line, []byte(`"delta"`)) {
			continue
		}
		m := firstLetter.FindSubmatchIndex(line)
		if m == nil {
			continue
		}
		off := bytes.Index(b, line) + m[2]
		out := append([]byte(nil), b...)
		out[off] ^= 0x20 // a ↔ A
		return out, true
	}
	return b, false
}

// TestConsoleVerifiesAnswersInTheBrowser drives the console in headless Chromium: an answer streamed from
// the server verifies (text sha256, Ed25519 signature, signed checkpoint, inclusion, consistency, pinned
// model), one whose text a proxy changed by one letter shows as failed, and the page sends nothing
// anywhere but the server. Screenshots of both go to /tmp (BANKML_SCREENSHOTS).
func TestConsoleVerifiesAnswersInTheBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	path := storiesPath(t)
	digest, err := provenance.SHA256File(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, _, _, cosig := proofServer(t, AdmitOptions{Manifest: digest}, true)

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 1400))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelT()

	// Every request the page makes, and a proxy in the browser that changes answers when tamper is set.
	var mu sync.Mutex
	var requested []string
	var tamper, tampered atomic.Bool
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			mu.Lock()
			requested = append(requested, ev.Request.URL)
			mu.Unlock()
		}
	}()
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			if !tamper.Load() {
				_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				continue
			}
			body, err := chromedp.Call(ctx, fetch.GetResponseBody, fetch.GetResponseBodyParams{RequestID: ev.RequestID})
			if err != nil {
				t.Errorf("reading the intercepted answer: %v", err)
				continue
			}
			changed, ok := tamperStream(body.Body)
			tampered.Store(ok)
			_, _ = chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID,
				ResponseCode: ev.ResponseStatusCode, ResponseHeaders: ev.ResponseHeaders, Body: changed})
		}
	}()
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: "*/v1/chat/completions", RequestStage: fetch.RequestStageResponse}}}); err != nil {
		t.Fatal(err)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url+"/console")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.ready === "true"`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the console did not load: %v", err)
	}
	ask := func(prompt string, n int) (verdict string, checks map[string]string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.ID("max-tokens"), "8"),
			chromedp.SendKeys(chromedp.ID("prompt"), prompt),
			chromedp.Click(chromedp.ID("send")),
		); err != nil {
			t.Fatal(err)
		}
		sel := `document.querySelectorAll("article.answer")[` + string(rune('0'+n)) + `]`
		v, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const a = `+sel+`; return a && a.dataset.verdict !== "pending" ? a.dataset.verdict : ""; })()`,
			chromedp.WithPollingTimeout(90*time.Second)))
		if err != nil {
			t.Fatalf("answer %d never got a verdict: %v", n, err)
		}
		checks, err = chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(Array.from(`+sel+`.querySelectorAll(".checks li")).map(li => [li.dataset.check, (li.dataset.ok || "") + " " + (li.dataset.detail || "")]))`))
		if err != nil {
			t.Fatal(err)
		}
		return v, checks
	}
	shot := func(name string) string {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		p := screenshotDir() + "/bankml-console-" + name + ".png"
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	pass, total := 0, 0
	expect := func(what string, ok bool) {
		total++
		if ok {
			pass++
		} else {
			t.Errorf("%s", what)
		}
	}
	v, checks := ask("Once upon a time", 0)
	verifiedShot := shot("verified")
	expect("an honest answer verifies: "+v+" "+fmtChecks(checks), v == "verified")
	for _, c := range []string{"answer", "request", "signature", "checkpoint", "inclusion", "consistency", "model"} {
		expect("check "+c+" passes: "+checks[c], strings.HasPrefix(checks[c], "true "))
	}

	tamper.Store(true)
	v, checks = ask("Tell me about a cat", 1)
	tamperedShot := shot("tampered")
	tamper.Store(false)
	expect("the proxy changed a letter of the second answer", tampered.Load())
	expect("a tampered answer fails: "+v+" "+fmtChecks(checks), v == "failed")
	expect("the tampered answer's text check fails: "+checks["answer"], strings.HasPrefix(checks["answer"], "false "))
	expect("its receipt's signature still verifies (only the text was changed): "+checks["signature"], strings.HasPrefix(checks["signature"], "true "))

	// Requiring the log's witness: the next answer verifies with its checkpoint cosigned; requiring a witness
	// that never cosigned this log: the checkpoint check fails.
	require := func(vkey string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.Evaluate[chromedp.Void](`document.getElementById("settings").open = true`),
			chromedp.SetValue(chromedp.ID("pin-witness"), vkey),
			chromedp.Click(chromedp.ID("save-settings")),
		); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("settings-note").textContent === "saved"`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("saving the witness key: %v", err)
		}
	}
	require(cosig)
	v, checks = ask("Once upon a time there was a witness", 2)
	witnessedShot := shot("witnessed")
	expect("with the log's witness required, an answer verifies: "+v+" "+fmtChecks(checks), v == "verified")
	expect("its checkpoint is cosigned by the witness: "+checks["checkpoint"], strings.HasPrefix(checks["checkpoint"], "true ") && strings.Contains(checks["checkpoint"], "cosigned by witness.test/w1"))
	_, otherVKey, err := note.GenerateKey(nil, "witness.test/other")
	if err != nil {
		t.Fatal(err)
	}
	require(otherVKey)
	v, checks = ask("Once upon a time there was no witness", 3)
	expect("with a witness that never cosigned required, the answer fails: "+v+" "+fmtChecks(checks), v == "failed")
	expect("its checkpoint check names the missing cosignature: "+checks["checkpoint"], strings.HasPrefix(checks["checkpoint"], "false ") && strings.Contains(checks["checkpoint"], "cosignature"))

	mu.Lock()
	for _, u := range requested {
		expect("the page asked only its server: "+u, strings.HasPrefix(u, ts.url+"/") || strings.HasPrefix(u, "blob:"))
	}
	n := len(requested)
	mu.Unlock()
	expect("the page made requests", n > 0)
	t.Logf("console in headless Chromium: %d of %d checks as expected; %d requests, all to the server; screenshots %s, %s, %s", pass, total, n, verifiedShot, tamperedShot, witnessedShot)
}

func fmtChecks(c map[string]string) string {
	var b strings.Builder
	for _, k := range []string{"answer", "request", "signature", "checkpoint", "inclusion", "consistency", "model"} {
		b.WriteString(k + "=" + c[k] + "; ")
	}
	return b.String()
}
