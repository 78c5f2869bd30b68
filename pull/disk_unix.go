//go:build unix

package pull

import (
	"os"

	"golang.org/x/sys/unix"
)

// diskFree is the bytes an unprivileged user may still write on dir's file system (statfs f_bavail ×
// f_bsize).
func diskFree(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil //nolint:unconvert // field types differ by system
}

// syncDir flushes dir's entry list, so that a rename survives a crash.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
