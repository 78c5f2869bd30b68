package quant

import "golang.org/x/sys/cpu"

// cpuid returns the registers of CPUID leaf (subleaf 0): leaf 1's ECX has
// F16C at bit 29 and leaf 0's EBX, EDX, ECX spell the vendor, neither of
// which x/sys/cpu reports.
func cpuid(leaf uint32) (eax, ebx, ecx, edx uint32)

// cpuidECX1 is ECX of CPUID leaf 1.
func cpuidECX1() uint32 {
	_, _, ecx, _ := cpuid(1)
	return ecx
}

// isAMD reports whether CPUID's vendor string is "AuthenticAMD".
func isAMD() bool {
	_, ebx, ecx, edx := cpuid(0)
	return ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163 // "Auth" "enti" "cAMD"
}

func missingFeatures(l Level) []string {
	var miss []string
	need := func(ok bool, name string) {
		if !ok {
			miss = append(miss, name)
		}
	}
	if l >= LevelAVX2 {
		need(cpu.X86.HasAVX2, "AVX2")
		need(cpu.X86.HasFMA, "FMA")
		need(cpuidECX1()&(1<<29) != 0 && cpu.X86.HasOSXSAVE, "F16C")
		need(cpu.X86.HasBMI2, "BMI2")
	}
	if l >= LevelAVX512 {
		need(cpu.X86.HasAVX512F, "AVX-512F")
		need(cpu.X86.HasAVX512BW, "AVX-512BW")
		need(cpu.X86.HasAVX512VL, "AVX-512VL")
		need(cpu.X86.HasAVX512VNNI, "AVX-512VNNI")
	}
	return miss
}

// l1dBytes is the size of this CPU's level-1 data cache from CPUID (AMD:
// leaf 0x80000005's ECX[31:24] in KiB; others: leaf 4, subleaf 0, when it
// describes a data cache: ways × partitions × line × sets), 0 when CPUID
// does not tell.
func l1dBytes() int {
	if isAMD() {
		if top, _, _, _ := cpuid(0x80000000); top >= 0x80000005 {
			_, _, ecx, _ := cpuid(0x80000005)
			return int(ecx>>24) << 10
		}
		return 0
	}
	if top, _, _, _ := cpuid(0); top >= 4 {
		eax, ebx, ecx, _ := cpuid(4)
		if eax&0x1f == 1 { // a data cache
			ways, parts, line := int(ebx>>22)+1, int(ebx>>12&0x3ff)+1, int(ebx&0xfff)+1
			return ways * parts * line * (int(ecx) + 1)
		}
	}
	return 0
}
