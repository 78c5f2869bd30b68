//go:build !windows

package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
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

// consoleBrowser is headless Chromium on the console: it records every request the page makes (and the
// bodies of its chat requests), and a proxy in the browser changes answers while tamper is set.
type consoleBrowser struct {
	t                *testing.T
	ctx              context.Context
	mu               sync.Mutex
	requested        []string
	chats            []string // the bodies of the chat requests, in order
	tamper, tampered atomic.Bool
}

func newConsoleBrowser(t *testing.T) *consoleBrowser {
	t.Helper()
	chromium := chromiumPath(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 1400))
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	b := &consoleBrowser{t: t, ctx: ctx}

	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.requested = append(b.requested, ev.Request.URL)
			if strings.HasSuffix(ev.Request.URL, "/v1/chat/completions") {
				var body strings.Builder
				for _, e := range ev.Request.PostDataEntries {
					body.Write(e.Bytes)
				}
				b.chats = append(b.chats, body.String())
			}
			b.mu.Unlock()
		}
	}()
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			if !b.tamper.Load() || ev.ResponseStatusCode != 200 {
				_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				continue
			}
			body, err := chromedp.Call(ctx, fetch.GetResponseBody, fetch.GetResponseBodyParams{RequestID: ev.RequestID})
			if err != nil {
				t.Errorf("reading the intercepted answer: %v", err)
				continue
			}
			changed, ok := tamperStream(body.Body)
			b.tampered.Store(ok)
			_, _ = chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID,
				ResponseCode: ev.ResponseStatusCode, ResponseHeaders: ev.ResponseHeaders, Body: changed})
		}
	}()
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: "*/v1/chat/completions", RequestStage: fetch.RequestStageResponse}}}); err != nil {
		t.Fatal(err)
	}
	return b
}

// open loads the console at url and waits until it is ready.
func (b *consoleBrowser) open(url string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(url)); err != nil {
		b.t.Fatal(err)
	}
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`document.body.dataset.ready === "true"`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		b.t.Fatalf("the console did not load: %v", err)
	}
}

// send types prompt (set, not keyed in: it may be long) and sends it with 8 tokens at most.
func (b *consoleBrowser) send(prompt string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx,
		chromedp.SetValue(chromedp.ID("max-tokens"), "8"),
		chromedp.SetValue(chromedp.ID("prompt"), prompt),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		b.t.Fatal(err)
	}
}

// card waits for the n-th card of the chat to get a verdict and returns it, with its checks (name → "ok
// detail") and the verdict's text.
func (b *consoleBrowser) card(n int) (verdict string, checks map[string]string, text string) {
	b.t.Helper()
	sel := `document.querySelectorAll("article.answer")[` + strconv.Itoa(n) + `]`
	v, err := chromedp.Run(b.ctx, chromedp.Poll[string](`(() => { const a = `+sel+`; return a && a.dataset.verdict !== "pending" ? a.dataset.verdict : ""; })()`,
		chromedp.WithPollingTimeout(90*time.Second)))
	if err != nil {
		b.t.Fatalf("card %d never got a verdict: %v", n, err)
	}
	checks, err = chromedp.Run(b.ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(Array.from(`+sel+`.querySelectorAll(".checks li")).map(li => [li.dataset.check, (li.dataset.ok || "") + " " + (li.dataset.detail || "")]))`))
	if err != nil {
		b.t.Fatal(err)
	}
	text, err = chromedp.Run(b.ctx, chromedp.Evaluate[string](sel+`.querySelector(".verdict").textContent`))
	if err != nil {
		b.t.Fatal(err)
	}
	return v, checks, text
}

func (b *consoleBrowser) ask(prompt string, n int) (verdict string, checks map[string]string) {
	b.t.Helper()
	b.send(prompt)
	v, c, _ := b.card(n)
	return v, c
}

func (b *consoleBrowser) eval(js string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
	return v
}

func (b *consoleBrowser) shot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	p := screenshotDir() + "/bankml-console-" + name + ".png"
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return p
}

// lastChat is the messages' roles of the last chat request the page sent.
func (b *consoleBrowser) lastChat() []string {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.chats) == 0 {
		return nil
	}
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(b.chats[len(b.chats)-1]), &req); err != nil {
		b.t.Fatalf("the page's chat request: %v", err)
	}
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	return roles
}

// TestConsoleVerifiesAnswersInTheBrowser drives the console in headless Chromium: an answer streamed from
// the server verifies (text sha256, Ed25519 signature, signed checkpoint, inclusion, consistency, pinned
// model), one whose text a proxy changed by one letter shows as failed, a request the server refuses leaves
// the conversation as it was (its text back in the box) so the next one is answered, New chat clears the
// conversation, and the page sends nothing anywhere but the server. Screenshots go to /tmp
// (BANKML_SCREENSHOTS).
func TestConsoleVerifiesAnswersInTheBrowser(t *testing.T) {
	path := storiesPath(t)
	digest, err := provenance.SHA256File(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, _, _, cosig := proofServer(t, AdmitOptions{Manifest: digest}, true)
	b := newConsoleBrowser(t)
	ctx := b.ctx
	b.open(ts.url + "/console")

	pass, total := 0, 0
	expect := func(what string, ok bool) {
		total++
		if ok {
			pass++
		} else {
			t.Errorf("%s", what)
		}
	}
	v, checks := b.ask("Once upon a time", 0)
	verifiedShot := b.shot("verified")
	expect("an honest answer verifies: "+v+" "+fmtChecks(checks), v == "verified")
	for _, c := range []string{"answer", "request", "signature", "checkpoint", "inclusion", "consistency", "model"} {
		expect("check "+c+" passes: "+checks[c], strings.HasPrefix(checks[c], "true "))
	}

	b.tamper.Store(true)
	v, checks = b.ask("Tell me about a cat", 1)
	tamperedShot := b.shot("tampered")
	b.tamper.Store(false)
	expect("the proxy changed a letter of the second answer", b.tampered.Load())
	expect("a tampered answer fails: "+v+" "+fmtChecks(checks), v == "failed")
	expect("the tampered answer's text check fails: "+checks["answer"], strings.HasPrefix(checks["answer"], "false "))
	expect("its receipt's signature still verifies (only the text was changed): "+checks["signature"], strings.HasPrefix(checks["signature"], "true "))

	// Requiring the log's witness: the next answer verifies with its checkpoint cosigned; requiring a witness
	// that never cosigned this log: the checkpoint check fails.
	require := func(vkey string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.Evaluate[chromedp.Void](`document.getElementById("settings").open = true`),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("pin-witness").value = `+strconv.Quote(vkey)),
			chromedp.Click(chromedp.ID("save-settings")),
		); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("settings-note").textContent === "saved"`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("saving the witness key: %v", err)
		}
	}
	require(cosig)
	v, checks = b.ask("Once upon a time there was a witness", 2)
	witnessedShot := b.shot("witnessed")
	expect("with the log's witness required, an answer verifies: "+v+" "+fmtChecks(checks), v == "verified")
	expect("its checkpoint is cosigned by the witness: "+checks["checkpoint"], strings.HasPrefix(checks["checkpoint"], "true ") && strings.Contains(checks["checkpoint"], "cosigned by witness.test/w1"))
	_, otherVKey, err := note.GenerateKey(nil, "witness.test/other")
	if err != nil {
		t.Fatal(err)
	}
	require(otherVKey)
	v, checks = b.ask("Once upon a time there was no witness", 3)
	expect("with a witness that never cosigned required, the answer fails: "+v+" "+fmtChecks(checks), v == "failed")
	expect("its checkpoint check names the missing cosignature: "+checks["checkpoint"], strings.HasPrefix(checks["checkpoint"], "false ") && strings.Contains(checks["checkpoint"], "cosignature"))
	require("")

	// A message longer than the context (512 tokens) is refused (400 exceed_context_size_error): it leaves
	// the conversation, its text goes back in the box, and the next message is answered.
	long := strings.Repeat("Once upon a time there was a cat. ", 120)
	b.send(long)
	v, _, text := b.card(4)
	refusedShot := b.shot("refused")
	expect("a refused request's card says it was not answered: "+v+" "+text, v == "error" && strings.Contains(text, "NOT ANSWERED") && strings.Contains(text, "exceed_context_size_error"))
	expect("the refused message is back in the box", b.eval(`document.getElementById("prompt").value`) == long)
	expect("Send works again after a refusal", b.eval(`String(document.getElementById("send").disabled)`) == "false")
	v, checks = b.ask("Once upon a time there was a dog", 5)
	expect("the message after a refused one is answered and verifies: "+v+" "+fmtChecks(checks), v == "verified")
	roles := strings.Join(b.lastChat(), ",")
	expect("the refused message is not in the conversation sent next (the roles alternate): "+roles,
		roles == "user,assistant,user,assistant,user,assistant,user,assistant,user")

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("new-chat"))); err != nil {
		t.Fatal(err)
	}
	expect("New chat clears the chat", b.eval(`String(document.querySelectorAll("article.answer").length)`) == "0")
	v, _ = b.ask("Once upon a time", 0)
	expect("the first answer of a new chat verifies: "+v, v == "verified")
	roles = strings.Join(b.lastChat(), ",")
	expect("a new chat sends only its own message: "+roles, roles == "user")

	b.mu.Lock()
	for _, u := range b.requested {
		expect("the page asked only its server: "+u, strings.HasPrefix(u, ts.url+"/") || strings.HasPrefix(u, "blob:"))
	}
	n := len(b.requested)
	b.mu.Unlock()
	expect("the page made requests", n > 0)
	t.Logf("console in headless Chromium: %d of %d checks as expected; %d requests, all to the server; screenshots %s, %s, %s, %s", pass, total, n, verifiedShot, tamperedShot, witnessedShot, refusedShot)
}

// TestConsoleShowsAnUnsignedReceiptAsNotChecked: on a server with --history and no --key (the README's
// example) receipts are unsigned; the console shows the signature as not checked, saying why, and the answer
// as "unsigned", not as failed and not as verified, with the answer's hash checks still passing or failing.
func TestConsoleShowsAnUnsignedReceiptAsNotChecked(t *testing.T) {
	l, _ := openLedger(t)
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Ledger: l})
	b := newConsoleBrowser(t)
	b.open(ts.url + "/console/")
	const why = "the server signs no receipts (start it with --key)"
	for i, tc := range []struct {
		name, prompt string
		tamper       bool
		verdict      string
		checks       map[string]string // check → its "ok detail" prefix
	}{
		{name: "an honest unsigned answer is not checked, its hashes pass", prompt: "Once upon a time", verdict: "unsigned",
			checks: map[string]string{"answer": "true ", "request": "true ", "signature": "skipped " + why, "checkpoint": "skipped no transparency log"}},
		{name: "a tampered unsigned answer fails on its text, its signature still not checked", prompt: "Tell me about a cat", tamper: true, verdict: "failed",
			checks: map[string]string{"answer": "false ", "request": "true ", "signature": "skipped " + why}},
	} {
		b.tamper.Store(tc.tamper)
		b.tampered.Store(false)
		v, checks := b.ask(tc.prompt, i)
		b.tamper.Store(false)
		if tc.tamper && !b.tampered.Load() {
			t.Errorf("%s: the proxy changed nothing", tc.name)
		}
		if v != tc.verdict {
			t.Errorf("%s: verdict %q, want %q (%s)", tc.name, v, tc.verdict, fmtChecks(checks))
		}
		for c, want := range tc.checks {
			if !strings.HasPrefix(checks[c], want) {
				t.Errorf("%s: check %s is %q, want %q", tc.name, c, checks[c], want)
			}
		}
	}
	if got := b.eval(`document.getElementById("key-trust").textContent`); !strings.Contains(got, "--key") {
		t.Errorf("the operator key card does not say how to sign: %q", got)
	}
	t.Logf("screenshot %s", b.shot("unsigned"))
}

func fmtChecks(c map[string]string) string {
	var b strings.Builder
	for _, k := range []string{"answer", "request", "signature", "checkpoint", "inclusion", "consistency", "model"} {
		b.WriteString(k + "=" + c[k] + "; ")
	}
	return b.String()
}
