package reftest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/quant"
)

// AgainstAutoVariant runs the oracle tests matching run (a -test.run
// pattern of the calling package) once more against the CPU variant ggml
// itself loads on this CPU, as a user's llama.cpp does (node-llama-cpp's
// default load): a child process of the test binary with
// BANKML_REFERENCE_VARIANT=auto and BANKML_MATCH=auto. When that variant is
// the one this process's oracles already ran against (haswell on an AVX2
// CPU without AVX-512 or AVX-VNNI), those runs are the auto oracles and
// nothing runs twice. When bankml does not model the variant's float chains
// the test is skipped with the reason (docs/exactness.md, "CPU variants").
func AgainstAutoVariant(t *testing.T, run string) {
	t.Helper()
	auto, err := reference.AutoVariant()
	if err != nil {
		testdata.Absent(t, "the reference's CPU variants: %v", err)
	}
	here, err := reference.ProcessVariant()
	if err != nil {
		t.Fatal(err)
	}
	if auto == here {
		t.Logf("ggml loads %s on this CPU, the variant this process's oracles (%s) ran against: they are the auto oracles", auto, run)
		return
	}
	if !quant.Modelled(auto) {
		t.Skipf("ggml loads %s on this CPU, whose float chains bankml does not model yet (docs/exactness.md, \"CPU variants\")", auto)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run="+run, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), reference.EnvVariant+"=auto", quant.EnvMatch+"=auto")
	out, err := cmd.CombinedOutput()
	var summary []string
	for _, line := range strings.Split(string(out), "\n") {
		if s := strings.TrimSpace(line); strings.HasPrefix(s, "--- ") || strings.Contains(s, " of ") {
			summary = append(summary, s)
		}
	}
	if err != nil {
		t.Fatalf("against %s (ggml's pick on this CPU): %v\n%s", auto, err, out)
	}
	t.Logf("against %s (ggml's pick on this CPU):\n%s", auto, strings.Join(summary, "\n"))
}
