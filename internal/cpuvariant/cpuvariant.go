// Package cpuvariant names the x86 CPU backend builds the reference ships
// (libggml-cpu-<name>.so) and reproduces ggml's choice among them.
//
// # Design record
//
//   - What: the fourteen x86 variants of llama.cpp's GGML_CPU_ALL_VARIANTS
//     build with the instruction-set features each is compiled with, and
//     ggml_backend_cpu_x86_score (ggml/src/ggml-cpu/arch/x86/cpu-feats.cpp):
//     the same CPUID bits tested in the same order, so Auto is the variant
//     ggml_backend_load_best (ggml/src/ggml-backend-reg.cpp) loads.
//   - Follows: ggml/src/CMakeLists.txt (the variant list and features),
//     cpu-feats.cpp (scores), ggml-cpu.cpp (the feature names a backend
//     reports through ggml_backend_get_features).
//   - Deliberate differences: none; like ggml's scorer it does not check OS
//     support of the AVX state. Off amd64 no variant scores above 0.
//   - A leaf package: package quant (which bankml's kernels match) and
//     internal/reference (which loads a variant's library) both import it.
package cpuvariant

import (
	"fmt"
	"strings"
)

// Variant is one of the x86 CPU backend builds the reference ships
// (libggml-cpu-<name>.so in @node-llama-cpp/linux-x64): the same ggml source
// compiled with another set of instruction-set flags, so that its float
// chains (vector widths, FMA contractions, horizontal-sum orders, ggml_v_expf)
// can differ. ggml loads the one its scorer rates best on the host
// (ggml_backend_load_best, src/ggml-backend-reg.cpp); bankml matches one of
// them, named by BANKML_MATCH (MatchFromEnv).
type Variant uint8

// The variants, in the order ggml/src/CMakeLists.txt adds them
// (GGML_CPU_ALL_VARIANTS on x86).
const (
	X64 Variant = iota
	SSE42
	SandyBridge
	IvyBridge
	Piledriver
	Haswell
	SkylakeX
	CannonLake
	CascadeLake
	IceLake
	CooperLake
	Zen4
	AlderLake
	SapphireRapids
	numVariants
)

// x86 features as ggml's CPU variants name them (GGML_<NAME> compile
// definitions, scored by ggml_backend_cpu_x86_score).
type x86Feature uint16

const (
	featFMA x86Feature = 1 << iota
	featF16C
	featSSE42
	featBMI2
	featAVX
	featAVX2
	featAVXVNNI
	featAVX512 // F, CD, VL, DQ and BW
	featAVX512VBMI
	featAVX512BF16
	featAVX512VNNI
	featAMXInt8
	featAMXTile // compiled in (sapphirerapids), not scored by ggml
)

// featureNames lists the features in the order ggml_backend_cpu_x86_score
// tests them; AMX_TILE, which it does not test, last.
var featureNames = []struct {
	f    x86Feature
	name string
}{
	{featFMA, "FMA"}, {featF16C, "F16C"}, {featSSE42, "SSE42"}, {featBMI2, "BMI2"},
	{featAVX, "AVX"}, {featAVX2, "AVX2"}, {featAVXVNNI, "AVX_VNNI"}, {featAVX512, "AVX512"},
	{featAVX512VBMI, "AVX512_VBMI"}, {featAVX512BF16, "AVX512_BF16"}, {featAVX512VNNI, "AVX512_VNNI"},
	{featAMXInt8, "AMX_INT8"}, {featAMXTile, "AMX_TILE"},
}

const haswellFeatures = featSSE42 | featAVX | featF16C | featFMA | featAVX2 | featBMI2

var variants = [numVariants]struct {
	name  string
	feats x86Feature
}{
	X64:            {"x64", 0},
	SSE42:          {"sse42", featSSE42},
	SandyBridge:    {"sandybridge", featSSE42 | featAVX},
	IvyBridge:      {"ivybridge", featSSE42 | featAVX | featF16C},
	Piledriver:     {"piledriver", featSSE42 | featAVX | featF16C | featFMA},
	Haswell:        {"haswell", haswellFeatures},
	SkylakeX:       {"skylakex", haswellFeatures | featAVX512},
	CannonLake:     {"cannonlake", haswellFeatures | featAVX512 | featAVX512VBMI},
	CascadeLake:    {"cascadelake", haswellFeatures | featAVX512 | featAVX512VNNI},
	IceLake:        {"icelake", haswellFeatures | featAVX512 | featAVX512VBMI | featAVX512VNNI},
	CooperLake:     {"cooperlake", haswellFeatures | featAVX512 | featAVX512VNNI | featAVX512BF16},
	Zen4:           {"zen4", haswellFeatures | featAVX512 | featAVX512VBMI | featAVX512VNNI | featAVX512BF16},
	AlderLake:      {"alderlake", haswellFeatures | featAVXVNNI},
	SapphireRapids: {"sapphirerapids", haswellFeatures | featAVX512 | featAVX512VBMI | featAVX512VNNI | featAVX512BF16 | featAMXTile | featAMXInt8},
}

// All returns every x86 variant the reference ships, in ggml's order.
func All() []Variant {
	vs := make([]Variant, numVariants)
	for i := range vs {
		vs[i] = Variant(i)
	}
	return vs
}

// String is the variant's name as its library spells it (libggml-cpu-<name>.so).
func (v Variant) String() string {
	if v < numVariants {
		return variants[v].name
	}
	return fmt.Sprintf("Variant(%d)", uint8(v))
}

// Library is the file name of the variant's CPU backend in the reference's
// bins folder.
func (v Variant) Library() string { return "libggml-cpu-" + v.String() + ".so" }

// Features lists the GGML_* instruction-set features the variant is compiled
// with, in the order ggml's scorer tests them (e.g. FMA F16C SSE42 BMI2 AVX
// AVX2 for haswell).
func (v Variant) Features() []string {
	var out []string
	for _, f := range featureNames {
		if v < numVariants && variants[v].feats&f.f != 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// Parse reads a variant name (case-insensitive, as String spells it).
func Parse(s string) (Variant, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for v := range numVariants {
		if variants[v].name == t {
			return v, nil
		}
	}
	names := make([]string, numVariants)
	for v := range numVariants {
		names[v] = variants[v].name
	}
	return 0, fmt.Errorf("cpuvariant: unknown CPU variant %q (want auto or one of %s)", s, strings.Join(names, ", "))
}

// x86CPU holds the CPUID words ggml's scorer reads (cpuid_x86 in
// ggml/src/ggml-cpu/arch/x86/cpu-feats.cpp).
type x86CPU struct {
	f1ECX, f7EBX, f7ECX, f7EDX, f71EAX uint32
}

// has reports the features ggml_backend_cpu_x86_score checks for f.
func (c x86CPU) has(f x86Feature) bool {
	bit := func(w uint32, i uint) bool { return w>>i&1 != 0 }
	switch f {
	case featFMA:
		return bit(c.f1ECX, 12)
	case featF16C:
		return bit(c.f1ECX, 29)
	case featSSE42:
		return bit(c.f1ECX, 20)
	case featBMI2:
		return bit(c.f7EBX, 8)
	case featAVX:
		return bit(c.f1ECX, 28)
	case featAVX2:
		return bit(c.f7EBX, 5)
	case featAVXVNNI:
		return bit(c.f71EAX, 4)
	case featAVX512: // F, CD, VL, DQ, BW
		return bit(c.f7EBX, 16) && bit(c.f7EBX, 28) && bit(c.f7EBX, 31) && bit(c.f7EBX, 17) && bit(c.f7EBX, 30)
	case featAVX512VBMI:
		return bit(c.f7ECX, 1)
	case featAVX512BF16:
		return bit(c.f71EAX, 5)
	case featAVX512VNNI:
		return bit(c.f7ECX, 11)
	case featAMXInt8:
		return bit(c.f7EDX, 25)
	case featAMXTile:
		return bit(c.f7EDX, 24)
	}
	return false
}

// score is ggml_backend_cpu_x86_score for the variant on c: 0 when c lacks
// a feature the variant is compiled with (AMX_TILE is not tested), else 1
// plus one bit per feature. Like ggml's, it does not check OS support.
func (v Variant) score(c x86CPU) int {
	s := 1
	for i, f := range featureNames[:12] { // AMX_TILE is not scored
		if variants[v].feats&f.f == 0 {
			continue
		}
		if !c.has(f.f) {
			return 0
		}
		s += 1 << i
	}
	return s
}

// Missing names the scored features the variant needs that this CPU lacks
// (all of them off amd64).
func (v Variant) Missing() []string {
	c, ok := hostX86()
	if !ok {
		return v.Features()
	}
	return v.missing(c)
}

// missing names the scored features the variant needs that c lacks.
func (v Variant) missing(c x86CPU) []string {
	var out []string
	for _, f := range featureNames[:12] {
		if variants[v].feats&f.f != 0 && !c.has(f.f) {
			out = append(out, f.name)
		}
	}
	return out
}

// Score is ggml_backend_score of the variant's library on this CPU (its
// ggml_backend_cpu_x86_score): 0 when ggml would not load it here. Off
// amd64 it is 0 for every variant.
func (v Variant) Score() int {
	c, ok := hostX86()
	if !ok || v >= numVariants {
		return 0
	}
	return v.score(c)
}

// Auto is the variant ggml_backend_load_best picks on this CPU: the
// highest score (scores are distinct, so the folder's order cannot matter).
// Off amd64, where no x86 variant loads, it is haswell, whose chains the
// portable kernels compute.
func Auto() Variant {
	c, ok := hostX86()
	if !ok {
		return Haswell
	}
	best, bestScore := Haswell, 0
	for v := range numVariants {
		if s := v.score(c); s > bestScore {
			best, bestScore = v, s
		}
	}
	return best
}

// Reported lists the names the variant's backend reports through
// ggml_backend_get_features among the x86 instruction-set ones (ggml-cpu.cpp:
// SSE3 and SSSE3 for the SSE4.2 builds, AMX_TILE never), sorted as
// featureNames.
func (v Variant) Reported() []string {
	var out []string
	if v < numVariants && variants[v].feats&featSSE42 != 0 {
		out = append(out, "SSE3", "SSSE3")
	}
	for _, f := range featureNames {
		if f.f == featSSE42 || f.f == featAMXTile {
			continue
		}
		if v < numVariants && variants[v].feats&f.f != 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// ISAFeatureNames is every name Reported can return: the x86
// instruction-set features among ggml_backend_get_features' names.
func ISAFeatureNames() []string {
	out := []string{"SSE3", "SSSE3"}
	for _, f := range featureNames {
		if f.f != featSSE42 && f.f != featAMXTile {
			out = append(out, f.name)
		}
	}
	return out
}
