package quant

import (
	"fmt"
	"os"
	"strings"

	"github.com/bankml/bankml/internal/cpuvariant"
)

// Variant is one of the reference's x86 CPU backend builds
// (libggml-cpu-<name>.so): the same ggml source compiled with other
// instruction-set flags, whose float chains can differ (docs/exactness.md,
// "CPU variants"). See package internal/cpuvariant for the list and ggml's
// scorer.
type Variant = cpuvariant.Variant

// The variants bankml names in code.
const (
	VariantHaswell   = cpuvariant.Haswell
	VariantAlderLake = cpuvariant.AlderLake
)

// Variants returns every x86 variant the reference ships, in ggml's order.
func Variants() []Variant { return cpuvariant.All() }

// AutoVariant is the variant ggml_backend_load_best loads on this CPU
// (haswell off amd64).
func AutoVariant() Variant { return cpuvariant.Auto() }

// matchedBy maps each variant bankml matches to the variant whose float
// chains its kernels compute for it: haswell, and alderlake, whose build
// differs from haswell's only by AVX-VNNI in integer sums
// (docs/exactness.md, "CPU variants").
var matchedBy = map[Variant]Variant{
	VariantHaswell:   VariantHaswell,
	VariantAlderLake: VariantHaswell,
}

// Modelled reports whether bankml computes the variant's float chains.
func Modelled(v Variant) bool {
	_, ok := matchedBy[v]
	return ok
}

// CheckVariant reports whether bankml can match v on this CPU: an error
// naming the instructions the CPU lacks (ggml would not load the variant
// here either), or saying that bankml does not model the variant's chains.
// Haswell is matched on every CPU: its chains are what the portable twins
// compute (LevelGeneric).
func CheckVariant(v Variant) error {
	if v != VariantHaswell {
		if miss := v.Missing(); len(miss) > 0 {
			return fmt.Errorf("quant: CPU variant %s needs %s, which this CPU lacks", v, strings.Join(miss, ", "))
		}
	}
	if !Modelled(v) {
		return fmt.Errorf("quant: bankml does not model the float chains of CPU variant %s (docs/exactness.md, \"CPU variants\")", v)
	}
	return nil
}

// EnvMatch is the environment variable naming the reference CPU variant
// bankml matches: auto (the default: the variant ggml would load here) or a
// variant's name.
const EnvMatch = "BANKML_MATCH"

// Match is the reference CPU variant bankml's answers are exact against.
type Match struct {
	// Variant is the variant matched.
	Variant Variant
	// Auto is ggml's own pick on this CPU (AutoVariant).
	Auto Variant
	// Note says why Variant is not Auto when auto was asked for ("" else).
	Note string
}

// ResolveMatch reads a BANKML_MATCH (or --match) value: "" or "auto" is
// ggml's pick, else a variant's name, which must pass CheckVariant. When
// bankml does not model ggml's pick, auto matches haswell (the chains every
// level computes) and Note says so: auto is never refused.
func ResolveMatch(s string) (Match, error) {
	auto := AutoVariant()
	t := strings.TrimSpace(s)
	if t == "" || strings.EqualFold(t, "auto") {
		if CheckVariant(auto) == nil {
			return Match{Variant: auto, Auto: auto}, nil
		}
		return Match{Variant: VariantHaswell, Auto: auto,
			Note: fmt.Sprintf("answers are exact against llama.cpp's haswell CPU variant (ggml's own pick on this CPU, %s, rounds some float sums in another order that bankml does not model; --match haswell chooses haswell explicitly and omits this line)", auto)}, nil
	}
	v, err := cpuvariant.Parse(t)
	if err != nil {
		return Match{}, err
	}
	if err := CheckVariant(v); err != nil {
		return Match{}, err
	}
	return Match{Variant: v, Auto: auto}, nil
}

// MatchFromEnv is ResolveMatch of $BANKML_MATCH, its errors naming the
// variable.
func MatchFromEnv() (Match, error) {
	s := os.Getenv(EnvMatch)
	m, err := ResolveMatch(s)
	if err != nil {
		return Match{}, fmt.Errorf("%s=%s: %w", EnvMatch, s, err)
	}
	return m, nil
}
