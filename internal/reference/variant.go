package reference

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bankml/bankml/internal/cpuvariant"
	"github.com/ebitengine/purego"
)

// EnvVariant names the environment variable choosing the reference's CPU
// backend for this process: unset or empty for haswell (the historical
// target), "auto" for the variant ggml itself would load here (the highest
// ggml_backend_score among the folder's libggml-cpu-*.so, as
// ggml_backend_load_best), or a variant's name (libggml-cpu-<name>.so).
// [Load] and [LoadKernels] both load it; one variant per process.
const EnvVariant = "BANKML_REFERENCE_VARIANT"

var processVariant = sync.OnceValues(func() (cpuvariant.Variant, error) {
	return ResolveVariant(os.Getenv(EnvVariant))
})

// ResolveVariant reads an [EnvVariant] value: "" is haswell, "auto" is
// [AutoVariant], else a variant's name.
func ResolveVariant(s string) (cpuvariant.Variant, error) {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return cpuvariant.Haswell, nil
	case strings.EqualFold(t, "auto"):
		return AutoVariant()
	}
	v, err := cpuvariant.Parse(t)
	if err != nil {
		return 0, fmt.Errorf("reference: %s=%s: %w", EnvVariant, s, err)
	}
	return v, nil
}

// ProcessVariant is the CPU variant this process loads ([EnvVariant]).
func ProcessVariant() (cpuvariant.Variant, error) { return processVariant() }

// VariantScore dlopens the variant's library (locally, not registering it
// with ggml) and returns its ggml_backend_score on this CPU: what
// ggml_backend_load_best weighs. Scoring runs CPUID only, so every variant
// can be scored on any x86 CPU; but the library stays mapped, so a process
// that scores another variant cannot Load afterwards (the oracle of
// package cpuvariant calls it, in a process of its own).
func VariantScore(v cpuvariant.Variant) (int, error) {
	dir, err := Dir()
	if err != nil {
		return 0, err
	}
	h, err := dlopen(filepath.Join(dir, v.Library()), rtldNow)
	if err != nil {
		return 0, fmt.Errorf("reference: dlopen %s: %w", v.Library(), err)
	}
	defer dlclose(h)
	sym, err := dlsym(h, "ggml_backend_score")
	if err != nil || sym == 0 {
		return 0, fmt.Errorf("reference: %s has no ggml_backend_score: %v", v.Library(), err)
	}
	var score func() int32
	purego.RegisterFunc(&score, sym)
	return int(score()), nil
}

// AutoVariant is the variant ggml_backend_load_best would load from the
// bins folder on this CPU: cpuvariant.Auto, ggml's scorer as bankml
// reproduces it (internal/cpuvariant's TestScoresMatchTheLibraries holds it
// equal to every library's own ggml_backend_score). It is computed without
// loading the libraries: a library once dlopened stays mapped, and Load
// verifies that no other CPU variant is mapped into the process.
func AutoVariant() (cpuvariant.Variant, error) {
	dir, err := Dir()
	if err != nil {
		return 0, err
	}
	v := cpuvariant.Auto()
	if v.Score() == 0 {
		return 0, fmt.Errorf("reference: no CPU variant in %s scores above 0 on this CPU", dir)
	}
	if !isFile(filepath.Join(dir, v.Library())) {
		return 0, fmt.Errorf("reference: %s has no %s: %w", dir, v.Library(), ErrNotInstalled)
	}
	return v, nil
}

// CanExecute reports whether this CPU runs the variant's code: its score
// (cpuvariant's reproduction of ggml_backend_score, computed without loading
// the library) is above 0, else an error naming what the CPU lacks.
func CanExecute(v cpuvariant.Variant) error {
	if v.Score() == 0 {
		return fmt.Errorf("reference: this CPU cannot run %s (it lacks %s)", v.Library(), strings.Join(v.Missing(), ", "))
	}
	return nil
}
