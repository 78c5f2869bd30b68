package main

import (
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

// TestBenchKernelsPrintsTheTable: bankml bench kernels (tiny --rows and
// --rounds) prints a row per format and row length, every checked result
// equal to the reference's.
func TestBenchKernelsPrintsTheTable(t *testing.T) {
	if _, err := reference.LoadKernels(); err != nil {
		testdata.Absent(t, "reference not installed: %v", err)
	}
	code, out, stderr := runCLI("bench", "kernels", "--rows", "2", "--rounds", "3")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, typ := range []string{"q1_0", "q2_0", "tq2_0"} {
		for _, n := range []string{"4096", "12288"} {
			found := false
			for line := range strings.Lines(out) {
				f := strings.Fields(line)
				if len(f) > 2 && f[0] == typ && f[1] == n {
					found = true
					if f[len(f)-1] != "2/2" {
						t.Errorf("%s %s: results equal %s, want 2/2", typ, n, f[len(f)-1])
					}
				}
			}
			if !found {
				t.Errorf("no row for %s %s in\n%s", typ, n, out)
			}
		}
	}
	if !strings.Contains(out, "not subtracted") {
		t.Errorf("the call overhead is not explained:\n%s", out)
	}
}

// TestBenchKernelsRefusesBadFlags: --rows and --rounds below 1 are usage errors.
func TestBenchKernelsRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--rows", "0"}, {"--rounds", "0"}} {
		code, _, stderr := runCLI(append([]string{"bench", "kernels"}, args...)...)
		if code != 1 || !strings.Contains(stderr, "at least 1") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}
