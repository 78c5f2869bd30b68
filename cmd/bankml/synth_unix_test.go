//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSynthNeverReplacesSpecialFiles: a directory, FIFO or device at the
// output path is refused, and nothing is written next to it.
func TestSynthNeverReplacesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, out := range []string{dir, fifo, "/dev/null"} {
		code, _, stderr := runCLI("synth", out, "--arch", "llama", "--preset", "tiny", "--type", "f16", "--force")
		if code != 1 || !strings.Contains(stderr, "not a regular file") {
			t.Errorf("%s: exit %d, stderr %q", out, code, stderr)
		}
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode().IsRegular() {
		t.Fatalf("/dev/null was replaced: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}
