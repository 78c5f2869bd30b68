//go:build !amd64

package cpuvariant

// hostX86 reports that this is not an x86 CPU: no variant of the
// reference's x86 builds loads here.
func hostX86() (x86CPU, bool) { return x86CPU{}, false }
