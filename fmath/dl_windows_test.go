//go:build windows

package fmath

import "errors"

// dlopenLibm: glibc's libm is not on Windows (the libm oracles skip before calling it).
func dlopenLibm() (uintptr, error) { return 0, errors.New("no libm.so.6 on windows") }
