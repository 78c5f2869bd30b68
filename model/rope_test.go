package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/quant"
)

// TestRopeRotateEveryLevel: Rope.rotate writes rotateGo's bits (the twin the
// whole-model oracles check through the traced Qcur/Kcur) at every level this
// CPU has, for NEOX and NORM heads of several sizes, caches of real
// positions and of random values, heads of every magnitude (subnormal
// products included) and non-finite values (NaN compared as NaN).
func TestRopeRotateEveryLevel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	val := func() float32 {
		switch r.IntN(40) {
		case 0:
			return float32(math.Inf(1 - 2*r.IntN(2)))
		case 1:
			return float32(math.NaN())
		}
		return float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(80)-60)))
	}
	cases := []struct {
		ndims, head int
		neox        bool
	}{{128, 128, true}, {64, 128, true}, {16, 16, true}, {8, 8, true}, {24, 32, true}, {128, 128, false}}
	for _, l := range quant.Levels() {
		n := 0
		for _, c := range cases {
			rp := Rope{NDims: c.ndims, Neox: c.neox, FreqBase: 1e6, FreqScale: 1, AttnFactor: 1, mscale: 1}
			rp.ThetaScale = float32(math.Pow(1e6, -2/float64(c.ndims)))
			cache := make([]float32, c.ndims)
			for trial := range 400 {
				if trial%2 == 0 {
					rp.cache(cache, r.IntN(1<<15), nil)
				} else {
					for i := range cache {
						cache[i] = val()
					}
				}
				x := make([]float32, c.head)
				for i := range x {
					x[i] = val()
				}
				want := append([]float32(nil), x...)
				rp.rotateGo(want, cache)
				rp.rotate(l, x, cache)
				for i := range x {
					if math.Float32bits(x[i]) != math.Float32bits(want[i]) && !(x[i] != x[i] && want[i] != want[i]) {
						t.Fatalf("%s ndims=%d neox=%v: x[%d] = %#x, rotateGo %#x", l, c.ndims, c.neox, i, math.Float32bits(x[i]), math.Float32bits(want[i]))
					}
					n++
				}
			}
		}
		t.Logf("%s: %d values equal", l, n)
	}
}
