package model

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCgroupMemoryLimitReadsTheContainersLimit: the memory bound of the KV cache check takes the cgroup's
// memory limit (v2 memory.max, v1 memory.limit_in_bytes, on the process's cgroup or an ancestor), read
// here from a fake cgroup tree, so that a container's limit, not the host's RAM, refuses a context that
// cannot fit.
func TestCgroupMemoryLimitReadsTheContainersLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		self  string            // /proc/self/cgroup
		files map[string]string // under the fake /sys/fs/cgroup
		limit uint64
		file  string // relative to the fake root
	}{
		{name: "a cgroup v2 container's memory.max (own namespace, path /) is the limit",
			self: "0::/\n", files: map[string]string{"memory.max": "4294967296\n"},
			limit: 4 << 30, file: "memory.max"},
		{name: "cgroup v2's max is no limit",
			self: "0::/\n", files: map[string]string{"memory.max": "max\n"}},
		{name: "a limit on a cgroup v2 ancestor, lower than the process's own, is the limit",
			self: "0::/kubepods/pod1/c1\n", files: map[string]string{
				"kubepods/pod1/c1/memory.max": "8589934592\n", "kubepods/pod1/memory.max": "2147483648\n", "kubepods/memory.max": "max\n"},
			limit: 2 << 30, file: "kubepods/pod1/memory.max"},
		{name: "a cgroup v1 container whose own cgroup is mounted as the memory hierarchy's root is read there",
			self: "4:memory:/kubepods/burstable/pod1/c1\n0::/\n", files: map[string]string{"memory/memory.limit_in_bytes": "4294967296\n"},
			limit: 4 << 30, file: "memory/memory.limit_in_bytes"},
		{name: "cgroup v1's page-rounded 2^63-1 is no limit",
			self: "4:memory:/process_api/x\n", files: map[string]string{
				"memory/process_api/x/memory.limit_in_bytes": "9223372036854771712\n", "memory/memory.limit_in_bytes": "9223372036854771712\n"}},
		{name: "a cgroup v1 memory controller mounted with others is found",
			self: "7:cpuacct,memory:/a\n", files: map[string]string{"memory/a/memory.limit_in_bytes": "1073741824\n"},
			limit: 1 << 30, file: "memory/a/memory.limit_in_bytes"},
		{name: "a hybrid host takes the lower of v1's and v2's limits",
			self: "4:memory:/a\n0::/a\n", files: map[string]string{"memory/a/memory.limit_in_bytes": "3221225472\n", "a/memory.max": "5368709120\n"},
			limit: 3 << 30, file: "memory/a/memory.limit_in_bytes"},
		{name: "no cgroup file is no limit",
			self: "0::/\n"},
		{name: "an unreadable /proc/self/cgroup is no limit",
			self: "", files: map[string]string{"memory.max": "4294967296\n"}},
		{name: "a garbled limit file is no limit",
			self: "0::/\n", files: map[string]string{"memory.max": "four gigabytes\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range c.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			limit, file := cgroupMemoryLimit(root, []byte(c.self))
			want := ""
			if c.file != "" {
				want = filepath.Join(root, c.file)
			}
			if limit != c.limit || file != want {
				t.Errorf("cgroupMemoryLimit = %d, %q; want %d, %q", limit, file, c.limit, want)
			}
		})
	}
}

// TestAContextOverTheCgroupLimitIsRefused: NewContext refuses a context whose full KV cache exceeds the
// cgroup's memory limit though the machine's RAM would hold it, naming the limit and its file; one that
// fits is made.
func TestAContextOverTheCgroupLimitIsRefused(t *testing.T) {
	m := loadModel(t, filepath.Join(modelsDir(t), "stories260K.gguf"))
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	ram := uint64(si.Totalram) * uint64(si.Unit)
	root := t.TempDir()
	self := filepath.Join(root, "self-cgroup")
	limit := filepath.Join(root, "memory.max")
	os.WriteFile(self, []byte("0::/\n"), 0o644)
	os.WriteFile(limit, []byte("1073741824\n"), 0o644)
	defer func(p, r string) { procSelfCgroup, cgroupRoot = p, r }(procSelfCgroup, cgroupRoot)
	procSelfCgroup, cgroupRoot = self, root
	for _, c := range []struct {
		name string
		gib  uint64 // the KV cache's size, GiB
		want string // "" = made
	}{
		{name: "a context whose KV cache exceeds the cgroup's 1 GiB is refused, naming the limit's file", gib: 2,
			want: "more than the cgroup memory limit of 1.00 GiB (" + limit + ")"},
		{name: "a context whose KV cache fits the cgroup's 1 GiB is made", gib: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			nCtx := 1024
			if c.gib > 0 {
				nCtx = int(c.gib<<30/m.kvBytes(1)) + kvPad
			}
			if m.kvBytes(nCtx) >= ram {
				t.Skipf("this machine's RAM (%d bytes) would refuse it too", ram)
			}
			_, err := m.NewContext(nCtx, 1)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("NewContext(%d): %v", nCtx, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("NewContext(%d) = %v; want an error containing %q", nCtx, err, c.want)
			}
		})
	}
}
