//go:build windows

package reference

import "errors"

// The reference is linux/amd64 only; these stubs keep the package building
// on Windows ([Load] reports the platform before calling them).
const (
	rtldNow    = 0
	rtldGlobal = 0
	rtldNoload = 0
)

var errNoDL = errors.New("reference: dlopen is not available on windows")

func dlopen(string, int) (uintptr, error)    { return 0, errNoDL }
func dlsym(uintptr, string) (uintptr, error) { return 0, errNoDL }
func dlclose(uintptr) error                  { return errNoDL }
