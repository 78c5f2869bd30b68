package provenance

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// TestWriteKeyFilesWritesAPrivateKeyOnlyItsOwnerReads checks bankml key new's files: the private key with
// mode 0600, never replaced; the verifier key and the PEM naming the same key; the key id equal to the
// C2SP key hash that golang.org/x/mod/sumdb/note computes for the verifier key.
func TestWriteKeyFilesWritesAPrivateKeyOnlyItsOwnerReads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "operator.key")
	pub, err := WriteKeyFiles(path, "bankml.test/log")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %04o, want 0600", fi.Mode().Perm())
	}
	if _, err := WriteKeyFiles(path, "bankml.test/log"); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a second key new over the same file: %v, want a refusal naming the file", err)
	}
	s, err := LoadSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	vk, err := ReadPublicKey(path + PubSuffix)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := ReadPublicKey(path + PEMSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if !vk.Key.Equal(pub.Key) || !pk.Key.Equal(pub.Key) || !s.Public().Key.Equal(pub.Key) || vk.Name != "bankml.test/log" {
		t.Fatalf("the key files disagree: pub %+v, vkey %+v, pem %+v", pub, vk, pk)
	}
	nv, err := note.NewVerifier(vk.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	if got := KeyID(vk.Name, vk.Key); got != strings.SplitN(vk.VerifierKey(), "+", 3)[1] || KeyHash(vk.Name, vk.Key) != nv.KeyHash() || s.KeyID() != got {
		t.Errorf("key id %s, note's key hash %08x", got, nv.KeyHash())
	}
	// The signer signs checkpoints as a signed note that note.Open verifies with the verifier key.
	msg, err := note.Sign(&note.Note{Text: "bankml.test/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"}, s.NoteSigner())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(msg, note.VerifierList(nv)); err != nil {
		t.Errorf("note.Open of a note signed by the key: %v", err)
	}
}

func TestLoadSignerRefusesAKeyOthersCanRead(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes are Unix permissions")
	}
	path := filepath.Join(t.TempDir(), "k")
	if _, err := WriteKeyFiles(path, "bankml.test/log"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigner(path); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("LoadSigner of a 0644 key: %v, want a refusal saying chmod 600", err)
	}
}

func TestParsePublicKeyRefusesBadKeys(t *testing.T) {
	_, vkey, err := NewKey("bankml.test/log")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.SplitN(vkey, "+", 3)
	for _, c := range []struct{ name, text string }{
		{"a wrong key hash", parts[0] + "+00000000+" + parts[2]},
		{"a private key given as the public one", "PRIVATE+KEY+" + vkey},
		{"a name with a space", "a b+" + parts[1] + "+" + parts[2]},
		{"base64 that is not a key", parts[0] + "+" + parts[1] + "+AAAA"},
		{"a PEM block of another type", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
		{"nothing", ""},
	} {
		if _, err := ParsePublicKey(c.text); !errors.Is(err, ErrKey) {
			t.Errorf("%s: %v, want ErrKey", c.name, err)
		}
	}
	if _, _, err := NewKey("has+plus"); !errors.Is(err, ErrKey) {
		t.Errorf("NewKey with a '+' in the name: %v, want ErrKey", err)
	}
}
