package fmath

import "math"

// Constants of glibc 2.36's expm1f (sysdeps/ieee754/flt-32/s_expm1f.c, fdlibm),
// checked against libm.so.6's .rodata.
const (
	expm1OThreshold = 8.8721679688e+01 // 0x42b17180
	expm1Ln2Hi      = 6.9313812256e-01 // 0x3f317180
	expm1Ln2Lo      = 9.0580006145e-06 // 0x3717f7d1
	expm1InvLn2     = 1.4426950216e+00 // 0x3fb8aa3b
	expm1Q1         = -3.3333335072e-02
	expm1Q2         = 1.5873016091e-03
	expm1Q3         = -7.9365076090e-05
	expm1Q4         = 4.0082177293e-06
	expm1Q5         = -2.0109921195e-07
	expm1Huge       = 1.0e+30
	expm1Tiny       = 1.0e-30
)

// Every product and sum below is converted with float32(...) explicitly: the
// spec's rule that stops Go from fusing it into an FMA, as glibc's baseline
// x86-64 build never contracts.

// Expm1f returns e**x - 1 exactly as glibc 2.36's expm1f (x86-64; the
// generic fdlibm code, compiled without FMA) computes it: argument reduction
// by k·ln2 in two parts, a degree-5 rational correction in float32, and the
// result rebuilt by adding k to the exponent field. Special cases: NaN
// returns NaN, +Inf +Inf, -Inf -1, x > 88.7216796875 overflows to +Inf,
// x < -27·ln2 returns -1.
func Expm1f(x float32) float32 {
	hx := math.Float32bits(x)
	sign := hx & 0x80000000
	hx &= 0x7fffffff
	var k int32
	var c float32
	switch {
	case hx > 0x4195b843: // |x| >= 27*ln2
		if hx > 0x42b17217 {
			switch {
			case hx > 0x7f800000:
				return x + x
			case hx == 0x7f800000:
				if sign != 0 {
					return -1
				}
				return x
			case x > expm1OThreshold:
				return float32(math.Inf(1))
			}
		}
		if sign != 0 {
			return float32(expm1Tiny - 1)
		}
		k, x, c = expm1Reduce(x, 0.5)
	case hx > 0x3eb17218: // |x| > 0.5*ln2
		switch {
		case hx > 0x3f851591: // |x| >= 1.5*ln2
			half := float32(0.5)
			if sign != 0 {
				half = -0.5
			}
			k, x, c = expm1Reduce(x, half)
		default:
			var hi, lo float32
			if sign == 0 {
				hi, lo, k = float32(x-expm1Ln2Hi), expm1Ln2Lo, 1
			} else {
				hi, lo, k = float32(x+expm1Ln2Hi), -expm1Ln2Lo, -1
			}
			x = float32(hi - lo)
			c = float32(float32(hi-x) - lo)
		}
	case hx <= 0x32ffffff: // |x| < 2**-25
		t := float32(expm1Huge + x)
		return float32(x - float32(t-t))
	}
	hfx := float32(0.5 * x)
	hxs := float32(x * hfx)
	r1 := float32(expm1Q5 * hxs)
	r1 = float32(float32(r1+expm1Q4) * hxs)
	r1 = float32(float32(r1+expm1Q3) * hxs)
	r1 = float32(float32(r1+expm1Q2) * hxs)
	r1 = float32(float32(r1+expm1Q1) * hxs)
	r1 = float32(r1 + 1)
	t := float32(3 - float32(hfx*r1))
	e := float32(float32(float32(r1-t)/float32(6-float32(t*x))) * hxs)
	if k == 0 {
		return float32(x - float32(float32(e*x)-hxs))
	}
	e = float32(float32(float32(float32(e-c)*x)-c) - hxs)
	switch {
	case k == -1:
		return float32(float32(float32(x-e)*0.5) - 0.5)
	case k == 1:
		if x < -0.25 {
			return float32(-2 * float32(e-float32(0.5+x)))
		}
		d := float32(x - e)
		return float32(float32(d+d) + 1)
	case k <= -2 || k > 56:
		y := float32(1 - float32(e-x))
		return float32(math.Float32frombits(math.Float32bits(y)+uint32(k)<<23) - 1)
	case k > 22:
		t := math.Float32frombits(uint32(0x7f-k) << 23) // 2^-k
		y := float32(float32(x-float32(e+t)) + 1)
		return math.Float32frombits(math.Float32bits(y) + uint32(k)<<23)
	}
	t = math.Float32frombits(0x3f800000 - uint32(0x1000000>>k)) // 1 - 2^-k
	y := float32(t - float32(e-x))
	return math.Float32frombits(math.Float32bits(y) + uint32(k)<<23)
}

// expm1Reduce is expm1f's reduction for |x| >= 1.5·ln2: k = (int)(invln2·x +
// half) (truncated), x = hi - lo with hi = x - k·ln2_hi and lo = k·ln2_lo, and
// the correction c = (hi - x) - lo.
func expm1Reduce(x, half float32) (k int32, xr, c float32) {
	k = int32(float32(half + float32(expm1InvLn2*x)))
	t := float32(k)
	hi := float32(x - float32(t*expm1Ln2Hi))
	lo := float32(t * expm1Ln2Lo)
	xr = float32(hi - lo)
	return k, xr, float32(float32(hi-xr) - lo)
}

// Tanhf returns the hyperbolic tangent of x exactly as glibc 2.36's tanhf
// (sysdeps/ieee754/flt-32/s_tanhf.c, fdlibm; x86-64 without FMA) computes
// it, which ggml's tanh op and its GELU table call: x for ±0 and |x| < 2^-55
// gives x·(1+x), 1 - 2/(expm1f(2|x|)+2) for 1 <= |x| < 22, -t/(t+2) with
// t = expm1f(-2|x|) below 1, ±(1 - 1e-30) from 22 on, NaN for NaN.
func Tanhf(x float32) float32 {
	jx := math.Float32bits(x)
	ix := jx & 0x7fffffff
	if ix > 0x7f7fffff { // Inf or NaN
		r := float32(1 / x)
		if int32(jx) >= 0 {
			return float32(r + 1)
		}
		return float32(r - 1)
	}
	var z float32
	switch {
	case ix > 0x41afffff: // |x| >= 22
		z = float32(1 - expm1Tiny)
	case ix == 0:
		return x
	case ix <= 0x23ffffff: // |x| < 2**-55
		return float32(float32(1+x) * x)
	case ix <= 0x3f7fffff: // |x| < 1
		t := Expm1f(float32(float32(math.Abs(float64(x))) * -2))
		z = float32(-t / float32(t+2))
	default:
		ax := float32(math.Abs(float64(x)))
		t := Expm1f(float32(ax + ax))
		z = float32(1 - float32(2/float32(t+2)))
	}
	if int32(jx) < 0 {
		return -z
	}
	return z
}
