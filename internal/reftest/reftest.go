// Package reftest is test support shared by the oracle tests of several
// packages: the reference loaded once per test binary, or the test skipped
// (failed under CI) when it is not installed.
package reftest

import (
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

// Lib returns the loaded reference (reference.Load), skipping the test with
// testdata.Absent when it is not installed.
func Lib(t testing.TB) *reference.Lib {
	t.Helper()
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	return lib
}
