//go:build unix

package admit

import (
	"os"
	"syscall"
)

// fileID is the device and inode of a stat result (syscall.Stat_t).
func fileID(_ string, fi os.FileInfo) (dev, ino uint64, err error) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino), nil //nolint:unconvert // Dev is int32 on darwin
	}
	return 0, 0, nil
}
