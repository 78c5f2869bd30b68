package model

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReleasePagesKeepsTheBytes: releasing the pages of a read-only shared
// file mapping leaves its contents readable and unchanged (they fault in
// from the page cache), and heap memory, which MADV_DONTNEED would zero, is
// never released.
func TestReleasePagesKeepsTheBytes(t *testing.T) {
	want := make([]byte, 5*syscall.Getpagesize()+123)
	for i := range want {
		want[i] = byte(i*7 + 1)
	}
	path := filepath.Join(t.TempDir(), "w")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	mapped, err := syscall.Mmap(int(fd.Fd()), 0, len(want), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mapped)
	heap := bytes.Clone(want)
	maps := sharedFileMaps()
	if len(maps) == 0 {
		t.Fatal("no read-only shared mapping found in /proc/self/maps")
	}
	releasePages(mapped[100:], maps)
	releasePages(heap, maps)
	if !bytes.Equal(mapped, want) {
		t.Error("the mapped bytes changed after releasePages")
	}
	if !bytes.Equal(heap, want) {
		t.Error("heap bytes changed: releasePages touched memory that is not a shared file mapping")
	}
}
