//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bankml/bankml/ledger"
)

// TestServeAnswersAndStopsOnSIGTERM runs `bankml serve` pinned by the model's digest with a history, asks it
// one completion, sends the process SIGTERM (the command catches it), and checks the exit status 0, the
// pinned receipt and the ledger.
func TestServeAnswersAndStopsOnSIGTERM(t *testing.T) {
	dir, model := t.TempDir(), storiesPath(t) // here, not in the goroutine: t.Skip must run on the test's own
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := run([]string{"serve", model, "--manifest", storiesSHA256, "--listen", "127.0.0.1:0", "-t", "1", "--history", dir}, strings.NewReader(""), io.Discard, pw)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	addr := ""
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatalf("the command did not listen (exit %d)", <-done)
	}
	go io.Copy(io.Discard, pr)
	resp, err := http.Post(addr+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}`))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Receipt struct {
			Pinned      bool   `json:"pinned"`
			ModelSHA256 string `json:"model_sha256"`
		} `json:"bankml_receipt"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !v.Receipt.Pinned || v.Receipt.ModelSHA256 != storiesSHA256 {
		t.Fatalf("answer %d %+v %v", resp.StatusCode, v, err)
	}
	stopServe(t, done, 30*time.Second)
	rep, err := ledger.Verify(dir)
	if err != nil || rep.Size != 1 {
		t.Fatalf("ledger after the run: %+v %v", rep, err)
	}
}

// stopServe sends this process SIGTERM and waits up to wait for the serve command running in it (its exit status
// arriving on done) to shut down gracefully: exit 0.
func stopServe(t *testing.T, done <-chan int, wait time.Duration) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after SIGTERM", code)
		}
	case <-time.After(wait):
		t.Fatal("bankml serve did not stop on SIGTERM")
	}
}
