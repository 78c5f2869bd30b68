package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bankml/bankml/guard"
)

// guardCmd is `bankml guard FILE [--engine mainline|prism|bankml] [--json]`: the header guard (package guard).
type guardCmd struct {
	File   string `arg:"" name:"FILE" help:"Path to a GGUF file." type:"path"`
	Engine string `name:"engine" enum:"mainline,prism,bankml" default:"mainline" help:"Engine to judge for: mainline llama.cpp, the PrismML fork, or bankml (mainline plus PTQTP trit-plane files) (${enum})."`
	JSON   bool   `name:"json" help:"Print the report as one JSON object."`
}

// Run guards the file and prints the report. Exit status: 0 play, 2 refuse, 3 need_more, 1 I/O error.
func (g *guardCmd) Run(stdout io.Writer) error {
	rep, err := guard.File(g.File, guard.Options{Engine: guard.Engine(g.Engine)})
	if err != nil {
		return err
	}
	if g.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		err = enc.Encode(rep)
	} else {
		_, err = io.WriteString(stdout, formatReport(g.File, rep))
	}
	if err != nil {
		return err
	}
	return verdictError(g.File, rep)
}

// formatReport is the human form of a report: the verdict first, then the reasons one per line.
func formatReport(path string, rep *guard.Report) string {
	var b strings.Builder
	switch rep.Verdict {
	case guard.Play:
		names := make([]string, 0, len(rep.Types))
		for name := range rep.Types {
			names = append(names, name)
		}
		slices.Sort(names)
		for i, name := range names {
			names[i] = fmt.Sprintf("%s %d", name, rep.Types[name])
		}
		fmt.Fprintf(&b, "play: %s on %s: %s, %d tensors (%s), header %d of %d bytes\n",
			path, rep.Engine, guardArch(rep.Arch), rep.Tensors, strings.Join(names, ", "), rep.DataOffset, rep.FileSize)
	case guard.NeedMore:
		fmt.Fprintf(&b, "need_more: %s: the header needs at least %d bytes, %d more than the %d available\n",
			path, rep.BytesNeeded, rep.BytesMissing, rep.BytesNeeded-rep.BytesMissing)
	default:
		fmt.Fprintf(&b, "refuse: %s on %s:\n", path, rep.Engine)
	}
	if rep.Verdict != guard.Play {
		for _, r := range rep.Reasons {
			fmt.Fprintf(&b, "  - %s\n", r)
		}
	}
	return b.String()
}

func guardArch(s string) string {
	if s == "" {
		return "no architecture"
	}
	return s
}

// verdictError maps a guard verdict to the command's result: nil for play, exit status 2 for refuse and 3 for
// need_more, with a one-line message (the report, printed before, has the reasons). `bankml run` and every later
// loader can use it after guard.File.
func verdictError(path string, rep *guard.Report) error {
	switch rep.Verdict {
	case guard.Play:
		return nil
	case guard.NeedMore:
		return &exitError{code: 3, err: fmt.Errorf("guard: %s: need_more: the header needs %d more bytes: %w",
			path, rep.BytesMissing, guard.ErrNeedMore)}
	}
	return &exitError{code: 2, err: fmt.Errorf("guard: %s: %w on %s: %s", path, guard.ErrRefused, rep.Engine, rep.Reason)}
}
