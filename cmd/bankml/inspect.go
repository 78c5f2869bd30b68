package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/inspect"
)

// inspectCmd prints a GGUF file's metadata, tensors and totals (package inspect).
type inspectCmd struct {
	File string `arg:"" name:"FILE" help:"Path to a GGUF file." type:"path"`
	JSON bool   `name:"json" help:"Print one JSON object instead of tables."`
}

// Run prints the report. Exit status: 0, 1 when the file cannot be read, 2 when it is not a valid GGUF file.
func (c *inspectCmd) Run(stdout io.Writer) error {
	f, err := gguf.Open(c.File)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && !errors.Is(err, gguf.ErrTruncated) {
			return fmt.Errorf("inspect: %w", err) // I/O: exit 1
		}
		return &exitError{code: 2, err: fmt.Errorf("inspect: %w", err)}
	}
	defer f.Close()
	r := inspect.Summarize(f, c.File)
	if !c.JSON {
		return r.WriteText(stdout)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}
