package main

import (
	"fmt"
	"os"

	"github.com/bankml/bankml/gguf"
)

// notDirectory refuses a directory given where a command takes a GGUF file, as a usage error (exit 1)
// before anything is read, in gguf.Open's words for it (gguf.DirectoryError), after label, the argument's
// name (MODEL, FILE, -m/--model). Anything else (a file, a missing path) is left to the command.
func notDirectory(label, path string) error {
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return nil
	}
	return fmt.Errorf("%s: %w", label, gguf.DirectoryError(path))
}

// Validate (kong's hook after parsing) refuses a directory as FILE.
func (g *guardCmd) Validate() error { return notDirectory("FILE", g.File) }

// Validate (kong's hook after parsing) refuses a directory as FILE.
func (c *pinCmd) Validate() error { return notDirectory("FILE", c.File) }

// Validate (kong's hook after parsing) refuses a directory as FILE.
func (c *inspectCmd) Validate() error { return notDirectory("FILE", c.File) }

// tokenize's Validate (tokenize.go) refuses a directory as MODEL or -m/--model.

// Validate (kong's hook after parsing) refuses a directory as MODEL.
func (c *detokenizeCmd) Validate() error { return notDirectory("MODEL", c.Model) }

// Validate (kong's hook after parsing) refuses a directory as MODEL.
func (c *chatTemplateCmd) Validate() error { return notDirectory("MODEL", c.Model) }

// perplexity's and quantize's Validate (perplexity.go, quantize.go) refuse a directory as MODEL and IN.gguf too.
