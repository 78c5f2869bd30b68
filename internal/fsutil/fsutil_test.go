//go:build unix

package fsutil

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRegularRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{file, ""},
		{dir, "not a regular file: is a directory"},
		{fifo, "not a regular file: it is a named pipe (FIFO)"},
		{"/dev/null", "not a regular file: it is a character device"},
		{filepath.Join(dir, "absent"), "no such file"},
	} {
		f, err := OpenRegular(tc.path) // a FIFO without a writer must not block
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.path, err)
			} else {
				f.Close()
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestKindNamesAFilesTypeAsAUserSaysIt: Kind says "a directory", "a symbolic link", ... where FileMode's String
// says "d---------" (what bankml quantize printed for an OUT that was a folder).
func TestKindNamesAFilesTypeAsAUserSaysIt(t *testing.T) {
	dir := t.TempDir()
	file, link, fifo := filepath.Join(dir, "f"), filepath.Join(dir, "l"), filepath.Join(dir, "p")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{file, "a regular file"},
		{dir, "a directory"},
		{link, "a symbolic link"},
		{fifo, "a named pipe (FIFO)"},
		{"/dev/null", "a character device"},
	} {
		st, err := os.Lstat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := Kind(st.Mode()); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.path, got, tc.want)
		}
	}
}
