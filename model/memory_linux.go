package model

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// Where memoryBound reads the process's cgroups and their files (variables for the tests).
var (
	procSelfCgroup = "/proc/self/cgroup"
	cgroupRoot     = "/sys/fs/cgroup"
)

// physicalMemory is the memory this process may use, in bytes (memoryBound), or 0 if unknown.
func physicalMemory() uint64 {
	n, _ := memoryBound()
	return n
}

// memoryBound is the memory this process may use, in bytes: the machine's RAM (sysinfo) or, when lower,
// the memory limit of its cgroup (a container's limit, which the kernel enforces by killing the process:
// cgroupMemoryLimit), with the limit's file; 0 if neither is known. file is "" when the bound is the RAM.
func memoryBound() (n uint64, file string) {
	var ram uint64
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err == nil {
		ram = uint64(si.Totalram) * uint64(si.Unit)
	}
	self, _ := os.ReadFile(procSelfCgroup)
	if limit, file := cgroupMemoryLimit(cgroupRoot, self); limit != 0 && (ram == 0 || limit < ram) {
		return limit, file
	}
	return ram, ""
}

// cgroupMemoryLimit is the lowest memory limit set on the cgroups that self (the text of /proc/self/cgroup)
// names, or on any of their ancestors, under the cgroup file systems mounted at root: cgroup v2's
// memory.max of the unified hierarchy ("0::PATH"), cgroup v1's memory.limit_in_bytes of the memory
// controller's hierarchy (root/memory). Each cgroup is read from PATH up to the hierarchy's root, so a
// container whose own cgroup is mounted as the root (cgroup namespaces, v1's bind mount) is read too. It
// returns 0 and "" when no limit is set ("max", v1's page-rounded 2^63-1) or none can be read.
func cgroupMemoryLimit(root string, self []byte) (limit uint64, file string) {
	for line := range strings.Lines(string(self)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		var dir, name string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, name = root, "memory.max"
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			dir, name = filepath.Join(root, "memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		for p := path.Clean(f[2]); ; p = path.Dir(p) {
			at := filepath.Join(dir, p, name)
			if n, ok := readMemoryLimit(at); ok && (limit == 0 || n < limit) {
				limit, file = n, at
			}
			if p == "/" {
				break
			}
		}
	}
	return limit, file
}

// readMemoryLimit reads a cgroup memory limit file: ok is false when it cannot be read, says "max" (no
// limit), or holds 0 or a value of 2^62 bytes or more (cgroup v1's "no limit" is 2^63-1 rounded down to
// a page).
func readMemoryLimit(file string) (n uint64, ok bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	n, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil && n != 0 && n < 1<<62
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
	if !inMaps(b, maps) {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	end := start + uintptr(len(b))
	ps := uintptr(syscall.Getpagesize())
	lo := (start + ps - 1) &^ (ps - 1)
	hi := end &^ (ps - 1)
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(b[lo-start:hi-start], syscall.MADV_DONTNEED)
}
