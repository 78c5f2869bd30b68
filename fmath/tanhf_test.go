package fmath

import (
	"math"
	"os"
	"runtime"
	"testing"

	"github.com/ebitengine/purego"
)

// libmTanh opens glibc's tanhf and expm1f (the oracle: the library the
// reference's ggml calls).
func libmTanh(t *testing.T) (tanhf, expm1f func(float32) float32) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("libm oracle: glibc is only on linux")
	}
	h, err := dlopenLibm()
	if err != nil {
		t.Skipf("libm oracle: cannot open libm.so.6: %v", err)
	}
	purego.RegisterLibFunc(&tanhf, h, "tanhf")
	purego.RegisterLibFunc(&expm1f, h, "expm1f")
	return tanhf, expm1f
}

// TestTanhfAndExpm1fMatchLibmBitForBit: Tanhf and Expm1f against glibc's on the
// special values and every 20011th float32 bit pattern of both signs (every
// 97th with BANKML_ORACLE_HEAVY=1: 67 million arguments, all equal on
// 2026-12-02, about 3 minutes through purego), for tanhf up to |x| = 23 (it is ±1
// beyond 22) and for expm1f over the whole line.
func TestTanhfAndExpm1fMatchLibmBitForBit(t *testing.T) {
	tanhf, expm1f := libmTanh(t)
	stride := uint32(20011)
	if os.Getenv("BANKML_ORACLE_HEAVY") == "1" {
		stride = 97
	}
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, 22, -22, 21.999998, 88.72168, 88.7217, 100, -100,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.SmallestNonzeroFloat32, math.MaxFloat32, 1e-30, -1e-20}
	for _, fn := range []struct {
		name      string
		got, want func(float32) float32
		top       uint32
	}{
		{"tanhf", Tanhf, tanhf, 0x41b80000}, {"expm1f", Expm1f, expm1f, 0x7f800000},
	} {
		n, bad := 0, 0
		check := func(x float32) {
			n++
			if g, w := fn.got(x), fn.want(x); !sameBits(g, w) {
				if bad++; bad <= 5 {
					t.Errorf("%s(%g = %#x) = %g (%#x), libm %g (%#x)", fn.name, x, math.Float32bits(x), g, math.Float32bits(g), w, math.Float32bits(w))
				}
			}
		}
		for _, x := range specials {
			check(x)
		}
		for _, sign := range []uint32{0, 1 << 31} {
			for u := uint32(0); u <= fn.top; u += stride {
				check(math.Float32frombits(sign | u))
				if u > fn.top-stride {
					break
				}
			}
		}
		t.Logf("%s: %d of %d arguments bit-equal to glibc's", fn.name, n-bad, n)
	}
}
