package quant

import (
	"bufio"
	"os"
	"strconv"
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

// TestL1dBytesAgreesWithSysfs: the L1 data cache size read from CPUID is the
// one the Linux kernel reports for CPU 0's level-1 data cache.
func TestL1dBytesAgreesWithSysfs(t *testing.T) {
	const dir = "/sys/devices/system/cpu/cpu0/cache/index0/"
	typ, err1 := os.ReadFile(dir + "type")
	size, err2 := os.ReadFile(dir + "size")
	if err1 != nil || err2 != nil || strings.TrimSpace(string(typ)) != "Data" {
		t.Skipf("no level-1 data cache in %s", dir)
	}
	s := strings.TrimSpace(string(size))
	kib, err := strconv.Atoi(strings.TrimSuffix(s, "K"))
	if err != nil || !strings.HasSuffix(s, "K") {
		t.Skipf("%ssize is %q", dir, s)
	}
	if got := l1dBytes(); got != kib<<10 {
		t.Fatalf("l1dBytes() = %d; the kernel reports %s", got, s)
	}
}
