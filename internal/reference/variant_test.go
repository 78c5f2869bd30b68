package reference

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/cpuvariant"
)

// envSelfTestVariant makes the test binary, instead of running tests, load
// a CPU backend library through load, verified as a variant, and print the
// outcome: "LIBRARY:VARIANT". Loading is once per process, so
// TestLoadVerifiesTheVariant needs a child process per case.
const envSelfTestVariant = "BANKML_REFERENCE_SELFTEST_VARIANT"

func TestMain(m *testing.M) {
	if s := os.Getenv(envSelfTestVariant); s != "" {
		lib, name, _ := strings.Cut(s, ":")
		v, err := cpuvariant.Parse(name)
		if err == nil {
			_, err = load(lib, v)
		}
		if err != nil {
			fmt.Println("LOAD ERROR:", err)
		} else {
			fmt.Println("LOAD OK")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestLoadVerifiesTheVariant loads every CPU variant this machine can run,
// once verified as itself (accepted) and once as haswell (refused unless it
// is haswell), each in a child process.
func TestLoadVerifiesTheVariant(t *testing.T) {
	loadOrSkip(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, v := range cpuvariant.All() {
		if err := CanExecute(v); err != nil {
			t.Logf("%s: skipped: %v", v, err)
			continue
		}
		for _, want := range []cpuvariant.Variant{v, cpuvariant.Haswell} {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), envSelfTestVariant+"="+v.Library()+":"+want.String())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s as %s: %v\n%s", v, want, err, out)
			}
			got := strings.TrimSpace(string(out))
			wantOK := v == want
			if strings.HasPrefix(got, "LOAD OK") != wantOK {
				t.Errorf("%s verified as %s: got %q, want success %v", v, want, got, wantOK)
			}
		}
		ran++
	}
	t.Logf("%d of %d variants this CPU runs load and verify as themselves, and only haswell as haswell", ran, ran)
}
