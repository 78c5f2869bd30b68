//go:build windows

package pull

import "golang.org/x/sys/windows"

// diskFree is the bytes the caller may still write on dir's volume (GetDiskFreeSpaceExW).
func diskFree(dir string) (uint64, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, err
	}
	var free, total, totalFree uint64
	if err := windows.GetDiskFreeSpaceEx(p, &free, &total, &totalFree); err != nil {
		return 0, err
	}
	return free, nil
}

// syncDir is a no-op: Windows has no directory fsync; MoveFileEx's rename is what it offers.
func syncDir(string) {}
