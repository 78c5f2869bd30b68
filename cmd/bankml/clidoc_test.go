package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestCLIDocNamesEveryFlag keeps docs/cli.md true to the code: every flag of every command (its --name,
// --no-name when negatable, -x short form and aliases) and every llama.cpp spelling of the table
// llamaflags.go reads is named there (as a whole word). `bench all`'s prefixed copies of bench kernels'
// and bench model's flags are documented by their prefix.
func TestCLIDocNamesEveryFlag(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	named := func(flag string) bool {
		return regexp.MustCompile(`(^|[^A-Za-z0-9-])` + regexp.QuoteMeta(flag) + `($|[^A-Za-z0-9-])`).MatchString(doc)
	}
	parser, err := kong.New(&cli{}, kong.Vars{"nproc": "1", "version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	checked, missing := 0, 0
	check := func(where, flag string) {
		checked++
		if !named(flag) {
			missing++
			t.Errorf("docs/cli.md does not name %s's %s", where, flag)
		}
	}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		path := n.FullPath()
		for _, f := range n.Flags {
			if strings.HasSuffix(path, " bench all") || f.Name == "help" {
				continue
			}
			check(path, "--"+f.Name)
			if f.Tag.Negatable != "" {
				check(path, "--no-"+f.Name)
			}
			for _, a := range f.Aliases {
				check(path, "--"+a)
			}
			if f.Short != 0 {
				check(path, "-"+string(f.Short))
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(parser.Model.Node)
	for _, f := range llamaFlags {
		for _, n := range f.names {
			check("the llama.cpp table ("+strings.Join(f.cmds, ", ")+")", n)
		}
	}
	for _, p := range []string{"--kernels-", "--model-"} {
		check("bench all", p)
	}
	t.Logf("%d of %d flag spellings named in docs/cli.md", checked-missing, checked)
}
