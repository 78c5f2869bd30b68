package fmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLogMatchesLibm checks Log against this machine's libm log bit for bit:
// special values, every path's boundaries, arguments near 1, the range of
// llama-perplexity's sums of exponentials [1, 2^20) densely, and random bit
// patterns over all finite doubles.
func TestLogMatchesLibm(t *testing.T) {
	l := openLibm(t)
	specials := []float64{0, math.Copysign(0, -1), 1, -1, 2, 0.5, math.SmallestNonzeroFloat64, 0x1p-1022,
		0x1p-1023, math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), 1 - 0x1p-4, 1 + 0x1.09p-4,
		math.Nextafter(1-0x1p-4, 0), math.Nextafter(1+0x1.09p-4, 2), math.Nextafter(1, 0), math.Nextafter(1, 2),
		0x1.6p-1, 0x1.6p0, math.E, 10, 512, 32000, 151936}
	for _, x := range specials {
		got, want := Log(x), l.log(x)
		if math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) {
			t.Errorf("Log(%g) = %#x, libm %#x", x, math.Float64bits(got), math.Float64bits(want))
		}
	}
	r := rand.New(rand.NewPCG(9, 10))
	const n = 3_000_000
	bad := parallelCount(n, func(i int) bool {
		var x float64
		switch i % 3 {
		case 0: // near 1: both sides of the polynomial switch
			x = 0.9 + 0.2*float64(i)/n
		case 1: // sums of exponentials: [1, 2^20)
			x = math.Exp2(20 * float64(i) / n)
		default:
			x = math.Float64frombits(uint64(i) * 0x9e3779b97f4a7c15 >> 1) // positive bit patterns
		}
		got, want := Log(x), l.log(x)
		if math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) {
			t.Errorf("Log(%g [%#x]) = %#x, libm %#x", x, math.Float64bits(x), math.Float64bits(got), math.Float64bits(want))
			return false
		}
		return true
	})
	for range 200_000 {
		x := math.Float64frombits(r.Uint64())
		got, want := Log(x), l.log(x)
		if math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) {
			t.Errorf("Log(%g [%#x]) = %#x, libm %#x", x, math.Float64bits(x), math.Float64bits(got), math.Float64bits(want))
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d arguments differ from libm", bad)
	}
	t.Logf("Log equals libm log on %d of %d arguments", n+200_000+len(specials), n+200_000+len(specials))
}

// TestExpMatchesLibm checks Exp against this machine's libm exp bit for bit:
// special values, the range of perplexities' mean log-likelihoods [0, 16)
// densely, the overflow and underflow edges, and random bit patterns.
func TestExpMatchesLibm(t *testing.T) {
	l := openLibm(t)
	specials := []float64{0, math.Copysign(0, -1), 1, -1, 0x1p-54, -0x1p-54, 0x1p-60, 512, -512, 709.78, 709.79, -708.4,
		-745.1, -745.2, 1024, -1024, math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	same := func(got, want float64) bool {
		return math.Float64bits(got) == math.Float64bits(want) || (got != got && want != want)
	}
	for _, x := range specials {
		if got, want := Exp(x), l.exp(x); !same(got, want) {
			t.Errorf("Exp(%g) = %#x, libm %#x", x, math.Float64bits(got), math.Float64bits(want))
		}
	}
	const n = 2_000_000
	bad := parallelCount(n, func(i int) bool {
		var x float64
		switch i % 3 {
		case 0:
			x = 16 * float64(i) / n
		case 1:
			x = -750 + 1460*float64(i)/n
		default:
			x = math.Float64frombits(uint64(i) * 0x9e3779b97f4a7c15)
		}
		if got, want := Exp(x), l.exp(x); !same(got, want) {
			t.Errorf("Exp(%g [%#x]) = %#x, libm %#x", x, math.Float64bits(x), math.Float64bits(got), math.Float64bits(want))
			return false
		}
		return true
	})
	if bad > 0 {
		t.Fatalf("%d arguments differ from libm", bad)
	}
	t.Logf("Exp equals libm exp on %d of %d arguments", n+len(specials), n+len(specials))
}
