//go:build !linux

package ternary

// ReleaseMapped does nothing on this system (see the Linux version): gguf.Open reads files into memory here.
func ReleaseMapped(b []byte) {}

// PeakRSS is not reported on this system.
func PeakRSS() (uint64, bool) { return 0, false }
