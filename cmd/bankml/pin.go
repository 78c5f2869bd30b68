package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bankml/bankml/provenance"
)

// pinCmd checks a file's sha256 against its provenance manifest (provenance.Pin).
type pinCmd struct {
	File     string `arg:"" name:"FILE" help:"The file to pin (matched by base name in the manifest)." type:"path"`
	Manifest string `name:"manifest" aliases:"fork" required:"" placeholder:"FORK.json|SHA256" help:"A provenance manifest (docs/manifest.md), or the expected sha256 itself: 64 hex digits or sha256:<hex>."`
	JSON     bool   `name:"json" help:"Print the result as one JSON object."`
}

// Run prints "pinned <sha256>  <file>" (and the manifest's source) and exits 0, or refuses with the reason on
// standard error and exit status 2; an I/O error exits 1. With --json the result object is printed either way.
func (c *pinCmd) Run(stdout io.Writer, stderr errWriter) error {
	if strings.TrimSpace(c.Manifest) == "" {
		return errors.New("pin: --manifest is empty: give a FORK.json path, 64 hex digits or sha256:<hex>")
	}
	bar, done := progressFor(stderr, c.File)
	res, err := provenance.Pin(c.File, c.Manifest, bar)
	done()
	refused := errors.Is(err, provenance.ErrRefused)
	if err != nil && !refused {
		return fmt.Errorf("pin: %w", err)
	}
	if c.JSON {
		b, jerr := json.Marshal(res)
		if jerr != nil {
			return fmt.Errorf("pin: %w", jerr)
		}
		if _, jerr := fmt.Fprintf(stdout, "%s\n", b); jerr != nil {
			return jerr
		}
	}
	if refused {
		return &exitError{code: 2, err: fmt.Errorf("pin: %w", err)}
	}
	if c.JSON {
		return nil
	}
	if _, err := fmt.Fprintf(stdout, "pinned %s  %s\n", res.SHA256, c.File); err != nil {
		return err
	}
	if res.Source != "" || res.Revision != "" {
		_, err = fmt.Fprintf(stdout, "source %s revision %s\n", orNone(res.Source), orNone(res.Revision))
	}
	return err
}

// orNone returns s, or "(none)" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
