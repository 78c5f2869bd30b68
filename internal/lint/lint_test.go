// Package lint holds the repository-wide checks that run with the test suite: gofmt and go vet over every
// package, and the shape of every package's documentation.
//
// # Design record
//
// What. Tests only, no code of the product: every .go file under the module root is gofmt-formatted; go vet ./...
// is clean (skipped with -short); every package opens with a summary of at most three lines, then a
// "# Design record" heading godoc renders and at most 30 lines under it (docs_test.go); no comment cites a
// document kept outside the repository (the design notes and research digests beside the checkout), since a
// reader of the repository cannot open it: comments cite repository files or llama.cpp paths. No file git
// tracks is a compiled program or over 1 MiB (test data and builds live outside the repository).
//
// Follows. gofmt's own formatter (go/format) and the go command's vet; godoc's heading rule (go/doc/comment: a
// "# " line of its own between blank lines).
//
// Deliberate differences. The walks skip hidden directories (the installed reference in .reference, .git) and
// node_modules, and include programs under testdata folders, which the go command's ./... leaves out. The
// doc-shape test has no allow-list: it fails on every package of the wrong shape, naming each.
//
// Determinism. The checks read the files as they are on disk; their verdicts depend on nothing else.
package lint

import (
	"bytes"
	"go/format"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

func moduleRoot(t *testing.T) string { return testdata.ModuleRoot(t) }

func TestEveryGoFileIsGofmtFormatted(t *testing.T) {
	root := moduleRoot(t)
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		out, err := format.Source(src)
		if err != nil {
			t.Errorf("%s: %v", p, err)
		} else if !bytes.Equal(out, src) {
			t.Errorf("%s is not gofmt-formatted (run gofmt -w)", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no Go files found")
	}
}

func TestGoVetIsClean(t *testing.T) {
	if testing.Short() {
		t.Skip("go vet skipped in -short mode")
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go vet ./...: %v\n%s", err, out)
	}
}

// maxTrackedBytes bounds a tracked file: the largest source (tokenizer/internal/ucd/tables.go) is 165 KB;
// models, binaries and other data stay outside the repository.
const maxTrackedBytes = 1 << 20

func TestNoTrackedFileIsAProgramOrLarge(t *testing.T) {
	root := moduleRoot(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the tracked files cannot be listed")
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("%s is not a git checkout (git ls-files: %v)", root, err)
	}
	magics := map[string][]byte{"an ELF program": []byte("\x7fELF"), "a Windows program": []byte("MZ"), "a Mach-O program": {0xcf, 0xfa, 0xed, 0xfe}}
	n := 0
	for _, name := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		p := filepath.Join(root, name)
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or a link
		}
		n++
		if st.Size() > maxTrackedBytes {
			t.Errorf("%s is tracked and holds %d bytes (over %d): keep data and builds outside the repository", name, st.Size(), maxTrackedBytes)
		}
		head := make([]byte, 4)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		k, _ := f.Read(head)
		f.Close()
		for what, m := range magics {
			if k >= len(m) && bytes.Equal(head[:len(m)], m) {
				t.Errorf("%s is tracked and is %s: builds stay outside the repository", name, what)
			}
		}
	}
	if n == 0 {
		t.Fatal("git ls-files listed no file")
	}
}
