package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/bankml/bankml/inspect"
)

// inspectCmd prints a GGUF file's metadata, tensors and totals (package inspect).
type inspectCmd struct {
	File string `arg:"" name:"FILE" help:"Path to a GGUF file." type:"path"`
	JSON bool   `name:"json" help:"Print one JSON object instead of tables."`
}

// Run prints the report. Exit status: 0, 1 when the file cannot be read, 2 when it is not a valid GGUF file.
func (c *inspectCmd) Run(stdout io.Writer) error {
	f, err := openGGUF("inspect", c.File)
	if err != nil {
		return err
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
