//go:build !linux

package model

// physicalMemory is unknown off linux: no check beyond overflow.
func physicalMemory() uint64 { return 0 }

// memoryBound is unknown off linux.
func memoryBound() (n uint64, file string) { return 0, "" }

// sharedFileMaps is nil off linux.
func sharedFileMaps() [][2]uintptr { return nil }

// releasePages does nothing off linux (the file may have been read into
// memory, not mapped).
func releasePages([]byte, [][2]uintptr) {}
