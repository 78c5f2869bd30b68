//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
	"github.com/bankml/bankml/pull"
	"github.com/bankml/bankml/store"
)

// historyStore fills the store of storeEnv with two models of different files, stories260K:latest and
// tiny:q8_0 (its Q8_0 derivative), and returns each one's sha256 by name.
func historyStore(t *testing.T) map[string]string {
	t.Helper()
	dir, models := storeEnv(t)
	s, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	po := store.PullOptions{Mirror: models, Fetch: pull.Options{Backoff: time.Millisecond}}
	a, err := s.Pull(context.Background(), "stories260K", po)
	if err != nil {
		t.Fatal(err)
	}
	po.Name = "tiny:q8_0"
	b, err := s.Pull(context.Background(), filepath.Join(models, "derived", "stories260K-Q8_0.gguf"), po)
	if err != nil {
		t.Fatal(err)
	}
	if a.Model.SHA256 == b.Model.SHA256 {
		t.Fatal("the two models share a file")
	}
	return map[string]string{"stories260K": a.Model.SHA256, "tiny:q8_0": b.Model.SHA256}
}

// startStoreServer runs `bankml serve` without a model in this process with args and returns its URL and a
// stop that sends the process SIGTERM and checks the exit status 0.
func startStoreServer(t *testing.T, args ...string) (url string, stop func()) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var banner strings.Builder
	go func() {
		code := run(append([]string{"serve", "--listen", "127.0.0.1:0", "-t", "1", "-c", "256"}, args...), strings.NewReader(""), io.Discard, pw)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		banner.WriteString(sc.Text() + "\n")
		if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			url = a
			break
		}
	}
	if url == "" {
		t.Fatalf("the store server did not listen (exit %d):\n%s", <-done, banner.String())
	}
	go io.Copy(io.Discard, pr)
	return url, func() {
		t.Helper()
		stopServe(t, done, 60*time.Second)
	}
}

// TestTheStoreServerSignsEveryModelsAnswersIntoOneHistoryAndLog: bankml serve without MODEL, with --history
// and --key, answers two models of the store from one history, one transparency log and one key: each
// receipt is signed, names its model's file (model_sha256) and verifies with bankml receipt verify against
// the log the server serves once at /bankml/ledger/ (no model named); the leaves follow the answers' order,
// and a restart on the same --history continues the same log. Before, the store server refused --history
// and --key ("not supported yet").
func TestTheStoreServerSignsEveryModelsAnswersIntoOneHistoryAndLog(t *testing.T) {
	sha := historyStore(t)
	hist := filepath.Join(t.TempDir(), "history")
	keyPath := filepath.Join(t.TempDir(), "op.key")
	if _, err := provenance.WriteKeyFiles(keyPath, "bankml.test/store"); err != nil {
		t.Fatal(err)
	}
	files := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var url string
	stop := func() {}
	var order []string // the models answered, in order
	for i, step := range []struct {
		name    string
		restart bool // stop the server and start it again on the same history first
		model   string
		leaf    uint64
	}{
		{name: "the first model's answer is leaf 0, signed and naming its file", model: "stories260K", leaf: 0},
		{name: "another model's answer goes to the same history and log as leaf 1", model: "tiny:q8_0", leaf: 1},
		{name: "after a restart on the same history the log continues at leaf 2", restart: true, model: "stories260K", leaf: 2},
	} {
		t.Run(step.name, func(t *testing.T) {
			if url == "" || step.restart {
				if url != "" {
					stop()
				}
				url, stop = startStoreServer(t, "--history", hist, "--key", keyPath)
				// The ledger routes answer once for the whole store, no model named or loaded.
				key, err := httpGet(url + "/bankml/ledger/key")
				if err != nil || !strings.Contains(string(key), `"key_name":"bankml.test/store"`) {
					t.Fatalf("GET /bankml/ledger/key before any model: %v %s", err, key)
				}
			}
			body := `{"model": "` + step.model + `", "prompt": "Once upon a time", "max_tokens": 4, "temperature": 0}`
			resp, err := httpPost(url+"/v1/completions", body)
			if err != nil {
				t.Fatal(err)
			}
			var a struct {
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
				Receipt struct {
					ModelSHA256 string  `json:"model_sha256"`
					LedgerIndex *uint64 `json:"ledger_index"`
					Signed      bool    `json:"signed"`
					Pinned      bool    `json:"pinned"`
				} `json:"bankml_receipt"`
			}
			if err := json.Unmarshal(resp, &a); err != nil || len(a.Choices) != 1 {
				t.Fatalf("%v: %s", err, resp)
			}
			rc := a.Receipt
			if rc.ModelSHA256 != sha[step.model] || !rc.Signed || !rc.Pinned || rc.LedgerIndex == nil || *rc.LedgerIndex != step.leaf {
				t.Fatalf("receipt %+v (index %v), want model_sha256 %s, signed, pinned, leaf %d", rc, rc.LedgerIndex, sha[step.model], step.leaf)
			}
			order = append(order, step.model)
			n := string(rune('a' + i))
			code, stdout, stderr := runCLI("receipt", "verify", write(n+".json", string(resp)), "--key", keyPath+".pub",
				"--answer", write(n+".txt", a.Choices[0].Text), "--request", write(n+".req", body), "--log", url+"/bankml/ledger/")
			if want := `"inclusion": "leaf ` + string(rune('0'+step.leaf)) + ` of`; code != 0 || !strings.Contains(stdout, want) {
				t.Fatalf("receipt verify: exit %d, want 0 with %q:\n%s%s", code, want, stdout, stderr)
			}
		})
	}
	stop()
	// The history holds the three answers in order, each line's receipt naming its model's file, and the
	// log has every one of them.
	var got []string
	if err := ledger.Entries(hist, func(e ledger.Entry) error {
		var r struct {
			ModelSHA256 string `json:"model_sha256"`
		}
		if err := json.Unmarshal(e.Receipt, &r); err != nil {
			return err
		}
		got = append(got, r.ModelSHA256)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(order) {
		t.Fatalf("the history holds %d entries, want %d", len(got), len(order))
	}
	for i, m := range order {
		if got[i] != sha[m] {
			t.Errorf("history entry %d names %s, want %s's %s", i, got[i], m, sha[m])
		}
	}
	if code, stdout, stderr := runCLI("ledger", "verify", hist, "--key", keyPath+".pub", "--all-published"); code != 0 || !strings.Contains(stdout, `"published": 3`) {
		t.Errorf("ledger verify --all-published: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestTheStoreServerRefusesBadProofFlagsAsTheSingleModelServer: a bad --key, --witness-policy, --history-db
// or --history is refused by the store server with the single-model server's own message (one check, the
// same words), before the history folder is made; -a/--alias, --unpinned and --manifest are refused without
// MODEL as not applying to a store. Before, the store server refused every proof flag as "not supported yet".
func TestTheStoreServerRefusesBadProofFlagsAsTheSingleModelServer(t *testing.T) {
	storeEnv(t)
	model := storiesPath(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "op.key")
	if _, err := provenance.WriteKeyFiles(key, "bankml.test/store"); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open.key") // the same key, readable by everyone
	b, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(open, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name    string
		args    []string
		history string // --history, when not a fresh folder
		msg     string
		single  bool // the single-model server refuses it with the same message
	}{
		{name: "a key file others can read is refused with its mode named",
			args: []string{"--key", open}, msg: "serve: --key: key: " + open + " has mode 0644", single: true},
		{name: "a missing key file is refused with the flag named",
			args: []string{"--key", filepath.Join(dir, "nosuch.key")}, msg: "serve: --key: key: stat", single: true},
		{name: "a missing witness policy is refused with the flag named",
			args: []string{"--key", key, "--witness-policy", filepath.Join(dir, "nosuch.policy")}, msg: "serve: --witness-policy: open", single: true},
		{name: "a history database without a key is refused",
			args: []string{"--history-db", "u@tcp(127.0.0.1:1)/db"}, msg: "serve: --history-db needs --key", single: true},
		{name: "a history folder under a file is refused with the flag named",
			args: []string{"--key", key}, history: filepath.Join(notDir, "history"), msg: "serve: --history: ", single: true},
		{name: "an alias is refused as not applying to a store",
			args: []string{"-a", "x"}, msg: "serve: without MODEL (serving the store) -a/--alias, --unpinned and --manifest do not apply"},
		{name: "--unpinned is refused as not applying to a store",
			args: []string{"--unpinned"}, msg: "serve: without MODEL (serving the store) -a/--alias, --unpinned and --manifest do not apply"},
		{name: "--manifest is refused as not applying to a store",
			args: []string{"--manifest", "sha256:" + storiesSHA256}, msg: "serve: without MODEL (serving the store) -a/--alias, --unpinned and --manifest do not apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			history := tc.history
			if history == "" {
				history = filepath.Join(dir, "history", string(rune('a'+i)))
			}
			args := append([]string{"serve", "--port", "0", "--history", history}, tc.args...)
			code, _, stderr := runCLI(args...)
			if code != 1 || !strings.Contains(stderr, tc.msg) {
				t.Fatalf("store server: exit %d, stderr %q; want exit 1 and %q", code, stderr, tc.msg)
			}
			if _, err := os.Stat(history); !os.IsNotExist(err) && !strings.Contains(err.Error(), "not a directory") {
				t.Fatalf("the history folder %s exists after the refusal (%v)", history, err)
			}
			if !tc.single {
				return
			}
			single, _, singleErr := runCLI(append([]string{"serve", model, "--unpinned", "--port", "0", "--history", history}, tc.args...)...)
			if single != code || firstLine(singleErr) != firstLine(stderr) {
				t.Fatalf("the single-model server: exit %d %q; the store server: exit %d %q", single, singleErr, code, stderr)
			}
		})
	}
}

// firstLine is s's first line whose text starts with "bankml:" (the error), else s.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "bankml:") {
			return l
		}
	}
	return s
}
