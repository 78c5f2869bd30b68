//go:build windows

package cshim

import "errors"

// The shims are shared objects built by g++ and loaded with dlopen: not on Windows, where these stubs keep
// the package building (Build skips the test before calling them).
var errNoDL = errors.New("cshim: dlopen is not available on windows")

func dlopen(string) (uintptr, error)         { return 0, errNoDL }
func dlsym(uintptr, string) (uintptr, error) { return 0, errNoDL }
