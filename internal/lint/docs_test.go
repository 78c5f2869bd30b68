package lint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The shape of a package doc comment (the issue's "two-line summary, then a # Design record heading of at most
// ~25 lines"), with a little slack for the line breaks of a reflowed paragraph.
const (
	maxSummaryLines = 3                 // the first paragraph: what the package is for
	designHeading   = "# Design record" // a godoc heading: a line of its own between blank comment lines
	maxDesignLines  = 30                // comment lines after the heading, up to the end of the doc
)

// goPackages returns the module's package directories (relative, slash-separated) with the parsed files that carry
// their package doc, in path order: every directory under the module root that holds .go files, including command
// and fixture programs under testdata folders (they are Go code of this repository too), skipping hidden
// directories (the installed reference, .git) and node_modules. A package's doc lives in its non-test files; a
// package made of tests only (internal/lint) keeps it in its in-package _test.go files.
func goPackages(t *testing.T, root string) (dirs []string, files map[string][]*ast.File, fset *token.FileSet) {
	t.Helper()
	fset = token.NewFileSet()
	src, tests := map[string][]*ast.File{}, map[string][]*ast.File{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case !strings.HasSuffix(p, "_test.go"):
			src[rel] = append(src[rel], f)
		case !strings.HasSuffix(f.Name.Name, "_test"):
			tests[rel] = append(tests[rel], f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files = src
	for dir, ts := range tests {
		if src[dir] == nil {
			files[dir] = ts
		}
	}
	for dir := range files {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	return dirs, files, fset
}

// checkPackageDoc returns what is wrong with the package doc comments of one package's files ("" if nothing).
func checkPackageDoc(fset *token.FileSet, files []*ast.File) string {
	var docs []*ast.CommentGroup
	var where []string
	for _, f := range files {
		if f.Doc != nil {
			docs = append(docs, f.Doc)
			where = append(where, filepath.Base(fset.Position(f.Doc.Pos()).Filename))
		}
	}
	switch len(docs) {
	case 0:
		return "no package doc comment"
	case 1:
	default:
		return fmt.Sprintf("package doc comments in %d files (%s): godoc joins them; keep one", len(docs), strings.Join(where, ", "))
	}
	lines := strings.Split(strings.TrimRight(docs[0].Text(), "\n"), "\n")
	summary := 0
	for summary < len(lines) && strings.TrimSpace(lines[summary]) != "" {
		summary++
	}
	var problems []string
	if summary == 0 {
		problems = append(problems, "the doc does not open with a summary paragraph")
	} else if summary > maxSummaryLines {
		problems = append(problems, fmt.Sprintf("the summary paragraph has %d lines (at most %d)", summary, maxSummaryLines))
	}
	// The heading must be the next paragraph: a line of its own after one blank line, followed by a blank line.
	h := summary + 1
	switch {
	case h >= len(lines) || lines[h] != designHeading:
		at := -1
		for i, l := range lines {
			if l == designHeading {
				at = i
			}
		}
		if at < 0 {
			problems = append(problems, fmt.Sprintf("no %q heading (in %s)", designHeading, where[0]))
		} else {
			problems = append(problems, fmt.Sprintf("%q is not the paragraph right after the summary (in %s)", designHeading, where[0]))
		}
	case h+1 >= len(lines) || lines[h+1] != "" || h+2 >= len(lines):
		problems = append(problems, fmt.Sprintf("%q is not followed by a blank comment line and text, so godoc does not render it as a heading", designHeading))
	default:
		if n := len(lines) - (h + 1); n > maxDesignLines {
			problems = append(problems, fmt.Sprintf("the design record has %d lines after its heading (at most %d; move the rest next to the code or into docs/)", n, maxDesignLines))
		}
	}
	return strings.Join(problems, "; ")
}

// TestEveryPackageDocIsASummaryAndADesignRecord: every package of the module opens with a short summary
// paragraph, then a "# Design record" heading that godoc renders, and at most maxDesignLines lines under it.
func TestEveryPackageDocIsASummaryAndADesignRecord(t *testing.T) {
	root := moduleRoot(t)
	dirs, files, fset := goPackages(t, root)
	if len(dirs) == 0 {
		t.Fatal("no Go packages found")
	}
	var failing []string
	good := 0
	for _, dir := range dirs {
		if problem := checkPackageDoc(fset, files[dir]); problem != "" {
			failing = append(failing, fmt.Sprintf("  %s: %s", dir, problem))
			continue
		}
		good++
	}
	t.Logf("%d of %d packages have a summary and a design record", good, len(dirs))
	if len(failing) > 0 {
		t.Errorf("%d of %d package docs do not have the shape of a summary (at most %d lines), a blank line, %q, "+
			"a blank line and at most %d lines:\n%s", len(failing), len(dirs), maxSummaryLines, designHeading, maxDesignLines,
			strings.Join(failing, "\n"))
	}
}

// outsideDocument matches the names of documents that live outside this repository: design notes and research
// digests kept beside the checkout. sharedPath matches a path into the shared folder beside the checkout, of which
// only its models folder (the test data that internal/testdata reads, with its MANIFEST.md) is allowed: it is data,
// not a document.
var (
	outsideDocument = regexp.MustCompile(`DESIGN\.md|TECHNICAL\.md|bankml-digest|shared/(?:research|seeds)\b`)
	sharedPath      = regexp.MustCompile(`\.\./shared\b/?([A-Za-z0-9_.-]*)`)
)

// outsideCitation returns the citation of a file outside the repository that a comment line holds, or "".
func outsideCitation(line string) string {
	if m := outsideDocument.FindString(line); m != "" {
		return m
	}
	for _, m := range sharedPath.FindAllStringSubmatch(line, -1) {
		if m[1] != "models" {
			return m[0]
		}
	}
	return ""
}

// TestNoCommentCitesAFileOutsideTheRepository: comments cite files of this repository or llama.cpp paths, which a
// reader of the repository can open, never notes kept beside the checkout.
func TestNoCommentCitesAFileOutsideTheRepository(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	n := 0
	var bad []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments)
		if err != nil {
			return err
		}
		n++
		for _, g := range f.Comments {
			for _, c := range g.List {
				for i, line := range strings.Split(c.Text, "\n") {
					if m := outsideCitation(line); m != "" {
						pos := fset.Position(c.Pos())
						rel, _ := filepath.Rel(root, pos.Filename)
						bad = append(bad, fmt.Sprintf("  %s:%d: %q", filepath.ToSlash(rel), pos.Line+i, m))
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d Go files checked, %d comment lines cite a file outside the repository", n, len(bad))
	if len(bad) > 0 {
		t.Errorf("comments cite files outside the repository (cite a repo file, a llama.cpp path or say it in words):\n%s", strings.Join(bad, "\n"))
	}
}

// TestPackageDocCheckerJudgesShapes: the checker passes the required shape and names each way of missing it.
func TestPackageDocCheckerJudgesShapes(t *testing.T) {
	lines := func(n int) string { return strings.Repeat("// Text.\n", n) }
	good := "// Package p does one thing,\n// in two lines.\n//\n// # Design record\n//\n" + lines(20) + "package p\n"
	tests := []struct {
		name  string
		files []string
		want  string // a substring of the problem; "" for none
	}{
		{"a two-line summary and a design record pass", []string{good}, ""},
		{"thirty lines under the heading pass", []string{"// Package p.\n//\n// # Design record\n//\n" + lines(29) + "package p\n"}, ""},
		{"another file without a doc changes nothing", []string{good, "package p\n"}, ""},
		{"no doc comment fails", []string{"package p\n"}, "no package doc comment"},
		{"a four-line summary fails", []string{lines(4) + "//\n// # Design record\n//\n// Text.\npackage p\n"}, "summary paragraph has 4 lines"},
		{"a doc without the heading fails", []string{"// Package p.\n//\n// Text.\npackage p\n"}, `no "# Design record" heading`},
		{"a heading after another section fails", []string{"// Package p.\n//\n// # Use\n//\n// Text.\n//\n// # Design record\n//\n// Text.\npackage p\n"}, "not the paragraph right after the summary"},
		{"a heading that ends the doc fails", []string{"// Package p.\n//\n// # Design record\npackage p\n"}, "does not render it as a heading"},
		{"thirty-one lines under the heading fail", []string{"// Package p.\n//\n// # Design record\n//\n" + lines(30) + "package p\n"}, "31 lines after its heading"},
		{"docs in two files fail", []string{good, good}, "package doc comments in 2 files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			var files []*ast.File
			for i, src := range tt.files {
				f, err := parser.ParseFile(fset, fmt.Sprintf("f%d.go", i), src, parser.ParseComments|parser.PackageClauseOnly)
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, f)
			}
			got := checkPackageDoc(fset, files)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("checkPackageDoc = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOutsideCitationFindsNotesBesideTheCheckout: the names of notes outside the repository are found, the test
// data folder and repository paths are not.
func TestOutsideCitationFindsNotesBesideTheCheckout(t *testing.T) {
	tests := []struct{ line, want string }{
		{"the reference (DESIGN.md §2)", "DESIGN.md"},
		{"see ../shared/research/bankml-digest.md §4.1", "shared/research"},
		{"../shared/seeds/bankml-TECHNICAL.md §III.1", "shared/seeds"},
		{"the receipt of bankml-digest §3.5", "bankml-digest"},
		{"notes in ../shared/notes.txt", "../shared/notes.txt"},
		{"the vocabularies in ../shared/models/vocab", ""},
		{"as ../shared/models/MANIFEST.md records", ""},
		{"llama.cpp's src/llama-grammar.cpp and docs/serve.md", ""},
	}
	for _, tt := range tests {
		if got := outsideCitation(tt.line); got != tt.want {
			t.Errorf("outsideCitation(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}
