package quant

import (
	"strings"
	"testing"
)

// TestResolveMatchRefusesWithTheReason: auto is ggml's pick when bankml models
// it and haswell with a note otherwise; haswell is matched everywhere; a
// variant this CPU cannot run is refused naming what it lacks, one bankml
// does not model is refused saying so, an unknown name is refused listing
// the names.
func TestResolveMatchRefusesWithTheReason(t *testing.T) {
	auto := AutoVariant()
	m, err := ResolveMatch("auto")
	if err != nil {
		t.Fatal(err)
	}
	if Modelled(auto) && (m.Variant != auto || m.Note != "") || !Modelled(auto) && (m.Variant != VariantHaswell || m.Note == "") {
		t.Errorf("auto on a CPU where ggml picks %s: %+v", auto, m)
	}
	if d, err := ResolveMatch(""); err != nil || d != m {
		t.Errorf(`ResolveMatch("") = %+v, %v; want auto's %+v`, d, err, m)
	}
	if h, err := ResolveMatch(" Haswell "); err != nil || h.Variant != VariantHaswell {
		t.Errorf("haswell: %+v, %v", h, err)
	}
	if _, err := ResolveMatch("zen5"); err == nil || !strings.Contains(err.Error(), "sapphirerapids") {
		t.Errorf("zen5: %v", err)
	}
	checked := 0
	for _, v := range Variants() {
		_, err := ResolveMatch(v.String())
		switch {
		case v == VariantHaswell:
			continue
		case len(v.Missing()) > 0:
			if err == nil || !strings.Contains(err.Error(), "which this CPU lacks") {
				t.Errorf("%s (lacks %v): %v", v, v.Missing(), err)
			}
		case !Modelled(v):
			if err == nil || !strings.Contains(err.Error(), "does not model") {
				t.Errorf("%s (not modelled): %v", v, err)
			}
		default:
			if err != nil {
				t.Errorf("%s: %v", v, err)
			}
		}
		checked++
	}
	t.Logf("%d of %d variants other than haswell accepted or refused with their reason; auto is %s (ggml's pick %s)", checked, checked, m.Variant, auto)
}
