// Package reftest is test support shared by the oracle tests of several packages: the reference loaded or the
// test skipped, its sampler chains, and llama-server's per-request slot loop run on the reference.
//
// # Design record
//
// What. [Lib] loads the reference or skips the test with testdata.Absent (failing under CI); [Chain] builds the
// reference's sampler chain for a sample.Params, and [CommonSampler] llama.cpp's own common_sampler for
// requests with a grammar or a reasoning budget; [Generate] runs one turn of llama-server's slot loop on a
// reference session (cached prefix, prompt micro-batches, init_sampler, EOG, n_predict, the context limit, stop
// strings): the oracle of package engine and of the HTTP layers above it. [AgainstAutoVariant] re-runs a
// package's oracle tests against the CPU variant ggml itself would load here.
//
// Follows. tools/server/server-context.cpp (the slot loop, process_token's order of finish reasons) and
// common/sampling.cpp (common_sampler_init), run through package internal/reference.
//
// Deliberate differences. None in what it reproduces. Package sample's own tests cannot import it (it imports
// sample) and build their chains themselves.
//
// Determinism. The answers are the reference's, for a fixed seed the same on every run.
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
