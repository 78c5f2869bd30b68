// Package reftest is test support shared by the oracle tests of several
// packages: the reference loaded or the test skipped (failed under CI) when
// it is not installed (Lib), the reference's sampler chain for a
// sample.Params (Chain), llama.cpp's own common_sampler for requests with a
// grammar or a reasoning budget (CommonSampler), and llama-server's
// per-request slot loop run on the
// reference (Generate: cached prefix, prompt micro-batches, init_sampler,
// EOG, n_predict, the context limit, stop strings), the oracle of package
// engine and of the HTTP layers above it. Package sample's own tests cannot
// import it (it imports sample).
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
