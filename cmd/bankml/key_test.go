package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/provenance"
)

// TestKeyShowGivesOneKeyIDForEveryFormOfAKey: key show of the private key, FILE.pub and FILE.pem of one key gives
// the key_id receipts carry (the signer's); a PEM alone has no name, so no key id, unless --name gives it.
func TestKeyShowGivesOneKeyIDForEveryFormOfAKey(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	if code, _, stderr := runCLI("key", "new", "--name", "bankml.test/polish", key); code != 0 {
		t.Fatalf("key new: exit %d %s", code, stderr)
	}
	signer, err := provenance.LoadSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	id := signer.KeyID() // the key_id of every receipt it signs
	lone := filepath.Join(dir, "lone.pem")
	pem, err := os.ReadFile(key + ".pem")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		keyName, keyID string
		note           string // in the note, or the error
	}{
		{name: "the private key gives the signer's key id", args: []string{key}, keyName: "bankml.test/polish", keyID: id},
		{name: "the verifier key gives the same", args: []string{key + ".pub"}, keyName: "bankml.test/polish", keyID: id},
		{name: "the PEM beside them gives the same, its name taken from FILE.pub", args: []string{key + ".pem"},
			keyName: "bankml.test/polish", keyID: id, note: "key_name is " + key + ".pub's"},
		{name: "a PEM alone has no name and so no key id, and says so", args: []string{lone},
			note: "a PEM public key carries no name"},
		{name: "a PEM alone with --name gives the key id under that name", args: []string{lone, "--name", "bankml.test/polish"},
			keyName: "bankml.test/polish", keyID: id, note: "--name's"},
		{name: "--name on a key file naming its key otherwise is refused", args: []string{key + ".pub", "--name", "other"}, code: 1,
			note: `bankml: key show: --name "other": ` + key + `.pub names its key "bankml.test/polish"`},
		{name: "a --name no key can have is refused", args: []string{lone, "--name", "a b"}, code: 1,
			note: `bankml: key show: --name "a b": a key name is UTF-8 without spaces or '+'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"key", "show"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			if code != 0 {
				if !strings.HasPrefix(stderr, tc.note) {
					t.Errorf("stderr %q, want %q", stderr, tc.note)
				}
				return
			}
			var k struct { // keyInfo's fields, as key show prints them
				KeyName         string `json:"key_name"`
				KeyID           string `json:"key_id"`
				VerifierKey     string `json:"vkey"`
				CosignatureVKey string `json:"cosignature_vkey"`
				Note            string `json:"note"`
			}
			if err := json.Unmarshal([]byte(stdout), &k); err != nil {
				t.Fatal(err)
			}
			if k.KeyName != tc.keyName || k.KeyID != tc.keyID || !strings.Contains(k.Note, tc.note) {
				t.Errorf("got %+v; want key_name %q, key_id %q, a note with %q", k, tc.keyName, tc.keyID, tc.note)
			}
			if tc.keyID == "" && (k.VerifierKey != "" || k.CosignatureVKey != "") {
				t.Errorf("verifier keys without a name: %+v", k)
			}
		})
	}
}
