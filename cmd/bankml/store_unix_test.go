//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTheMainJobServesStories260KByName is the README's main job: `bankml serve stories260K --history DIR`
// with no path and no sha256 typed (the catalog's file through the mirror $BANKML_MIRROR names, as on this
// project's machines); the answer's receipt is pinned to the catalog's digest.
func TestTheMainJobServesStories260KByName(t *testing.T) {
	_, models := storeEnv(t)
	t.Setenv("BANKML_MIRROR", models)
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := run([]string{"serve", "stories260K", "--listen", "127.0.0.1:0", "-t", "1", "--history", t.TempDir()}, strings.NewReader(""), io.Discard, pw)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	addr, lines := "", []string{}
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatalf("the command did not listen (exit %d): %q", <-done, lines)
	}
	go io.Copy(io.Discard, pr)
	if !strings.Contains(strings.Join(lines, "\n"), "pulled stories260K:latest") {
		t.Errorf("no pull on first use in %q", lines)
	}
	resp, err := http.Post(addr+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":8}`))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Model   string `json:"model"`
		Receipt struct {
			Pinned      bool   `json:"pinned"`
			ModelSHA256 string `json:"model_sha256"`
		} `json:"bankml_receipt"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !v.Receipt.Pinned || v.Receipt.ModelSHA256 != storiesSHA256 || v.Model != "stories260K:latest" {
		t.Fatalf("answer %d %+v %v", resp.StatusCode, v, err)
	}
	stopServe(t, done, 30*time.Second)
}
