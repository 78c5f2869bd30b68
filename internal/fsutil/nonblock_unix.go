//go:build unix

package fsutil

import "syscall"

const oNonblock = syscall.O_NONBLOCK
