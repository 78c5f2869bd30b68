package fmath

import (
	"math"
	"math/big"
)

// expTableBits is log2 of the table size of glibc's expf (EXP2F_TABLE_BITS).
const expTableBits = 5

// Constants of glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, from ARM's
// optimized-routines): N = 32, InvLn2N = N/ln 2, the rounding shift 1.5·2^52 and the
// degree-3 polynomial for 2^(r/N), each coefficient scaled by powers of 1/N.
const (
	expInvLn2N = 0x1.71547652b82fep+0 * (1 << expTableBits)
	expShift   = 0x1.8p+52
	expC0      = 0x1.c6af84b912394p-5 / (1 << expTableBits) / (1 << expTableBits) / (1 << expTableBits)
	expC1      = 0x1.ebfce50fac4f3p-3 / (1 << expTableBits) / (1 << expTableBits)
	expC2      = 0x1.62e42ff0c52d6p-1 / (1 << expTableBits)
)

// expTab[i] = bits(2^(i/32)) - i<<(52-5): glibc's __exp2f_data.tab, derived here
// from the definition with 256-bit arithmetic rather than copied.
var expTab = func() [1 << expTableBits]uint64 {
	var t [1 << expTableBits]uint64
	const prec = 256
	root := new(big.Float).SetPrec(prec).SetInt64(2)
	for range expTableBits { // 2^(1/32) by five square roots
		root.Sqrt(root)
	}
	v := new(big.Float).SetPrec(prec).SetInt64(1)
	for i := range t {
		f, _ := v.Float64() // round to nearest even
		t[i] = math.Float64bits(f) - uint64(i)<<(52-expTableBits)
		v.Mul(v, root)
	}
	return t
}()

// Expf returns e**x rounded to float32 exactly as the x86-64 FMA build of glibc
// 2.36's expf does (the variant its ifunc selects on AVX2+FMA CPUs, which the
// reference's ggml calls for softmax and flash attention).
//
// Special cases: Expf(-Inf) = 0, Expf(+Inf) = +Inf, Expf(NaN) = NaN,
// x > 0x1.62e42ep6 overflows to +Inf, x < -0x1.9fe368p6 underflows to 0, and
// -0x1.9fe368p6 <= x < -0x1.9d1d9ep6 returns the smallest subnormal as glibc's
// __math_may_uflowf does.
func Expf(x float32) float32 {
	ux := math.Float32bits(x)
	abstop := (ux >> 20) & 0x7ff
	if abstop >= 0x42b { // |x| >= 88 or not finite
		switch {
		case ux == 0xff800000: // -Inf
			return 0
		case abstop >= 0x7f8: // +Inf or NaN
			return x + x
		case x > 0x1.62e42ep6:
			return float32(math.Inf(1))
		case x < -0x1.9fe368p6:
			return 0
		case x < -0x1.9d1d9ep6:
			return math.Float32frombits(1) // 0x1.4p-75f squared, rounded
		}
	}
	xd := float64(x)
	kd := fma64(expInvLn2N, xd, expShift)
	ki := math.Float64bits(kd)
	kd -= expShift
	r := fma64(expInvLn2N, xd, -kd)
	t := expTab[ki%(1<<expTableBits)] + ki<<(52-expTableBits)
	s := math.Float64frombits(t)
	z := fma64(expC0, r, expC1)
	r2 := r * r
	y := fma64(r, expC2, 1)
	y = fma64(z, r2, y)
	y = y * s
	return float32(y)
}
