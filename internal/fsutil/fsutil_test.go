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
		{dir, "not a regular file"},
		{fifo, "not a regular file"},
		{"/dev/null", "not a regular file"},
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
