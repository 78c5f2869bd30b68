package cpuvariant

// cpuid executes CPUID with EAX=leaf, ECX=sub.
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// hostX86 reads the CPUID words ggml's scorer reads, as cpuid_x86's
// constructor does (leaf 7 only when the highest standard leaf reaches it).
func hostX86() (x86CPU, bool) {
	var c x86CPU
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf >= 1 {
		_, _, c.f1ECX, _ = cpuid(1, 0)
	}
	if maxLeaf >= 7 {
		_, c.f7EBX, c.f7ECX, c.f7EDX = cpuid(7, 0)
		c.f71EAX, _, _, _ = cpuid(7, 1)
	}
	return c, true
}
