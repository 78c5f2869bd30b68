//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) of every thread of this
// process so far (getrusage RUSAGE_SELF).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
