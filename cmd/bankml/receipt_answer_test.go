//go:build !windows

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/provenance"
)

// TestReceiptVerifyWithoutAnswerSaysTheTextWasNotChecked: receipt verify of a saved stream whose text was changed
// said "ok": true with --key alone, as if the answer had been verified, when only the signature over the receipt
// was: the text is checked against response_sha256 only with --answer. Without it the verdict now says the answer
// was NOT CHECKED, ok false, exit 1 (as a log that cannot be read); with --answer a changed text fails (exit 2)
// and the text as received passes (exit 0).
func TestReceiptVerifyWithoutAnswerSaysTheTextWasNotChecked(t *testing.T) {
	keyPath := filepath.Join(t.TempDir(), "op.key")
	if _, err := provenance.WriteKeyFiles(keyPath, "bankml.test/cli"); err != nil {
		t.Fatal(err)
	}
	url := cliProofServer(t, t.TempDir(), keyPath)
	body := `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true}`
	resp, err := httpPost(url+"/v1/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	stream := string(resp)
	text := streamText(stream)
	if text == "" {
		t.Fatalf("a stream with no text:\n%s", stream)
	}
	// The first delta's content changed: the receipt, on the last chunk, is untouched and still verifies.
	i := strings.Index(stream, `"content":"`) + len(`"content":"`)
	altered := stream[:i] + "CHANGED " + stream[i:]
	if streamText(altered) == text {
		t.Fatalf("the stream was not changed:\n%s", altered)
	}
	files := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	alteredPath, streamPath := write("altered.txt", altered), write("stream.txt", stream)
	raw, err := readReceipt(alteredPath, nil) // the receipt alone, as the last chunk carries it
	if err != nil {
		t.Fatal(err)
	}
	receipt := write("receipt.json", string(raw))
	const notChecked = "NOT CHECKED: no --answer: the answer's text is covered only by the receipt's response_sha256; give the text as received with --answer FILE"
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		answer string // the verdict's answer check
		ok     bool
	}{
		{name: "a changed stream with the key alone is not ok: its text was not checked",
			args: []string{alteredPath, "--key", keyPath + ".pub"}, code: 1, answer: notChecked},
		{name: "the receipt alone with the key is not ok: the text was not checked",
			args: []string{receipt, "--key", keyPath + ".pub"}, code: 1, answer: notChecked},
		{name: "the signature and the request checked but not the text is not ok",
			args: []string{streamPath, "--key", keyPath + ".pub", "--request", write("request.json", body)}, code: 1, answer: notChecked},
		{name: "a changed stream's text given with --answer fails",
			args: []string{alteredPath, "--key", keyPath + ".pub", "--answer", write("changed-text.txt", streamText(altered))}, code: 2, answer: "FAILED: "},
		{name: "the text as received checks",
			args: []string{streamPath, "--key", keyPath + ".pub", "--answer", write("text.txt", text)}, code: 0, answer: "sha256 matches", ok: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"receipt", "verify"}, c.args...)...)
			var v receiptVerdict
			if err := json.Unmarshal([]byte(stdout), &v); err != nil {
				t.Fatalf("verdict %q: %v (stderr %q)", stdout, err, stderr)
			}
			if code != c.code || v.OK != c.ok || !strings.HasPrefix(v.Checks["answer"], c.answer) {
				t.Fatalf("exit %d, ok %v, answer %q; want exit %d, ok %v, answer %q…\n%s%s", code, v.OK, v.Checks["answer"], c.code, c.ok, c.answer, stdout, stderr)
			}
			if c.code == 1 && (v.Signature != "verified" || strings.TrimRight(stderr, "\n") != "bankml: receipt verify: answer: not checked: "+strings.TrimPrefix(notChecked, "NOT CHECKED: ")) {
				t.Fatalf("signature %q, stderr %q: want the signature verified and the answer named not checked", v.Signature, stderr)
			}
		})
	}
}
