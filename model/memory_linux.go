package model

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// physicalMemory is the machine's RAM in bytes (sysinfo), or 0 if unknown.
func physicalMemory() uint64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// sharedFileMaps returns the address ranges of this process's read-only
// shared file mappings (perms "r--s" in /proc/self/maps: what gguf.Open
// maps), nil when they cannot be read.
func sharedFileMaps() [][2]uintptr {
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil
	}
	var out [][2]uintptr
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "r--s" {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if ok && err1 == nil && err2 == nil {
			out = append(out, [2]uintptr{uintptr(a), uintptr(b)})
		}
	}
	return out
}

// releasePages tells the kernel that this process no longer needs the
// whole pages inside b (madvise MADV_DONTNEED) when b lies in one of maps,
// read-only shared file mappings (sharedFileMaps): the pages leave the
// resident set, stay in the page cache, and a later read faults them in
// again unchanged. Memory of any other kind (a file read into the heap by
// gguf.Parse, whose pages MADV_DONTNEED would zero) is left alone. Used
// for the matrices Load has packed, whose mapped bytes the SIMD kernels do
// not read. Errors are ignored: the pages merely stay resident.
func releasePages(b []byte, maps [][2]uintptr) {
	if len(b) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	end := start + uintptr(len(b))
	inside := false
	for _, m := range maps {
		inside = inside || (m[0] <= start && end <= m[1])
	}
	if !inside {
		return
	}
	ps := uintptr(syscall.Getpagesize())
	lo := (start + ps - 1) &^ (ps - 1)
	hi := end &^ (ps - 1)
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(b[lo-start:hi-start], syscall.MADV_DONTNEED)
}
