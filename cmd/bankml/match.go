package main

import (
	"fmt"
	"io"

	"github.com/bankml/bankml/quant"
)

// matchFlag is --match (BANKML_MATCH): the reference CPU variant bankml's
// answers are exact against (docs/exactness.md, "CPU variants").
type matchFlag struct {
	Match string `name:"match" env:"BANKML_MATCH" default:"auto" placeholder:"VARIANT" help:"The llama.cpp CPU variant to be exact against: auto (the one ggml would load on this CPU; haswell when bankml does not model that one) or a variant's name (haswell, alderlake, …); one this CPU cannot run, or whose float chains bankml does not model, is refused."`
}

// resolve checks --match (a usage error when refused) and, when auto fell
// back from ggml's own pick, says so on w in one info line (nothing is wrong:
// the answers are exact against the variant named).
func (f matchFlag) resolve(cmd string, w io.Writer) (quant.Match, error) {
	m, err := quant.ResolveMatch(f.Match)
	if err != nil {
		return quant.Match{}, fmt.Errorf("%s: --match %s: %w", cmd, f.Match, err)
	}
	if m.Note != "" && w != nil {
		fmt.Fprintf(w, "%s: info: %s\n", cmd, m.Note)
	}
	return m, nil
}
