package reference

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// envSelfTestVariant makes the test binary, instead of running tests, load
// the named CPU backend library through load and print the outcome. Loading
// is once per process, so TestRejectsOtherVariants needs a child process.
const envSelfTestVariant = "BANKML_REFERENCE_SELFTEST_VARIANT"

func TestMain(m *testing.M) {
	if v := os.Getenv(envSelfTestVariant); v != "" {
		if _, err := load(v); err != nil {
			fmt.Println("LOAD ERROR:", err)
		} else {
			fmt.Println("LOAD OK")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRejectsOtherVariants checks that the haswell verification of load
// refuses the other x86 CPU variants this machine can load, and accepts
// haswell itself.
func TestRejectsOtherVariants(t *testing.T) {
	loadOrSkip(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"libggml-cpu-x64.so", "libggml-cpu-sse42.so", "libggml-cpu-sandybridge.so", "libggml-cpu-haswell.so"} {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), envSelfTestVariant+"="+v)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", v, err, out)
		}
		got := strings.TrimSpace(string(out))
		t.Logf("%s: %s", v, got)
		wantOK := v == libCPUHaswell
		if strings.HasPrefix(got, "LOAD OK") != wantOK {
			t.Errorf("%s: got %q, want success %v", v, got, wantOK)
		}
	}
}
