//go:build !windows

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	f_log "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
	"github.com/bankml/bankml/serve"
)

// TestKeyNewWritesKeyFilesAndShowReadsThem: bankml key new FILE writes the three files (the private one
// 0600) and prints the key's forms; key show prints the same public forms from any of the files.
func TestKeyNewWritesKeyFilesAndShowReadsThem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "op.key")
	code, stdout, stderr := runCLI("key", "new", "--name", "bankml.test/cli", path)
	var k keyInfo
	if err := json.Unmarshal([]byte(stdout), &k); code != 0 || err != nil {
		t.Fatalf("key new: exit %d %v %q %q", code, err, stdout, stderr)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key file: %v %v", fi.Mode(), err)
	}
	if k.KeyName != "bankml.test/cli" || len(k.KeyID) != 8 || !strings.HasPrefix(k.VerifierKey, "bankml.test/cli+"+k.KeyID+"+") || k.CosignatureVKey == "" {
		t.Errorf("key new printed %+v", k)
	}
	for _, f := range []string{path, path + ".pub"} {
		code, out, errOut := runCLI("key", "show", f)
		var s keyInfo
		if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil || s.VerifierKey != k.VerifierKey || s.KeyID != k.KeyID {
			t.Errorf("key show %s: exit %d %q %q", f, code, out, errOut)
		}
	}
	if code, _, stderr := runCLI("key", "new", path); code != 1 || !strings.Contains(stderr, "exists") {
		t.Errorf("key new over an existing key: exit %d %q", code, stderr)
	}
}

// cliProofServer serves stories260K with a history, a POSIX log and the key at keyPath; it returns the
// server's URL.
func cliProofServer(t *testing.T, dir, keyPath string) string {
	t.Helper()
	signer, err := provenance.LoadSigner(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	v, _ := signer.Public().NoteVerifier()
	g, err := ledger.OpenPOSIXLog(filepath.Join(dir, "log"), signer.NoteSigner(), v, ledger.LogOptions{CheckpointInterval: 100 * time.Millisecond, BatchMaxAge: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	m, err := admit.Open(storiesPath(t), admit.Options{Pin: admit.AllowUnpinned, Chat: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, err := serve.New(m, serve.Options{NCtx: 256, Ledger: l, TLog: g, Signer: signer, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts.URL
}

// TestReceiptVerifyAndLedgerVerifyCheckAServedAnswer: an answer's receipt verifies with bankml receipt
// verify (signature by the .pub and by the .pem key, the text and request hashes, the leaf in the log
// over HTTP); a changed byte of the text, another key or a changed receipt exits 2; without a key only the
// hashes given are checked, and with none given nothing is verified (exit 2); a JSON file without
// bankml_receipt is named so; bankml ledger verify --key audits the history and its log.
func TestReceiptVerifyAndLedgerVerifyCheckAServedAnswer(t *testing.T) {
	dir := t.TempDir()
	keyPath := filepath.Join(t.TempDir(), "op.key")
	if _, err := provenance.WriteKeyFiles(keyPath, "bankml.test/cli"); err != nil {
		t.Fatal(err)
	}
	otherKey := filepath.Join(t.TempDir(), "other.key")
	if _, err := provenance.WriteKeyFiles(otherKey, "bankml.test/cli"); err != nil {
		t.Fatal(err)
	}
	url := cliProofServer(t, dir, keyPath)
	body := `{"prompt": "Once upon a time", "max_tokens": 5}`
	resp, err := httpPost(url+"/v1/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(resp, &a); err != nil || len(a.Choices) != 1 {
		t.Fatalf("%v: %s", err, resp)
	}
	files := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	answerPath := write("answer.json", string(resp))
	textPath := write("text.txt", a.Choices[0].Text)
	requestPath := write("request.json", body)
	changedText := write("changed.txt", a.Choices[0].Text+" ")
	changedReceipt := write("changed.json", strings.Replace(string(resp), `"completion_tokens":`, `"completion_tokens":1`, 1))

	pass, total := 0, 0
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"the receipt, its text and request, and its leaf over HTTP", []string{answerPath, "--key", keyPath + ".pub", "--answer", textPath, "--request", requestPath, "--log", url + "/bankml/ledger/"}, 0, `"inclusion": "leaf 0 of`},
		{"the key as PEM", []string{answerPath, "--key", keyPath + ".pem", "--answer", textPath}, 0, `"signature": "verified"`},
		{"a text with one byte more", []string{answerPath, "--key", keyPath + ".pub", "--answer", changedText}, 2, `"answer": "FAILED`},
		{"another key", []string{answerPath, "--key", otherKey + ".pub"}, 2, `signed by another key`},
		{"a changed receipt", []string{changedReceipt, "--key", keyPath + ".pub"}, 2, `does not verify`},
		{"no key and nothing else: nothing verified", []string{answerPath}, 2, `"reason": "nothing verified: give --key (and --log)`},
		{"no key, the text's hash checked", []string{answerPath, "--answer", textPath}, 0, `"answer": "sha256 matches"`},
		{"no key, a text with one byte more", []string{answerPath, "--answer", changedText}, 2, `"answer": "FAILED`},
	} {
		total++
		code, stdout, stderr := runCLI(append([]string{"receipt", "verify"}, c.args...)...)
		if code != c.code || !strings.Contains(stdout, c.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", c.name, code, c.code, c.want, stdout, stderr)
			continue
		}
		pass++
	}
	total++
	if code, stdout, stderr := runCLI("receipt", "verify", requestPath, "--key", keyPath+".pub"); code == 1 && stdout == "" && strings.Contains(stderr, "holds no bankml_receipt") {
		pass++
	} else {
		t.Errorf("receipt verify of a JSON file without bankml_receipt: exit %d %q %q, want 1 saying it holds none", code, stdout, stderr)
	}
	// The history and its log: every entry published, each proved.
	deadline := time.Now().Add(10 * time.Second)
	for {
		total++
		code, stdout, stderr := runCLI("ledger", "verify", dir, "--key", keyPath+".pub", "--all-published")
		if code == 0 && strings.Contains(stdout, `"published": 1`) {
			pass++
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger verify --key: exit %d\n%s%s", code, stdout, stderr)
		}
		total--
		time.Sleep(100 * time.Millisecond)
	}
	// Consistency: the checkpoint of one entry, then two more answers; a forked checkpoint of one entry
	// (another root, signed by the same key) is not consistent with the log.
	early, err := httpGet(url + "/bankml/ledger/checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	earlyPath := write("early.checkpoint", string(early))
	signer, err := provenance.LoadSigner(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	forked, err := note.Sign(&note.Note{Text: string(f_log.Checkpoint{Origin: "bankml.test/cli", Size: 1, Hash: make([]byte, 32)}.Marshal())}, signer.NoteSigner())
	if err != nil {
		t.Fatal(err)
	}
	forkedPath := write("forked.checkpoint", string(forked))
	for range 2 {
		if _, err := httpPost(url+"/v1/completions", body); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, stdout, stderr := runCLI("ledger", "verify", dir, "--key", keyPath+".pub", "--since", earlyPath, "--all-published")
		if code == 0 && strings.Contains(stdout, `"consistent_to": 1`) && strings.Contains(stdout, `"published": 3`) {
			pass++
			total++
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger verify --since: exit %d\n%s%s", code, stdout, stderr)
		}
	}
	total++
	if code, stdout, _ := runCLI("ledger", "verify", dir, "--key", keyPath+".pub", "--since", forkedPath); code == 2 && strings.Contains(stdout, "consistency") {
		pass++
	} else {
		t.Errorf("ledger verify --since a forked checkpoint: exit %d %s", code, stdout)
	}
	total++
	if code, stdout, _ := runCLI("ledger", "verify", dir, "--key", otherKey+".pub"); code == 2 && strings.Contains(stdout, `"ok": false`) {
		pass++
	} else {
		t.Errorf("ledger verify with another key: exit %d %s", code, stdout)
	}
	t.Logf("receipt verify and ledger verify: %d of %d as expected", pass, total)
}

// httpGet returns the body of a GET (an error for a status other than 200).
func httpGet(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return b, err
}

// httpPost posts a JSON body and returns the answer's bytes (an error for a status other than 200).
func httpPost(url, body string) ([]byte, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return b, err
}

// TestWitnessRefusesAMissingKey: bankml witness names a key file it cannot read (exit 1).
func TestWitnessRefusesAMissingKey(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI("witness", "--key", filepath.Join(dir, "none.key"), "--log", "x+00000000+AA", "--state", filepath.Join(dir, "s.json"))
	if code != 1 || !strings.Contains(stderr, "none.key") {
		t.Errorf("witness with a missing key: exit %d %q", code, stderr)
	}
}

// TestServeRefusesProofFlagsThatDoNotGoTogether: --history-db without --history or --key, and
// --witness-policy without a log, are usage errors naming the flag; a key others may read is refused.
func TestServeRefusesProofFlagsThatDoNotGoTogether(t *testing.T) {
	model := storiesPath(t)
	keyPath := filepath.Join(t.TempDir(), "op.key")
	if _, err := provenance.WriteKeyFiles(keyPath, "bankml.test/cli"); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(t.TempDir(), "loose.key")
	if _, err := provenance.WriteKeyFiles(loose, "bankml.test/cli"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	hist := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"--history-db without --history", []string{"--history-db", "root@tcp(127.0.0.1:1)/x", "--key", keyPath}, "--history-db needs --history"},
		{"--history-db without --key", []string{"--history", hist, "--history-db", "root@tcp(127.0.0.1:1)/x"}, "--history-db needs --key"},
		{"--witness-policy without a log", []string{"--witness-policy", keyPath}, "--witness-policy needs --history and --key"},
		{"a key others may read", []string{"--key", loose}, "chmod 600"},
	} {
		code, _, stderr := runCLI(append([]string{"serve", model, "--unpinned", "--port", "0"}, c.args...)...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d %q, want 1 and %q", c.name, code, stderr, c.want)
		}
	}
}

// TestALogThatCannotBeReadLeavesTheInclusionNotCheckedNotFailed: receipt verify --log of a log that does not
// answer (nothing listening, a wrong address, a server error, a folder without a log) waited --timeout and
// reported "inclusion: FAILED" with exit 2, as for a forged receipt; it now says at once that the inclusion
// could not be checked, exit 1 (an I/O error, docs/cli.md). A log that answers and disproves the leaf (another
// log signed by the same key, a signed checkpoint that never reaches the leaf) still fails it, exit 2.
func TestALogThatCannotBeReadLeavesTheInclusionNotCheckedNotFailed(t *testing.T) {
	keyPath := filepath.Join(t.TempDir(), "op.key")
	if _, err := provenance.WriteKeyFiles(keyPath, "bankml.test/cli"); err != nil {
		t.Fatal(err)
	}
	url := cliProofServer(t, t.TempDir(), keyPath)
	forked := cliProofServer(t, t.TempDir(), keyPath) // the same key, other answers
	empty := cliProofServer(t, t.TempDir(), keyPath)  // the same key, no answers
	answer := filepath.Join(t.TempDir(), "answer.json")
	text := filepath.Join(t.TempDir(), "text.txt")
	for i, u := range []string{url, forked} {
		resp, err := httpPost(u+"/v1/completions", fmt.Sprintf(`{"prompt": "Once upon a time %d", "max_tokens": 3}`, i))
		if err != nil {
			t.Fatal(err)
		}
		if u == url {
			var a struct {
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(resp, &a); err != nil || len(a.Choices) != 1 {
				t.Fatalf("%v: %s", err, resp)
			}
			if err := os.WriteFile(answer, resp, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(text, []byte(a.Choices[0].Text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer broken.Close()
	for _, c := range []struct {
		name, log string
		timeout   string
		code      int
		want      string // the verdict's inclusion check starts so
	}{
		{"nothing listening", deadURL + "/bankml/ledger/", "30", 1, "NOT CHECKED: the log " + deadURL + "/bankml/ledger/ could not be read (its checkpoint): "},
		{"an address that is no log", url + "/nope/", "30", 1, "NOT CHECKED: the log " + url + "/nope/ could not be read (its checkpoint): "},
		{"a server error", broken.URL + "/", "30", 1, "NOT CHECKED: the log " + broken.URL + "/ could not be read (its checkpoint): "},
		{"a folder without a log", filepath.Join(t.TempDir(), "log"), "30", 1, "NOT CHECKED: the log "},
		{"the log", url + "/bankml/ledger/", "30", 0, "leaf 0 of "},
		{"another log signed by the same key", forked + "/bankml/ledger/", "30", 2, "FAILED: "},
		{"a log whose checkpoint never reaches the leaf", empty + "/bankml/ledger/", "1", 2, "FAILED: no checkpoint signed by bankml.test/cli includes leaf 0 after 1 s (the latest has 0 entries)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr := runCLI("receipt", "verify", answer, "--key", keyPath+".pub", "--answer", text, "--log", c.log, "--timeout", c.timeout)
			var v receiptVerdict
			if err := json.Unmarshal([]byte(stdout), &v); err != nil {
				t.Fatalf("verdict %q: %v (stderr %q)", stdout, err, stderr)
			}
			if code != c.code || !strings.HasPrefix(v.Checks["inclusion"], c.want) || v.Signature != "verified" {
				t.Fatalf("exit %d, inclusion %q, signature %q; want exit %d, inclusion %q…\n%s", code, v.Checks["inclusion"], v.Signature, c.code, c.want, stderr)
			}
			if c.code == 1 && time.Since(start) > 5*time.Second {
				t.Errorf("took %v: a log that cannot be read is not waited for", time.Since(start))
			}
		})
	}
}

// streamText is the answer text of a saved stream as a client decodes it: the chunks' text (a chat delta's
// content, a completion's text, Ollama's message content or response, /completion's content) concatenated.
func streamText(stream string) string {
	var b strings.Builder
	for _, line := range strings.Split(stream, "\n") {
		line = strings.TrimPrefix(strings.TrimSuffix(line, "\r"), "data: ")
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content *string } `json:"delta"`
				Text  string                    `json:"text"`
			} `json:"choices"`
			Message  struct{ Content string } `json:"message"`
			Response string                   `json:"response"`
			Content  string                   `json:"content"`
		}
		if json.Unmarshal([]byte(line), &c) != nil {
			continue // a chunk cut short: no text
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				b.WriteString(*ch.Delta.Content)
			}
			b.WriteString(ch.Text)
		}
		b.WriteString(c.Message.Content + c.Response + c.Content)
	}
	return b.String()
}

// TestAStreamedAnswerIsVerifiedAsSavedFromTheChunkThatCarriesItsReceipt: receipt verify of a streamed answer
// saved as it arrived (README's "stream":true) failed with "not a JSON object"; it now takes the receipt from
// the chunk that carries it, in llama-server's and OpenAI's SSE and in Ollama's NDJSON, and the text the
// client put together from the stream checks with --answer, the body sent with --request, the leaf with --log.
// A stream with no receipt (cut short) and a file of two answers' streams (chunks after the receipt, which it
// does not cover) are refused saying so.
func TestAStreamedAnswerIsVerifiedAsSavedFromTheChunkThatCarriesItsReceipt(t *testing.T) {
	keyPath := filepath.Join(t.TempDir(), "op.key")
	if _, err := provenance.WriteKeyFiles(keyPath, "bankml.test/cli"); err != nil {
		t.Fatal(err)
	}
	url := cliProofServer(t, t.TempDir(), keyPath)
	files := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	post := func(route, body string) string {
		resp, err := httpPost(url+route, body)
		if err != nil {
			t.Fatal(err)
		}
		return string(resp)
	}
	chat := `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true}`
	completion := `{"prompt":"Once upon a time","max_tokens":8,"stream":true}`
	usage := `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`
	native := `{"prompt":"Once upon a time","n_predict":8,"stream":true}`
	ollamaChat := `{"model":"stories260K","messages":[{"role":"user","content":"Hi"}],"options":{"num_predict":8}}`
	ollamaGenerate := `{"model":"stories260K","prompt":"Once upon a time","options":{"num_predict":8}}`
	chatStream := post("/v1/chat/completions", chat)
	cut := chatStream[:strings.LastIndex(chatStream[:strings.Index(chatStream, "bankml_receipt")], "\n")+1] // the chunks before the receipt's
	for _, c := range []struct {
		name, route, body, stream string // stream "": the route's answer to body
		code                      int
		want                      string // in standard output (exit 0) or standard error
	}{
		{name: "an OpenAI chat stream", route: "/v1/chat/completions", body: chat, stream: chatStream, want: `"inclusion": "leaf `},
		{name: "an OpenAI completion stream", route: "/v1/completions", body: completion, want: `"inclusion": "leaf `},
		{name: "a stream with the usage chunk", route: "/v1/chat/completions", body: usage, want: `"inclusion": "leaf `},
		{name: "llama-server's /completion stream", route: "/completion", body: native, want: `"inclusion": "leaf `},
		{name: "an Ollama chat stream", route: "/api/chat", body: ollamaChat, want: `"inclusion": "leaf `},
		{name: "an Ollama generate stream", route: "/api/generate", body: ollamaGenerate, want: `"inclusion": "leaf `},
		{name: "a stream saved with CRLF line ends", body: chat, stream: strings.ReplaceAll(chatStream, "\n", "\r\n"), want: `"inclusion": "leaf `},
		{name: "a stream cut short before its receipt", body: chat, stream: cut, code: 1,
			want: "with no bankml_receipt (the last chunk of an answer carries it: it was cut short before its last chunk)"},
		{name: "a stream cut inside its receipt's chunk", body: chat, stream: chatStream[:len(cut)+40], code: 1,
			want: "of the stream is no JSON object (the file was cut short or changed): unexpected end of JSON input"},
		{name: "two answers' streams in one file", body: chat, stream: chatStream + post("/v1/chat/completions", chat), code: 1,
			want: "comes after the chunk that carries the receipt and is not covered by it (save one answer's stream per file, as received)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stream := c.stream
			if stream == "" {
				stream = post(c.route, c.body)
			}
			args := []string{"receipt", "verify", write("stream.txt", stream), "--key", keyPath + ".pub",
				"--answer", write("text.txt", streamText(stream)), "--request", write("request.json", c.body), "--log", url + "/bankml/ledger/"}
			code, stdout, stderr := runCLI(args...)
			if code != c.code || !strings.Contains(stdout+stderr, c.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s%s", code, c.code, c.want, stdout, stderr)
			}
			if c.code == 0 && (!strings.Contains(stdout, `"answer": "sha256 matches"`) || !strings.Contains(stdout, `"request": "sha256 matches"`)) {
				t.Fatalf("the text or the request does not check:\n%s", stdout)
			}
		})
	}
}

// TestAUsageErrorOfASubcommandPointsAtItsOwnHelp: kong's usage errors of a subcommand pointed at its parent's
// help (bankml ledger prove hist -1: "unknown flag -1 … (see bankml ledger --help)"), which does not list the
// subcommand's arguments; they point at the subcommand's own help, and a negative number given for a count
// (ledger prove's I, which kong reads as a flag) is said to be out of the count's range.
func TestAUsageErrorOfASubcommandPointsAtItsOwnHelp(t *testing.T) {
	dir, _ := writeLedger(t, 2)
	for _, c := range []struct {
		name string
		args []string
		want string // standard error, whole
	}{
		{"a negative index", []string{"ledger", "prove", dir, "-1"},
			"bankml: ledger prove: I: value -1 out of range [0, inf) (the entry's index, from 0; see bankml ledger prove --help)"},
		{"a negative index of two digits", []string{"ledger", "prove", dir, "-12"},
			"bankml: ledger prove: I: value -12 out of range [0, inf) (the entry's index, from 0; see bankml ledger prove --help)"},
		{"an index that is no number", []string{"ledger", "prove", dir, "x"},
			`bankml: ledger prove: <I>: expected a valid 64 bit uint but got "x" (see bankml ledger prove --help)`},
		{"a size that is no count", []string{"ledger", "verify", dir, "--size", "-1"},
			`bankml: ledger verify: --size: value -1 out of range [1, inf) (the entry count of the head given by --root: a published head has at least one entry)`},
		{"an unknown flag of receipt verify", []string{"receipt", "verify", "x.json", "--nope"},
			"bankml: receipt verify: unknown flag --nope (see bankml receipt verify --help)"},
		{"key show without its file", []string{"key", "show"},
			`bankml: key show: expected "<FILE>" (see bankml key show --help)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(c.args...)
			if code != 1 || strings.TrimRight(stderr, "\n") != c.want {
				t.Fatalf("exit %d, stderr\n%s\nwant exit 1 and\n%s", code, stderr, c.want)
			}
		})
	}
}

// TestAFileThatIsNoKeyIsNamedWithoutQuotingItsContent: key show FILE and --key FILE of a file that is no key
// quoted up to its whole content in the error ("key name \"{\\\"bankml_receipt\\\"…\""), and a file given by
// mistake may hold a secret; the error names the file and what a key file is, and quotes none of its bytes.
func TestAFileThatIsNoKeyIsNamedWithoutQuotingItsContent(t *testing.T) {
	const secret = "s3cr3t"
	dir, _ := writeLedger(t, 1)
	files := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	answer := write("answer.json", `{"bankml_receipt":{"signed":true,"request_sha256":"`+secret+`","response_sha256":""}}`)
	const want = "want a verifier key (NAME+HASH+BASE64, as bankml key new writes to FILE.pub) or a PEM public key (FILE.pem)"
	for _, c := range []struct {
		name, content, why string
	}{
		{"an answer", `{"bankml_receipt":{"token":"` + secret + `"}}`, "neither a verifier key nor a PEM public key"},
		{"one line with no '+'", "password=" + secret + "\n", "neither a verifier key nor a PEM public key"},
		{"a name with a space", "user " + secret + "+abcd1234+AQ==\n", "not a verifier key: its name (before the first '+') must be non-empty UTF-8 without spaces or '+'"},
		{"a key that is no base64", "user+" + secret + "+" + secret + "!\n", "not a verifier key: its key (after the second '+') is not base64 (illegal base64 data at input byte 6)"},
		{"a key that is no Ed25519 key", secret + "+abcd1234+AAAA\n", "not an Ed25519 verifier key: its key (after the second '+') must be 0x01 and 32 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := write("not-a-key", c.content)
			for _, args := range [][]string{
				{"key", "show", p},
				{"receipt", "verify", answer, "--key", p},
				{"ledger", "verify", dir, "--key", p},
			} {
				code, _, stderr := runCLI(args...)
				line := strings.TrimRight(stderr, "\n")
				if code != 1 || strings.Contains(line, secret) || !strings.Contains(line, p+": key: "+c.why+"; "+want) && !strings.Contains(line, p+": key: "+c.why+": "+want) {
					t.Errorf("%s: exit %d, stderr\n%s\nwant exit 1 naming %s and saying %q, quoting nothing of it", strings.Join(args[:2], " "), code, line, p, c.why)
				}
			}
		})
	}
}
