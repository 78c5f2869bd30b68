package quant

import "golang.org/x/sys/cpu"

// cpuidECX1 returns ECX of CPUID leaf 1 (F16C is bit 29; x/sys/cpu does not
// report it).
func cpuidECX1() uint32

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
