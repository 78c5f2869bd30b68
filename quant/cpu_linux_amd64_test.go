package quant

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestIsAMDAgreesWithProcCPUInfo: the vendor read from CPUID leaf 0 is the
// vendor_id the Linux kernel reports for this CPU.
func TestIsAMDAgreesWithProcCPUInfo(t *testing.T) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "vendor_id" {
			continue
		}
		vendor := strings.TrimSpace(v)
		if got, want := isAMD(), vendor == "AuthenticAMD"; got != want {
			t.Fatalf("isAMD() = %v on a CPU whose vendor_id is %q", got, vendor)
		}
		return
	}
	t.Skip("/proc/cpuinfo names no vendor_id")
}
