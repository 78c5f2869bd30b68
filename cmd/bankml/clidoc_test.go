package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// TestCLIDocNamesEachCommandsArgumentsAsTheCodeDoes: docs/cli.md's table of commands names every command's
// first argument as its help does (`tokenize FILE`, not `tokenize MODEL`), so what a newcomer reads is what
// `bankml help COMMAND` prints.
func TestCLIDocNamesEachCommandsArgumentsAsTheCodeDoes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	parser, err := kong.New(&cli{}, kong.Vars{"nproc": "1", "version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *kong.Node, path string)
	walk = func(n *kong.Node, path string) {
		if n.Type == kong.CommandNode {
			path = strings.TrimSpace(path + " " + n.Name)
		}
		if len(n.Children) == 0 && n.Type == kong.CommandNode {
			switch {
			case strings.HasPrefix(path, "bench "): // bench [all|kernels|model|serve] has no arguments
			case len(n.Positional) == 0:
				if !strings.Contains(doc, "| `"+path+"`") && !strings.Contains(doc, "| `"+path+" ") && !strings.Contains(doc, ", `"+path+"`") {
					t.Errorf("docs/cli.md's table of commands has no row for %q", path)
				}
			default:
				arg := n.Positional[0].Name
				if !strings.Contains(doc, "`"+path+" "+arg) && !strings.Contains(doc, "`"+path+" ["+arg) {
					t.Errorf("docs/cli.md does not name %s's argument as its help does: want `%s %s`", path, path, arg)
				}
			}
		}
		for _, c := range n.Children {
			walk(c, path)
		}
	}
	walk(parser.Model.Node, "")
}

// TestEveryBankmlCommandOfTheREADMEParses: each `./bankml ...` command the README shows (in its sh blocks and
// its inline code) names a command, arguments and flags the code takes, as bankml parses them (llama.cpp's
// spellings included), so that a newcomer's first commands are not usage errors.
func TestEveryBankmlCommandOfTheREADMEParses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	inBlock := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			for _, part := range strings.Split(line, "&&") {
				if c, ok := strings.CutPrefix(strings.TrimSpace(part), "./bankml "); ok {
					cmds = append(cmds, c)
				}
			}
			continue
		}
		for _, m := range regexp.MustCompile("`\\./bankml ([^`]*)`").FindAllStringSubmatch(line, -1) {
			cmds = append(cmds, m[1])
		}
	}
	if len(cmds) < 10 {
		t.Fatalf("found %d ./bankml commands in README.md; the README shows more", len(cmds))
	}
	for _, c := range cmds {
		args := shellWords(t, c)
		if len(args) == 0 {
			continue
		}
		var cl cli
		parser, err := kong.New(&cl, kong.Name("bankml"), kong.Vars{"nproc": "1", "version": "test"},
			kong.WithHyphenPrefixedParameters(true), kong.Exit(func(int) {}))
		if err != nil {
			t.Fatal(err)
		}
		help, err := helpArgs(args, parser.Model.Node)
		if err != nil {
			t.Errorf("README.md: ./bankml %s: %v", c, err)
			continue
		}
		if slices.Contains(help, "--help") { // help: printed, exit 0
			if code, _, stderr := runCLI(args...); code != 0 {
				t.Errorf("README.md: ./bankml %s: exit %d: %s", c, code, stderr)
			}
			continue
		}
		args, _, err = llamaArgs(help, valueFlags(parser.Model, args[0]))
		if err == nil {
			_, err = parser.Parse(args)
		}
		if err != nil {
			t.Errorf("README.md: ./bankml %s: %v", c, err)
		}
	}
}

// shellWords splits a README command line as sh would for these simple lines: words separated by blanks,
// '…' and "…" quoting, a # outside quotes starting a comment.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord:
			return words
		case r == ' ' || r == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("README.md: unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
