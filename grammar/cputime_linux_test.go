package grammar

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time of the calling thread (lock it with
// runtime.LockOSThread): on a machine shared with other work the wall time
// of a mask says little, the CPU it takes says what it costs.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
