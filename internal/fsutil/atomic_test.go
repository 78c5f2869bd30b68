package fsutil

import (
	"context"
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
