package quant

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestPackedBytesGetHugePages checks alignedBytes' layout (64-byte and,
// from hugePage bytes on, huge-page starts; zero bytes; capacity n) and,
// where the kernel lets madvise ask for transparent huge pages, that the
// bytes of a large packed matrix are backed by them once written
// (AnonHugePages of the mapping in /proc/self/smaps), in a fresh process
// of the test binary.
func TestPackedBytesGetHugePages(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		align uintptr
	}{
		{name: "a small matrix starts on a cache line", n: 1000, align: 64},
		{name: "one byte short of a huge page starts on a cache line", n: hugePage - 1, align: 64},
		{name: "a huge page's worth starts on a huge page", n: hugePage, align: hugePage},
		{name: "a 9 MiB matrix starts on a huge page", n: 9 << 20, align: hugePage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := alignedBytes(tc.n)
			if len(b) != tc.n || cap(b) != tc.n {
				t.Fatalf("len %d cap %d, want %d", len(b), cap(b), tc.n)
			}
			if a := uintptr(unsafe.Pointer(&b[0])); a%tc.align != 0 {
				t.Fatalf("starts at %#x, not a multiple of %d", a, tc.align)
			}
			for i, v := range b {
				if v != 0 {
					t.Fatalf("byte %d is %d, want 0", i, v)
				}
			}
		})
	}

	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[always]") && !strings.Contains(string(mode), "[madvise]") {
		t.Skipf("transparent huge pages are off on this kernel (%q, %v): nothing to check beyond the layout", strings.TrimSpace(string(mode)), err)
	}
	// The advice takes effect on pages not yet touched: a buffer the Go heap
	// recycles was zeroed (and so faulted in as 4 KiB pages) before
	// alignedBytes could advise it, as after the package's other tests. So
	// the check runs in a fresh process of this test binary, whose heap
	// comes fresh from the kernel as a loading model's does.
	if os.Getenv(hugePageChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), hugePageChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the check in a fresh process: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("the fresh process did not run %s:\n%s", t.Name(), out)
		}
		return
	}
	b := alignedBytes(16 << 20)
	for i := range b {
		b[i] = byte(i)
	}
	huge, err := anonHugeBytes(uintptr(unsafe.Pointer(&b[0])))
	if err != nil {
		t.Fatal(err)
	}
	// Huge pages on fault can fail when memory is fragmented; the kernel
	// then gives 4 KiB pages and khugepaged may collapse them later. One
	// huge page of eight is the least that shows the advice was taken.
	if huge < hugePage {
		t.Errorf("the mapping holding a written 16 MiB packed buffer has %d bytes of huge pages, want at least %d (THP mode %q)", huge, hugePage, strings.TrimSpace(string(mode)))
	}
}

// hugePageChild marks the fresh process TestPackedBytesGetHugePages runs
// its huge-page check in.
const hugePageChild = "BANKML_TEST_HUGEPAGE_CHILD"

// anonHugeBytes is the AnonHugePages of the mapping in /proc/self/smaps
// that holds address a.
func anonHugeBytes(a uintptr) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(line, ":") && strings.Count(strings.Fields(line)[0], "-") == 1 {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(a) >= l && uint64(a) < h
				continue
			}
		}
		if in && strings.HasPrefix(line, "AnonHugePages:") {
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				return 0, fmt.Errorf("smaps line %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no mapping in /proc/self/smaps holds %#x", a)
}
