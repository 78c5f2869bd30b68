//go:build linux

package ternary

import (
	"os"
	"syscall"
	"unsafe"
)

// ReleaseMapped tells the kernel that the pages under b, a slice of a read-only shared file mapping (what
// gguf.Open maps), are not needed now (madvise MADV_DONTNEED on the pages b touches): they leave the process's
// resident set and are read again from the page cache or the file if touched. Only for file mappings: on anonymous
// memory (a gguf.Parse of bytes read into the heap) it would zero the pages. Errors are ignored: the pages then just
// stay resident. A no-op on systems other than Linux.
func ReleaseMapped(b []byte) {
	if len(b) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	addr := uintptr(unsafe.Pointer(&b[0]))
	lead := addr & (page - 1)
	n := (lead + uintptr(len(b)) + page - 1) &^ (page - 1)
	start := unsafe.Add(unsafe.Pointer(&b[0]), -int(lead))
	_ = syscall.Madvise(unsafe.Slice((*byte)(start), n), syscall.MADV_DONTNEED)
}

// PeakRSS returns the process's peak resident set size in bytes (getrusage's ru_maxrss, which Linux counts in KiB)
// and whether the system reports it.
func PeakRSS() (uint64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil || ru.Maxrss <= 0 {
		return 0, false
	}
	return uint64(ru.Maxrss) * 1024, true
}
