package quant

import "golang.org/x/sys/unix"

// adviseHugePages asks the kernel to back b (whole hugePage-aligned huge
// pages, not yet written) with transparent huge pages: madvise
// MADV_HUGEPAGE, which takes effect where
// /sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise".
// An error (a kernel without THP) leaves b on normal pages, as it was.
func adviseHugePages(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
}
