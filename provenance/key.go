package provenance

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
)

// algEd25519 is the signature-type byte of an Ed25519 key in C2SP signed-note keys.
const algEd25519 = 0x01

// Key file names: KeyFile is the private key (mode 0600); the public key is written beside it as
// KeyFile+PubSuffix (a signed-note verifier key) and KeyFile+PEMSuffix (PKIX, for openssl).
const (
	PubSuffix = ".pub"
	PEMSuffix = ".pem"
)

// ErrKey is wrapped by every error about a key file or a public key that cannot be used.
var ErrKey = errors.New("key")

// PublicKey is an operator's Ed25519 public key with its signed-note name and key hash (C2SP signed-note
// "key ID": the first 4 bytes, big-endian, of SHA-256(name || 0x0A || 0x01 || key)).
type PublicKey struct {
	Name string            // the key's name (a log's origin line); empty for a key read from PEM
	Key  ed25519.PublicKey // 32 bytes
}

// KeyHash is the C2SP signed-note key hash of the key under name.
func KeyHash(name string, key ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', algEd25519})
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// KeyID is KeyHash as 8 lower-case hex digits, as it appears in a signed-note verifier key.
func KeyID(name string, key ed25519.PublicKey) string {
	return fmt.Sprintf("%08x", KeyHash(name, key))
}

// VerifierKey is the key as a C2SP signed-note verifier key: name+hash+base64(0x01 || key).
func (p PublicKey) VerifierKey() string {
	return fmt.Sprintf("%s+%s+%s", p.Name, KeyID(p.Name, p.Key),
		base64.StdEncoding.EncodeToString(append([]byte{algEd25519}, p.Key...)))
}

// PEM is the key as a PKIX ("PUBLIC KEY") PEM block, what openssl pkeyutl -pubin reads.
func (p PublicKey) PEM() []byte {
	der, err := x509.MarshalPKIXPublicKey(p.Key)
	if err != nil { // an ed25519.PublicKey of the right length always marshals
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// ParsePublicKey reads a public key given as a signed-note verifier key (name+hash+base64, its hash checked)
// or as a PKIX PEM block (no name). Errors wrap ErrKey and never quote text that is not a well-formed key (it
// may be a file's content, even a secret, given by mistake): they say what was expected; a verifier key's
// name and hash are named only once its key is an Ed25519 key.
func ParsePublicKey(text string) (PublicKey, error) {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "-----BEGIN") {
		b, _ := pem.Decode([]byte(text))
		if b == nil || b.Type != "PUBLIC KEY" {
			return PublicKey{}, fmt.Errorf("%w: not a PEM PUBLIC KEY block", ErrKey)
		}
		k, err := x509.ParsePKIXPublicKey(b.Bytes)
		if err != nil {
			return PublicKey{}, fmt.Errorf("%w: %v", ErrKey, err)
		}
		ek, ok := k.(ed25519.PublicKey)
		if !ok {
			return PublicKey{}, fmt.Errorf("%w: the PEM key is a %T, not Ed25519", ErrKey, k)
		}
		return PublicKey{Key: ek}, nil
	}
	const want = "want a verifier key (NAME+HASH+BASE64, as bankml key new writes to FILE.pub) or a PEM public key (FILE.pem)"
	parts := strings.SplitN(text, "+", 3)
	if len(parts) != 3 {
		return PublicKey{}, fmt.Errorf("%w: neither a verifier key nor a PEM public key: %s", ErrKey, want)
	}
	name, hash, b64 := parts[0], parts[1], parts[2]
	raw, err := base64.StdEncoding.DecodeString(b64)
	switch {
	case !validKeyName(name):
		return PublicKey{}, fmt.Errorf("%w: not a verifier key: its name (before the first '+') must be non-empty UTF-8 without spaces or '+'; %s", ErrKey, want)
	case err != nil:
		return PublicKey{}, fmt.Errorf("%w: not a verifier key: its key (after the second '+') is not base64 (%v); %s", ErrKey, err, want)
	case len(raw) != 1+ed25519.PublicKeySize || raw[0] != algEd25519:
		return PublicKey{}, fmt.Errorf("%w: not an Ed25519 verifier key: its key (after the second '+') must be 0x01 and 32 bytes; %s", ErrKey, want)
	}
	p := PublicKey{Name: name, Key: ed25519.PublicKey(raw[1:])}
	if h, err := strconv.ParseUint(hash, 16, 32); err != nil || len(hash) != 8 || uint32(h) != KeyHash(name, p.Key) {
		return PublicKey{}, fmt.Errorf("%w: verifier key %s: hash %q is not the key's (%s)", ErrKey, name, hash, KeyID(name, p.Key))
	}
	return p, nil
}

// ReadPublicKey reads a public key file (ParsePublicKey's forms).
func ReadPublicKey(path string) (PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: %v", ErrKey, err)
	}
	p, err := ParsePublicKey(string(b))
	if err != nil {
		return PublicKey{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Signer is an operator's Ed25519 private key: it signs receipts (SignReceipt) and, as a signed-note signer
// (NoteSigner), checkpoints.
type Signer struct {
	pub  PublicKey
	priv ed25519.PrivateKey
	note note.Signer
}

// NewKey generates an Ed25519 key named name and returns its private key in C2SP signed-note signer-key form
// (PRIVATE+KEY+name+hash+base64(0x01 || seed)) and its verifier key.
func NewKey(name string) (skey, vkey string, err error) {
	if !validKeyName(name) {
		return "", "", fmt.Errorf("%w: name %q: must be non-empty UTF-8 without spaces or '+' (a log origin such as example.com/bankml)", ErrKey, name)
	}
	return note.GenerateKey(rand.Reader, name)
}

// WriteKeyFiles generates a key named name and writes it: the private key to path (created, never
// replaced, mode 0600), the verifier key to path+PubSuffix and the PEM public key to path+PEMSuffix. It
// returns the public key.
func WriteKeyFiles(path, name string) (PublicKey, error) {
	skey, _, err := NewKey(name)
	if err != nil {
		return PublicKey{}, err
	}
	s, err := ParseSigner(skey)
	if err != nil {
		return PublicKey{}, err
	}
	for _, p := range []string{path, path + PubSuffix, path + PEMSuffix} {
		if _, err := os.Lstat(p); err == nil {
			return PublicKey{}, fmt.Errorf("%w: %s exists: not replaced (remove it, or choose another name)", ErrKey, p)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: %v", ErrKey, err)
	}
	_, werr := f.WriteString(skey + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return PublicKey{}, fmt.Errorf("%w: writing %s: %v", ErrKey, path, err)
	}
	if err := os.WriteFile(path+PubSuffix, []byte(s.pub.VerifierKey()+"\n"), 0o644); err != nil {
		return PublicKey{}, fmt.Errorf("%w: %v", ErrKey, err)
	}
	if err := os.WriteFile(path+PEMSuffix, s.pub.PEM(), 0o644); err != nil {
		return PublicKey{}, fmt.Errorf("%w: %v", ErrKey, err)
	}
	return s.pub, nil
}

// ParseSigner reads a private key in signed-note signer-key form (Ed25519 only).
func ParseSigner(skey string) (*Signer, error) {
	skey = strings.TrimSpace(skey)
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return nil, fmt.Errorf("%w: not a private key (want PRIVATE+KEY+name+hash+base64, as bankml key new writes)", ErrKey)
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != algEd25519 {
		return nil, fmt.Errorf("%w: private key %s is not an Ed25519 seed (want 0x01 and 32 bytes)", ErrKey, parts[2])
	}
	ns, err := note.NewSigner(skey) // checks the name and the key hash
	if err != nil {
		return nil, fmt.Errorf("%w: private key %s: %v", ErrKey, parts[2], err)
	}
	priv := ed25519.NewKeyFromSeed(raw[1:])
	return &Signer{pub: PublicKey{Name: ns.Name(), Key: priv.Public().(ed25519.PublicKey)}, priv: priv, note: ns}, nil
}

// LoadSigner reads a private key file written by WriteKeyFiles. On Unix a file that others may read
// (any group or other permission bit) is refused, as ssh refuses such keys.
func LoadSigner(path string) (*Signer, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o: a private key must be readable by its owner only (chmod 600 %s)", ErrKey, path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	s, err := ParseSigner(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Public is the signer's public key.
func (s *Signer) Public() PublicKey { return s.pub }

// Name is the key's name (the log's origin).
func (s *Signer) Name() string { return s.pub.Name }

// KeyID is the key's C2SP key hash as 8 hex digits.
func (s *Signer) KeyID() string { return KeyID(s.pub.Name, s.pub.Key) }

// NoteSigner is the key as a C2SP signed-note signer (checkpoints).
func (s *Signer) NoteSigner() note.Signer { return s.note }

// NoteVerifier is the public key as a signed-note verifier.
func (p PublicKey) NoteVerifier() (note.Verifier, error) {
	v, err := note.NewVerifier(p.VerifierKey())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	return v, nil
}

func validKeyName(name string) bool {
	return name != "" && utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsSpace) < 0 && !strings.Contains(name, "+")
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
