package cpuvariant_test

import (
	"errors"
	"testing"

	"github.com/bankml/bankml/internal/cpuvariant"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

// TestScoresMatchTheLibraries checks ggml's scorer as bankml reproduces it
// against every variant library's own ggml_backend_score on this CPU, and
// Auto against the pick of those scores.
func TestScoresMatchTheLibraries(t *testing.T) {
	if _, err := reference.Dir(); errors.Is(err, reference.ErrNotInstalled) {
		testdata.Absent(t, "the reference: %v", err)
	}
	n := 0
	for _, v := range cpuvariant.All() {
		want, err := reference.VariantScore(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Score(); got != want {
			t.Errorf("%s: score %d, library says %d", v, got, want)
			continue
		}
		t.Logf("%-14s score %4d  features %v", v, want, v.Features())
		n++
	}
	t.Logf("%d of %d variant scores equal the libraries' ggml_backend_score", n, len(cpuvariant.All()))
	auto, err := reference.AutoVariant()
	if err != nil {
		t.Fatal(err)
	}
	if got := cpuvariant.Auto(); got != auto {
		t.Errorf("Auto() = %s, ggml's scores pick %s", got, auto)
	}
	t.Logf("ggml loads %s on this CPU", auto)
}

func TestParseNamesEveryVariant(t *testing.T) {
	for _, v := range cpuvariant.All() {
		got, err := cpuvariant.Parse(" " + v.String() + " ")
		if err != nil || got != v {
			t.Errorf("Parse(%q) = %v, %v", v.String(), got, err)
		}
	}
	if _, err := cpuvariant.Parse("zen5"); err == nil {
		t.Error("Parse(zen5) accepted")
	}
}
