package fsutil

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteAtomicLeavesNoPartialFile: when the write stops (Ctrl-C cancels the context of bankml synth and bankml
// quantize) neither the file nor the temporary file remains, and an existing file is untouched.
func TestWriteAtomicLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	_, err := WriteAtomic(ctx, out, func(w io.Writer) error {
		if _, err := w.Write([]byte("GGUF partial")); err != nil {
			return err
		}
		cancel()
		_, err := w.Write([]byte("more"))
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("err %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := WriteAtomic(ctx, out, func(w io.Writer) error { return nil }); err == nil {
		t.Fatal("a cancelled write succeeded")
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Fatalf("OUT became %q", b)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestWriteAtomicReplacesOnSuccess: a complete write replaces the file, with mode 0644, and leaves nothing else.
func TestWriteAtomicReplacesOnSuccess(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.gguf")
	if err := os.WriteFile(out, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := WriteAtomic(context.Background(), out, func(w io.Writer) error { _, err := io.WriteString(w, "new!"); return err })
	if err != nil || n != 4 {
		t.Fatalf("%d, %v", n, err)
	}
	st, err := os.Stat(out)
	if b, _ := os.ReadFile(out); err != nil || string(b) != "new!" || st.Mode().Perm() != 0o644 {
		t.Fatalf("%q %v %v", b, st.Mode(), err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestWriteAtomicNamesThePathAndItsFolderNotItsTemporaryFile: a path WriteAtomic cannot write because of its
// folder (missing, or a file) is an error naming the path and the folder, never the temporary file's name
// (".out.gguf.1411893322.tmp"), and it still wraps the cause.
func TestWriteAtomicNamesThePathAndItsFolderNotItsTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
		is               error
	}{
		{"a missing folder", filepath.Join(dir, "missing", "deeper", "out.gguf"),
			"cannot write " + filepath.Join(dir, "missing", "deeper", "out.gguf") + ": the folder " + filepath.Join(dir, "missing", "deeper") + " does not exist", os.ErrNotExist},
		{"a file where the folder should be", filepath.Join(file, "out.gguf"),
			"cannot write " + filepath.Join(file, "out.gguf") + ": " + file + " is not a folder", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := WriteAtomic(context.Background(), tc.path, func(w io.Writer) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), ".tmp") || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("%v; want %q, wrapping %v, and no temporary file's name", err, tc.want, tc.is)
			}
		})
	}
}
