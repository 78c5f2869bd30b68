package fmath

import "math"

// powfLog2C holds the logc column of glibc's __powf_log2_data.tab
// (POWF_LOG2_TABLE_BITS = 4): log2(c) rounded to double for the c of logf's
// table, whose invc column it shares. Read from the .rodata of glibc 2.36's
// libm.so.6 and checked by TestPowfMatchesLibm.
var powfLog2C = [16]float64{
	-0x1.efec65b963019p-02, -0x1.b0b6832d4fca4p-02, -0x1.7418b0a1fb77bp-02, -0x1.39de91a6dcf7bp-02,
	-0x1.01d9bf3f2b631p-02, -0x1.97c1d1b3b7afp-03, -0x1.2f9e393af3c9fp-03, -0x1.960cbbf788d5cp-04,
	-0x1.a6f9db6475fcep-05, 0x0p+00, 0x1.338ca9f24f53dp-04, 0x1.476a9543891bap-03,
	0x1.e840b4ac4e4d2p-03, 0x1.40645f0c6651cp-02, 0x1.88e9c2c1b9ff8p-02, 0x1.ce0a44eb17bccp-02,
}

// Constants of glibc's powf: the degree-5 polynomial for log1p(r)/ln2, the
// rounding shift of exp2 (0x1.8p52 / 32) and its degree-3 polynomial for
// 2^r (exp2f's, unscaled), and the sign bit of the result as an exponent bias.
const (
	powfA0       = 0x1.27616c9496e0bp-02
	powfA1       = -0x1.71969a075c67ap-02
	powfA2       = 0x1.ec70a6ca7baddp-02
	powfA3       = -0x1.7154748bef6c8p-01
	powfA4       = 0x1.71547652ab82bp+00
	powfShift    = 0x1.8p+47
	powfC0       = 0x1.c6af84b912394p-05
	powfC1       = 0x1.ebfce50fac4f3p-03
	powfC2       = 0x1.62e42ff0c52d6p-01
	powfSignBias = 1 << (expTableBits + 11)
)

// Powf returns x**y rounded to float32 exactly as the x86-64 FMA build of
// glibc 2.36's powf does (the variant its ifunc selects on AVX2+FMA CPUs;
// ggml calls it for the RoPE theta scale, llama.cpp's dynamic temperature for
// entropy^exponent). The algorithm is ARM optimized-routines': log2(x) in
// double from a 16-entry table and a degree-5 polynomial, y*log2(x) in
// double, then exp2 from exp2f's 32-entry table (the one Expf uses) and a
// degree-3 polynomial, each with the contractions the compiler emitted (read
// from the disassembly of libm.so.6). Round-to-nearest is assumed.
//
// Special cases follow C99 Annex F as glibc implements them: Powf(x, ±0) = 1
// and Powf(1, y) = 1 for any y (NaN included, signaling NaNs aside);
// NaN in, NaN out (x + y); x < 0 with a non-integer y gives x86's default NaN;
// zeros, infinities, overflow to ±Inf and underflow to ±0 with the sign of an
// odd integer power of a negative x.
func Powf(x, y float32) float32 {
	var signBias uint64
	ix, iy := math.Float32bits(x), math.Float32bits(y)
	if ix-0x00800000 >= 0x7f800000-0x00800000 || zeroInfNaNf(iy) {
		// x < 0x1p-126, infinite or NaN, or y zero, infinite or NaN.
		if zeroInfNaNf(iy) {
			switch {
			case 2*iy == 0:
				if isSignalingf(ix) {
					return x + y
				}
				return 1
			case ix == 0x3f800000:
				if isSignalingf(iy) {
					return x + y
				}
				return 1
			case 2*ix > 2*0x7f800000 || 2*iy > 2*0x7f800000:
				return x + y
			case 2*ix == 2*0x3f800000:
				return 1
			case (2*ix < 2*0x3f800000) == (iy&0x80000000 == 0):
				return 0 // |x| < 1 and y = +Inf, or |x| > 1 and y = -Inf
			}
			return y * y
		}
		if zeroInfNaNf(ix) {
			x2 := x * x
			if ix&0x80000000 != 0 && checkIntf(iy) == 1 {
				x2 = -x2
			}
			if iy&0x80000000 != 0 {
				return 1 / x2
			}
			return x2
		}
		// x and y are finite and non-zero.
		if ix&0x80000000 != 0 {
			switch checkIntf(iy) {
			case 0:
				return invalidf(ix)
			case 1:
				signBias = powfSignBias
			}
			ix &= 0x7fffffff
		}
		if ix < 0x00800000 { // subnormal: normalise so the exponent goes negative
			ix = math.Float32bits(math.Float32frombits(ix)*0x1p23) & 0x7fffffff
			ix -= 23 << 23
		}
	}
	logx := powfLog2(ix)
	ylogx := float64(y) * logx
	if math.Float64bits(ylogx)>>47&0xffff >= math.Float64bits(126.0)>>47 {
		// |y*log2(x)| >= 126
		switch {
		case ylogx > 0x1.fffffffd1d571p+06:
			return overflowf(signBias)
		case ylogx <= -150.0:
			return underflowf(signBias)
		case ylogx < -149.0:
			// __math_may_uflowf: 0x1.4p-75f squared rounds to the smallest subnormal.
			return signedf(math.Float32frombits(1), signBias)
		}
	}
	return powfExp2(ylogx, signBias)
}

// powfLog2 is powf's log2_inline: log2 of the float with bits ix (positive,
// normal or pre-normalised) in double.
func powfLog2(ix uint32) float64 {
	tmp := ix - logfOff
	i := (tmp >> (23 - 4)) % 16
	top := tmp & 0xff800000
	iz := ix - top
	k := int32(top) >> 23
	invc, logc := logfTab[i].invc, powfLog2C[i]
	z := float64(math.Float32frombits(iz))
	r := fma64(z, invc, -1)
	y0 := logc + float64(k)
	y := fma64(r, powfA0, powfA1)
	p := fma64(r, powfA2, powfA3)
	r2 := r * r
	q := fma64(r, powfA4, y0)
	r4 := r2 * r2
	q = fma64(r2, p, q)
	return fma64(y, r4, q)
}

// powfExp2 is powf's exp2_inline: 2^xd rounded to float32, its sign set by
// signBias.
func powfExp2(xd float64, signBias uint64) float32 {
	kd := xd + powfShift
	ki := math.Float64bits(kd)
	kd -= powfShift
	r := xd - kd
	t := expTab[ki%(1<<expTableBits)] + (ki+signBias)<<(52-expTableBits)
	s := math.Float64frombits(t)
	z := fma64(r, powfC0, powfC1)
	r2 := r * r
	y := fma64(r, powfC2, 1)
	y = fma64(z, r2, y)
	return float32(y * s)
}

// zeroInfNaNf reports whether the float with bits i is ±0, ±Inf or NaN.
func zeroInfNaNf(i uint32) bool { return 2*i-1 >= 2*0x7f800000-1 }

// checkIntf returns 0 if the non-zero finite float with bits iy is not an
// integer, 1 if it is odd, 2 if it is even.
func checkIntf(iy uint32) int {
	e := int(iy >> 23 & 0xff)
	switch {
	case e < 0x7f:
		return 0
	case e > 0x7f+23:
		return 2
	case iy&(1<<(0x7f+23-e)-1) != 0:
		return 0
	case iy&(1<<(0x7f+23-e)) != 0:
		return 1
	}
	return 2
}

// isSignalingf reports whether the float with bits i is a signaling NaN.
func isSignalingf(i uint32) bool { return (i^0x00400000)&0x7fffffff > 0x7fc00000 }

// signedf returns v negated when signBias is set.
func signedf(v float32, signBias uint64) float32 {
	if signBias != 0 {
		return -v
	}
	return v
}

// overflowf is __math_oflowf: ±0x1p97f * 0x1p97f = ±Inf.
func overflowf(signBias uint64) float32 { return signedf(float32(math.Inf(1)), signBias) }

// underflowf is __math_uflowf: ±0x1p-95f * 0x1p-95f = ±0.
func underflowf(signBias uint64) float32 { return signedf(0, signBias) }
