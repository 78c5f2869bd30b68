//go:build linux

package embed

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/bankml/bankml/internal/reftest"
)

// TestSimilarityCosMatchesReference: SimilarityCos against libllama-common's
// common_embd_similarity_cos, bit for bit, on pairs of vectors of several
// lengths and scales (normalized and not), zero vectors included.
func TestSimilarityCosMatchesReference(t *testing.T) {
	lib := reftest.Lib(t)
	h, err := purego.Dlopen(filepath.Join(lib.Dir(), "libllama-common.so"), purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	sym, err := purego.Dlsym(h, "_Z26common_embd_similarity_cosPKfS0_i")
	if err != nil {
		t.Fatal(err)
	}
	var ref func(a, b *float32, n int32) float32
	purego.RegisterFunc(&ref, sym)
	r := rand.New(rand.NewPCG(3, 4))
	vec := func(n int, scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64()) * scale
		}
		return v
	}
	type pair struct {
		name string
		a, b []float32
	}
	pairs := []pair{
		{"two zero vectors are 1", make([]float32, 4), make([]float32, 4)},
		{"a zero vector beside another is 0", make([]float32, 3), []float32{1, 2, 3}},
		{"a vector with itself", []float32{1 + 1.0/4096, -3, 0.25}, []float32{1 + 1.0/4096, -3, 0.25}},
		{"orthogonal vectors are 0", []float32{1, 0}, []float32{0, 1}},
		{"opposite vectors are -1", []float32{0.5, -2}, []float32{-0.5, 2}},
	}
	for _, n := range []int{1, 2, 7, 64, 384, 1024} {
		for _, scale := range []float32{1e-3, 1, 37} {
			a, b := vec(n, scale), vec(n, scale)
			pairs = append(pairs, pair{"random", a, b})
			na, nb := make([]float32, n), make([]float32, n)
			Normalize(na, a, 2)
			Normalize(nb, b, 2)
			pairs = append(pairs, pair{"random, normalized", na, nb}, pair{"random with itself", a, a})
		}
	}
	bad := 0
	for _, p := range pairs {
		got := SimilarityCos(p.a, p.b)
		want := ref(&p.a[0], &p.b[0], int32(len(p.a)))
		if math.Float32bits(got) != math.Float32bits(want) {
			bad++
			t.Errorf("%s, %d values: %v, reference %v", p.name, len(p.a), got, want)
		}
	}
	t.Logf("%d of %d similarities bit-equal to common_embd_similarity_cos", len(pairs)-bad, len(pairs))
}
