package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

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
	Note            string `json:"note,omitempty"`   // key show of a PEM key: where its name came from, or that it has none
}

// infoOf is the public forms of p. A key id is the signed-note key hash of the key under its name (the key_id a
// receipt carries), so a key without a name (read from PEM) has no key id either: key_id, vkey and
// cosignature_vkey are then empty, never the hash under the empty name.
func infoOf(p provenance.PublicKey) keyInfo {
	k := keyInfo{KeyName: p.Name}
	if p.Name != "" {
		k.KeyID = provenance.KeyID(p.Name, p.Key)
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
	Name string `name:"name" help:"The name of a PEM key (a PEM file carries none; its key_id is computed under it). Default: the name in FILE.pub or the private FILE beside FILE.pem when they hold the same key. A key file that names its key must name it NAME."`
}

// Run prints the key's public forms. A PEM key has no name, and its key id (the one receipts carry, the key hash
// under the key's name) cannot be computed without one: the name is --name, else the one of the verifier key or
// private key that bankml key new wrote beside FILE.pem when it holds the same key (the note says which file);
// with neither, key_id and the verifier keys are empty and the note says why.
func (c *keyShowCmd) Run(stdout io.Writer) error {
	pub, err := readAnyKey(c.File)
	if err != nil {
		return fmt.Errorf("key show: %w", err)
	}
	note := ""
	switch {
	case c.Name != "" && pub.Name != "" && c.Name != pub.Name:
		return fmt.Errorf("key show: --name %q: %s names its key %q (--name names a PEM key, which has no name)", c.Name, c.File, pub.Name)
	case c.Name != "" && pub.Name == "":
		if !utf8.ValidString(c.Name) || strings.IndexFunc(c.Name, unicode.IsSpace) >= 0 || strings.Contains(c.Name, "+") {
			return fmt.Errorf("key show: --name %q: a key name is UTF-8 without spaces or '+' (a log origin such as example.com/bankml)", c.Name)
		}
		pub.Name, note = c.Name, "a PEM public key carries no name: key_name is --name's"
	case pub.Name == "":
		if name, from := siblingKeyName(c.File, pub); name != "" {
			pub.Name, note = name, "a PEM public key carries no name: key_name is "+from+"'s, which holds the same key"
		} else {
			note = "a PEM public key carries no name, and its key_id (the one receipts carry) is the key's hash under its name: give --name NAME, or show FILE.pub"
		}
	}
	k := infoOf(pub)
	k.Note = note
	return writeJSON(stdout, k)
}

// siblingKeyName is the name of pub, a key read from the PEM file path, found in the files bankml key new writes
// beside it (BASE.pub, then the private BASE, for path BASE.pem) when one holds the same key, and that file; ""
// when none does.
func siblingKeyName(path string, pub provenance.PublicKey) (name, from string) {
	base, ok := strings.CutSuffix(path, provenance.PEMSuffix)
	if !ok {
		return "", ""
	}
	for _, f := range []string{base + provenance.PubSuffix, base} {
		if p, err := readAnyKey(f); err == nil && p.Name != "" && p.Key.Equal(pub.Key) {
			return p.Name, f
		}
	}
	return "", ""
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
