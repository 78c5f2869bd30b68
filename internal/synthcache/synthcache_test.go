package synthcache

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
)

// TestFileWritesOnceAndNamesThePlan: the first call writes the file, a second
// call with the same configuration returns it untouched, and a configuration
// with another plan (seed, type) gets another name.
func TestFileWritesOnceAndNamesThePlan(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	shape.NLayer = 1
	cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.Q8_0, Seed: 5}
	p := File(t, "q", cfg)
	if filepath.Dir(p) != dir {
		t.Fatalf("%s is not in %s", p, dir)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Unix(1, 0)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if again := File(t, "q", cfg); again != p {
		t.Errorf("second call: %s, want %s", again, p)
	}
	if fi2, err := os.Stat(p); err != nil || !fi2.ModTime().Equal(old) || fi2.Size() != fi.Size() {
		t.Errorf("the file was written again (%v, %v)", fi2.ModTime(), err)
	}
	seed := cfg
	seed.Seed = 6
	typ := cfg
	typ.Weight = gguf.Q4_0
	for _, other := range []synth.Config{seed, typ} {
		if q := File(t, "q", other); q == p {
			t.Errorf("another plan got the same file %s", q)
		}
	}
}
