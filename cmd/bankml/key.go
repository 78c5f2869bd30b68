package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
)

// keyCmd is `bankml key new FILE` and `bankml key show FILE` (package provenance).
type keyCmd struct {
	New  keyNewCmd  `cmd:"" help:"Generate an Ed25519 operator key: FILE (private, mode 0600, never replaced), FILE.pub (signed-note verifier key) and FILE.pem (PEM public key, for openssl); print the public forms as JSON."`
	Show keyShowCmd `cmd:"" help:"Print the public forms of a key file (private FILE, FILE.pub or FILE.pem) as JSON."`
}

type keyNewCmd struct {
	File string `arg:"" name:"FILE" help:"The private key file to create." type:"path"`
	Name string `name:"name" help:"The key's name: the transparency log's origin, a schema-less URL such as example.com/bankml (default: HOSTNAME/bankml)."`
}

// keyInfo is what key new and key show print.
type keyInfo struct {
	PrivateKey      string `json:"private_key,omitempty"`
	PublicKey       string `json:"public_key,omitempty"`
	PEM             string `json:"pem_file,omitempty"`
	KeyName         string `json:"key_name"`
	KeyID           string `json:"key_id"`
	VerifierKey     string `json:"vkey"`
	CosignatureVKey string `json:"cosignature_vkey"` // the key as a witness signs with it (cosignature/v1)
}

func infoOf(p provenance.PublicKey) keyInfo {
	k := keyInfo{KeyName: p.Name, KeyID: provenance.KeyID(p.Name, p.Key)}
	if p.Name != "" {
		k.VerifierKey = p.VerifierKey()
		k.CosignatureVKey, _ = ledger.WitnessVerifierKey(k.VerifierKey)
	}
	return k
}

// defaultKeyName is HOSTNAME/bankml, with characters a key name may not hold replaced by '-'.
func defaultKeyName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	h = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '+' {
			return '-'
		}
		return r
	}, h)
	return h + "/bankml"
}

func (c *keyNewCmd) Run(stdout io.Writer) error {
	name := c.Name
	if name == "" {
		name = defaultKeyName()
	}
	pub, err := provenance.WriteKeyFiles(c.File, name)
	if err != nil {
		return fmt.Errorf("key new: %w", err)
	}
	k := infoOf(pub)
	k.PrivateKey, k.PublicKey, k.PEM = c.File, c.File+provenance.PubSuffix, c.File+provenance.PEMSuffix
	return writeJSON(stdout, k)
}

type keyShowCmd struct {
	File string `arg:"" name:"FILE" help:"A private key file, a .pub verifier key or a .pem public key." type:"path"`
}

func (c *keyShowCmd) Run(stdout io.Writer) error {
	pub, err := readAnyKey(c.File)
	if err != nil {
		return fmt.Errorf("key show: %w", err)
	}
	return writeJSON(stdout, infoOf(pub))
}

// readAnyKey reads a public key from a private key file, a verifier key file or a PEM file.
func readAnyKey(path string) (provenance.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return provenance.PublicKey{}, err
	}
	if strings.HasPrefix(strings.TrimSpace(string(b)), "PRIVATE+KEY+") {
		s, err := provenance.LoadSigner(path)
		if err != nil {
			return provenance.PublicKey{}, err
		}
		return s.Public(), nil
	}
	return provenance.ReadPublicKey(path)
}

// publicKeyArg reads a --key value: a file (private key, .pub or .pem), or a verifier key given inline.
func publicKeyArg(flag, v string) (provenance.PublicKey, error) {
	if _, err := os.Stat(v); err == nil {
		p, err := readAnyKey(v)
		if err != nil {
			return p, fmt.Errorf("%s: %w", flag, err)
		}
		return p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return provenance.PublicKey{}, fmt.Errorf("%s: %w", flag, err)
	}
	p, err := provenance.ParsePublicKey(v)
	if err != nil {
		return p, fmt.Errorf("%s %q: no such file, and %w", flag, v, err)
	}
	return p, nil
}
