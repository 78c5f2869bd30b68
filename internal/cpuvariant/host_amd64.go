package cpuvariant

// CPUID executes CPUID with EAX=leaf, ECX=sub and returns EAX, EBX, ECX,
// EDX: the host facts x/sys/cpu does not report read it (ggml's scorer
// words here; F16C, the vendor and the L1d size in quant).
func CPUID(leaf, sub uint32) (a, b, c, d uint32)

// hostX86 reads the CPUID words ggml's scorer reads, as cpuid_x86's
// constructor does (leaf 7 only when the highest standard leaf reaches it).
func hostX86() (x86CPU, bool) {
	var c x86CPU
	maxLeaf, _, _, _ := CPUID(0, 0)
	if maxLeaf >= 1 {
		_, _, c.f1ECX, _ = CPUID(1, 0)
	}
	if maxLeaf >= 7 {
		_, c.f7EBX, c.f7ECX, c.f7EDX = CPUID(7, 0)
		c.f71EAX, _, _, _ = CPUID(7, 1)
	}
	return c, true
}
