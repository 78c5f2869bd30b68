//go:build linux

package quant

import (
	"syscall"
	"time"
)

// legacyThreadCPU returns the CPU time (user + system) the calling OS thread
// has used (getrusage RUSAGE_THREAD), so kernel benchmarks can report time
// that other processes on a shared machine do not inflate. The caller must
// hold runtime.LockOSThread.
func legacyThreadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
