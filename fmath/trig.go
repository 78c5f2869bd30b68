package fmath

import (
	"math"
	"math/big"
)

// This file ports glibc 2.36's sinf, cosf and sincosf
// (sysdeps/ieee754/flt-32/s_sinf.c, s_cosf.c, s_sincosf.c, s_sincosf.h,
// sincosf_poly.h, s_sincosf_data.c; algorithm from ARM's optimized-routines)
// as the x86-64 FMA build computes them: the variants __sinf_fma, __cosf_fma
// and __sincosf_fma that the ifuncs sinf (0x40d40), cosf (0x3f830) and sincosf
// (0x41430) of Debian's libm.so.6 2.36-9+deb12u14 select on AVX2+FMA CPUs
// (0x73720, 0x73280, 0x734b0). Read from their disassembly, every a*b+c of
// the polynomials and x - n*(π/2) of the fast reduction is one fused
// multiply-add (vfmadd*sd, vfnmadd132sd); every other operation is a plain
// double multiply. The polynomials are evaluated in double and rounded once to
// float32 (vcvtsd2ss / vcvtpd2ps).

// abstop12 thresholds: bits 20..30 of the float32 argument (glibc's abstop12),
// i.e. the exponent and the top three mantissa bits of |y|.
const (
	sincosfTopPio4 = 0x3f4 // abstop12(π/4 as float32 0x3f490fdb): |y| < 0.75
	sincosfTopTiny = 0x398 // abstop12(0x1p-12f)
	sincosfTop120  = 0x42f // abstop12(120.0f): the limit of the fast reduction
	sincosfTopInf  = 0x7f8 // abstop12(+Inf)
)

// Reduction constants of s_sincosf.h and __sincosf_table. On x86-64
// TOINT_INTRINSICS is 0, so hpi_inv is prescaled by 2^24. Written as exact
// constant expressions in Go's arbitrary-precision constant arithmetic, each
// rounds once to the double glibc spells out (checked in TestSincosfConstants
// against both glibc's hex literals and the π computed in invPio4):
//
//	sincosfHpiInv = 0x1.45f306dc9c883p+23  (2/π · 2^24)
//	sincosfHpi    = 0x1.921fb54442d18p+0   (π/2)
//	sincosfPi63   = 0x1.921fb54442d18p-62  (2π · 2^-64)
const (
	sincosfHpiInv float64 = 2 / math.Pi * (1 << 24)
	sincosfHpi    float64 = math.Pi / 2
	sincosfPi63   float64 = 2 * math.Pi / (1 << 64)
)

// sincosfSign is sincos_t.sign: the sign of the sine in quadrants 0..3.
var sincosfSign = [4]float64{1, -1, -1, 1}

// sincosfPoly holds the polynomial part of glibc's sincos_t. The cosine is
// c0 + c1 x² + c2 x⁴ + c3 x⁶ + c4 x⁸, the sine x + s1 x³ + s2 x⁵ + s3 x⁷.
type sincosfPoly struct {
	c0, c1, c2, c3, c4 float64
	s1, s2, s3         float64
}

// sincosfTab is __sincosf_table. The coefficients are the data of the
// algorithm, copied from glibc's s_sincosf_data.c and checked equal, bit for
// bit, to the table in this machine's libm .rodata (0xae280; its build stores
// them in the order c0 c1 s1 c2 s2 c3 s3 c4, pairing each sine coefficient
// with a cosine one for __sincosf_fma's two-lane vfmadd*pd). Entry 1 is entry
// 0 with the cosine polynomial negated, giving -cos(x) in quadrants 2 and 3.
var sincosfTab = func() [2]sincosfPoly {
	p := sincosfPoly{
		c0: 0x1p0,
		c1: -0x1.ffffffd0c621cp-2,
		c2: 0x1.55553e1068f19p-5,
		c3: -0x1.6c087e89a359dp-10,
		c4: 0x1.99343027bf8c3p-16,
		s1: -0x1.555545995a603p-3,
		s2: 0x1.1107605230bc4p-7,
		s3: -0x1.994eb3774cf24p-13,
	}
	q := p
	q.c0, q.c1, q.c2, q.c3, q.c4 = -p.c0, -p.c1, -p.c2, -p.c3, -p.c4
	return [2]sincosfPoly{p, q}
}()

// invPio4 is glibc's __inv_pio4: the first 192 bits of the binary fraction of
// 2/π (equivalently 4/π without its leading 1), 8 new bits per 32-bit entry, so
// that entry i = floor(2/π · 2^(8(i+1))) mod 2^32. Derived here from π rather
// than copied; TestSincosfConstants checks it against glibc's table.
var invPio4 = func() [24]uint32 {
	const prec = 320
	f := twoOverPiFixed(prec)
	var t [24]uint32
	for i := range t {
		w := new(big.Int).Rsh(f, uint(prec-8*(i+1)))
		t[i] = uint32(w.Uint64()) // low 32 bits
	}
	return t
}()

// twoOverPiFixed returns 2/π · 2^prec, truncated, to within a few units of its
// last place: π by Machin's formula π = 16 atan(1/5) - 4 atan(1/239) in
// fixed point with 64 guard bits.
func twoOverPiFixed(prec uint) *big.Int {
	wp := prec + 64
	one := new(big.Int).Lsh(big.NewInt(1), wp)
	atanInv := func(x int64) *big.Int { // atan(1/x) · 2^wp
		sum := new(big.Int)
		xx := big.NewInt(x * x)
		pow := new(big.Int).Quo(one, big.NewInt(x)) // x^-(2k+1) · 2^wp
		t := new(big.Int)
		for k := int64(0); pow.Sign() != 0; k++ {
			t.Quo(pow, big.NewInt(2*k+1))
			if k%2 == 0 {
				sum.Add(sum, t)
			} else {
				sum.Sub(sum, t)
			}
			pow.Quo(pow, xx)
		}
		return sum
	}
	pi := new(big.Int).Mul(big.NewInt(16), atanInv(5))
	pi.Sub(pi, new(big.Int).Mul(big.NewInt(4), atanInv(239)))
	r := new(big.Int).Lsh(big.NewInt(2), 2*wp) // 2 · 2^(2wp)
	r.Quo(r, pi)                               // 2/π · 2^wp
	return r.Rsh(r, wp-prec)
}

// sincosfReduceFast is glibc's reduce_fast (the !TOINT_INTRINSICS variant)
// for |x| < 120: the quadrant n = round(x·2/π) from a truncating conversion
// of x·(2/π)·2^24, and x - n·π/2 by one fused multiply-add (vfnmadd132sd).
func sincosfReduceFast(x float64) (float64, uint32) {
	r := x * sincosfHpiInv
	n := (int32(r) + 0x800000) >> 24
	return math.FMA(-float64(n), sincosfHpi, x), uint32(n)
}

// sincosfReduceLarge is glibc's reduce_large for 120 <= |x| < Inf, xi being
// the bits of the float32 argument: a 32×96-bit product with the 4/π table
// gives the exact position within the period as a 2.62 fixed-point number of
// quadrants; n is its rounded integer part (mod 4) and the signed remainder is
// converted to double and scaled to radians. The sign of x is not applied.
func sincosfReduceLarge(xi uint32) (float64, uint32) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	m := (xi&0xffffff | 0x800000) << shift
	res0 := uint64(m * arr[0]) // 32-bit product, as in glibc
	res1 := uint64(m) * uint64(arr[4])
	res2 := uint64(m) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * sincosfPi63, uint32(n)
}

// sinPoly is the sine branch of glibc's sinf_poly (x already carries the
// quadrant sign, x2 = x²), with the contractions of the FMA build.
func sinPoly(x, x2 float64, p *sincosfPoly) float64 {
	x3 := x2 * x
	s1 := math.FMA(x2, p.s3, p.s2)
	x7 := x2 * x3
	s := math.FMA(x3, p.s1, x)
	return math.FMA(s1, x7, s)
}

// cosPoly is the cosine branch of glibc's sinf_poly, with the contractions of
// the FMA build.
func cosPoly(x2 float64, p *sincosfPoly) float64 {
	x4 := x2 * x2
	c1 := math.FMA(x2, p.c1, p.c0)
	c2 := math.FMA(x2, p.c4, p.c3)
	x6 := x2 * x4
	c := math.FMA(x4, p.c2, c1)
	return math.FMA(c2, x6, c)
}

// sincosfInvalid is what glibc returns for an infinite or NaN argument: sinf and
// cosf return __math_invalidf(y) = (y-y)/(y-y), sincosf stores y-y. On x86 an
// infinity gives the default NaN 0xffc00000 and a NaN comes back quieted.
// (glibc also sets errno to EDOM for an infinity; this port does not.)
func sincosfInvalid(y float32) float32 {
	b := math.Float32bits(y)
	if b&0x7fffffff == 0x7f800000 {
		return math.Float32frombits(0xffc00000)
	}
	return math.Float32frombits(b | 0x400000)
}

// Sinf returns sin(x) for float32 x bit for bit as glibc 2.36's sinf does in
// its x86-64 FMA build (__sinf_fma, which glibc's ifunc selects on AVX2+FMA
// CPUs): |x| < 0x1p-12 returns x, |x| < 0.75 evaluates the odd polynomial
// directly, |x| < 120 reduces with one multiply-add by π/2, larger finite x
// reduce exactly with 192 bits of 4/π, and the polynomials run in double with
// glibc's fused multiply-adds. Sinf(±Inf) is the x86 default NaN (0xffc00000)
// and Sinf(NaN) the quieted NaN; errno and floating-point flags are not set.
func Sinf(x float32) float32 {
	ux := math.Float32bits(x)
	top := (ux >> 20) & 0x7ff
	xd := float64(x)
	switch {
	case top < sincosfTopPio4:
		if top < sincosfTopTiny {
			return x
		}
		return float32(sinPoly(xd, xd*xd, &sincosfTab[0]))
	case top < sincosfTop120:
		r, n := sincosfReduceFast(xd)
		return sinfQuadrant(r, n, n)
	case top < sincosfTopInf:
		r, n := sincosfReduceLarge(ux)
		return sinfQuadrant(r, n, n+ux>>31)
	}
	return sincosfInvalid(x)
}

// Cosf returns cos(x) for float32 x bit for bit as glibc 2.36's cosf does in
// its x86-64 FMA build (__cosf_fma); see Sinf for the method. |x| < 0x1p-12
// returns 1; Cosf(±Inf) is the x86 default NaN (0xffc00000) and Cosf(NaN) the
// quieted NaN; errno and floating-point flags are not set.
func Cosf(x float32) float32 {
	ux := math.Float32bits(x)
	top := (ux >> 20) & 0x7ff
	xd := float64(x)
	switch {
	case top < sincosfTopPio4:
		if top < sincosfTopTiny {
			return 1
		}
		return float32(cosPoly(xd*xd, &sincosfTab[0]))
	case top < sincosfTop120:
		r, n := sincosfReduceFast(xd)
		return sinfQuadrant(r, n^1, n)
	case top < sincosfTopInf:
		r, n := sincosfReduceLarge(ux)
		return sinfQuadrant(r, n^1, n+ux>>31)
	}
	return sincosfInvalid(x)
}

// sinfQuadrant finishes sinf (and cosf, called with n^1) after a reduction to
// r in [-π/4, π/4]: the parity of n picks the sine or cosine polynomial, q
// (the quadrant plus the sign bit of the argument for a large reduction) picks
// the sign of the sine and the table whose cosine polynomial is negated.
func sinfQuadrant(r float64, n, q uint32) float32 {
	p := &sincosfTab[q>>1&1]
	x2 := r * r
	if n&1 == 0 {
		return float32(sinPoly(r*sincosfSign[q&3], x2, p))
	}
	return float32(cosPoly(x2, p))
}

// Sincosf returns sin(x) and cos(x) for float32 x bit for bit as glibc 2.36's
// sincosf does in its x86-64 FMA build (__sincosf_fma), the call ggml's RoPE
// makes. That build evaluates the two polynomials side by side in two-lane
// vfmadd*pd, with the same operations per lane as __sinf_fma and __cosf_fma,
// so Sincosf(x) equals (Sinf(x), Cosf(x)) bit for bit; it is ported as its own
// path all the same. Tiny |x| < 0x1p-12 gives (x, 1); ±Inf gives two default
// NaNs and NaN two quieted NaNs; errno and floating-point flags are not set.
func Sincosf(x float32) (sin, cos float32) {
	ux := math.Float32bits(x)
	top := (ux >> 20) & 0x7ff
	xd := float64(x)
	switch {
	case top < sincosfTopPio4:
		if top < sincosfTopTiny {
			return x, 1
		}
		x2 := xd * xd
		p := &sincosfTab[0]
		return float32(sinPoly(xd, x2, p)), float32(cosPoly(x2, p))
	case top < sincosfTop120:
		r, n := sincosfReduceFast(xd)
		return sincosfQuadrant(r, n, n)
	case top < sincosfTopInf:
		r, n := sincosfReduceLarge(ux)
		return sincosfQuadrant(r, n, n+ux>>31)
	}
	nan := sincosfInvalid(x)
	return nan, nan
}

// sincosfQuadrant is glibc's sincosf_poly after a reduction: both polynomials,
// swapped when the quadrant n is odd; q as in sinfQuadrant.
func sincosfQuadrant(r float64, n, q uint32) (sin, cos float32) {
	p := &sincosfTab[q>>1&1]
	x2 := r * r
	s := float32(sinPoly(r*sincosfSign[q&3], x2, p))
	c := float32(cosPoly(x2, p))
	if n&1 != 0 {
		return c, s
	}
	return s, c
}

// Sqrtf returns the correctly rounded float32 square root (sqrtss).
func Sqrtf(x float32) float32 { return float32(math.Sqrt(float64(x))) }
