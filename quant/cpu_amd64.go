package quant

import (
	"golang.org/x/sys/cpu"

	"github.com/bankml/bankml/internal/cpuvariant"
)

// cpuidECX1 is ECX of CPUID leaf 1 (F16C is bit 29; x/sys/cpu does not
// report it).
func cpuidECX1() uint32 {
	_, _, ecx, _ := cpuvariant.CPUID(1, 0)
	return ecx
}

// isAMD reports whether CPUID's vendor string (leaf 0's EBX, EDX, ECX) is
// "AuthenticAMD".
func isAMD() bool {
	_, ebx, ecx, edx := cpuvariant.CPUID(0, 0)
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
		if top, _, _, _ := cpuvariant.CPUID(0x80000000, 0); top >= 0x80000005 {
			_, _, ecx, _ := cpuvariant.CPUID(0x80000005, 0)
			return int(ecx>>24) << 10
		}
		return 0
	}
	if top, _, _, _ := cpuvariant.CPUID(0, 0); top >= 4 {
		eax, ebx, ecx, _ := cpuvariant.CPUID(4, 0)
		if eax&0x1f == 1 { // a data cache
			ways, parts, line := int(ebx>>22)+1, int(ebx>>12&0x3ff)+1, int(ebx&0xfff)+1
			return ways * parts * line * (int(ecx) + 1)
		}
	}
	return 0
}
