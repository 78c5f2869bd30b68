//go:build windows

package admit

import (
	"os"
	"syscall"
)

// fileID is the volume serial number and the 64-bit file index of the file at path
// (GetFileInformationByHandle), Windows' device and inode.
func fileID(path string, _ os.FileInfo) (dev, ino uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var d syscall.ByHandleFileInformation
	if err := syscall.GetFileInformationByHandle(syscall.Handle(f.Fd()), &d); err != nil {
		return 0, 0, &os.PathError{Op: "GetFileInformationByHandle", Path: path, Err: err}
	}
	return uint64(d.VolumeSerialNumber), uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow), nil
}
