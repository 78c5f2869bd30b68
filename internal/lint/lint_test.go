// Package lint holds the repository-wide style checks that run with the test
// suite: gofmt and go vet over every package.
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
