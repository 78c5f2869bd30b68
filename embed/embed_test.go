package embed

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/internal/reftest"
)

// TestNormalizeMatchesReference: Normalize against libllama-common's
// common_embd_normalize, bit for bit, for every norm llama-server takes
// (-1, 0, 1, 2, 3, 7) on vectors of 1 to 1024 values of several scales,
// zeros and a vector of zeros included.
func TestNormalizeMatchesReference(t *testing.T) {
	lib := reftest.Lib(t)
	r := rand.New(rand.NewPCG(1, 2))
	var vecs [][]float32
	for _, n := range []int{1, 2, 3, 7, 64, 384, 1024} {
		for _, scale := range []float32{1e-3, 1, 37} {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(r.NormFloat64()) * scale
			}
			vecs = append(vecs, v)
		}
	}
	vecs = append(vecs, make([]float32, 16), []float32{0, -0.5, 0, 3})
	n, bad := 0, 0
	for _, norm := range []int{-1, 0, 1, 2, 3, 7} {
		for _, v := range vecs {
			want, err := lib.EmbdNormalize(v, norm)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(v))
			Normalize(got, v, norm)
			n++
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					bad++
					t.Errorf("norm %d, %d values: [%d] = %g, reference %g", norm, len(v), i, got[i], want[i])
					break
				}
			}
		}
	}
	t.Logf("%d of %d vectors bit-equal to common_embd_normalize", n-bad, n)
}

func TestNormalizeOllamaScalesToUnitLength(t *testing.T) {
	v := []float32{3, 4}
	if err := NormalizeOllama(v); err != nil || v[0] != 0.6 || v[1] != 0.8 {
		t.Errorf("got %v, %v", v, err)
	}
	if err := NormalizeOllama([]float32{1, float32(math.NaN())}); !errors.Is(err, ErrNotFinite) {
		t.Errorf("NaN: %v", err)
	}
	z := []float32{0, 0}
	if err := NormalizeOllama(z); err != nil || z[0] != 0 {
		t.Errorf("zeros: %v %v", z, err)
	}
}

func TestParsePoolingReadsLlamaServersNames(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Pooling
	}{{"", PoolingUnspecified}, {"none", PoolingNone}, {"mean", PoolingMean}, {"cls", PoolingCLS}, {"last", PoolingLast}, {"rank", PoolingRank}} {
		got, err := ParsePooling(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v", tc.in, got, err)
		}
		if tc.in != "" && got.String() != tc.in {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
	if _, err := ParsePooling("max"); !errors.Is(err, ErrPooling) {
		t.Errorf("max: %v", err)
	}
}
