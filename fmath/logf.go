package fmath

import "math"

// logfTab holds glibc's __logf_data.tab (LOGF_TABLE_BITS = 4): for each of 16
// subintervals of [0x1.66p-1, 0x1.66p0) centred near c, invc ≈ 1/c and logc =
// log(c) rounded to double, with c chosen by a search (ARM optimized-routines'
// e_logf_data.c), so the values cannot be derived by a formula. Read from the
// .rodata of glibc 2.36's libm.so.6 and checked by TestLogfMatchesLibm.
var logfTab = [16]struct{ invc, logc float64 }{
	{0x1.661ec79f8f3bep+00, -0x1.57bf7808caadep-02},
	{0x1.571ed4aaf883dp+00, -0x1.2bef0a7c06ddbp-02},
	{0x1.49539f0f010bp+00, -0x1.01eae7f513a67p-02},
	{0x1.3c995b0b80385p+00, -0x1.b31d8a68224e9p-03},
	{0x1.30d190c8864a5p+00, -0x1.6574f0ac07758p-03},
	{0x1.25e227b0b8eap+00, -0x1.1aa2bc79c81p-03},
	{0x1.1bb4a4a1a343fp+00, -0x1.a4e76ce8c0e5ep-04},
	{0x1.12358f08ae5bap+00, -0x1.1973c5a611cccp-04},
	{0x1.0953f419900a7p+00, -0x1.252f438e10c1ep-05},
	{0x1p+00, 0x0p+00},
	{0x1.e608cfd9a47acp-01, 0x1.aa5aa5df25984p-05},
	{0x1.ca4b31f026aap-01, 0x1.c5e53aa362eb4p-04},
	{0x1.b2036576afce6p-01, 0x1.526e57720db08p-03},
	{0x1.9c2d163a1aa2dp-01, 0x1.bc2860d22477p-03},
	{0x1.886e6037841edp-01, 0x1.1058bc8a07ee1p-02},
	{0x1.767dcf5534862p-01, 0x1.4043057b6ee09p-02},
}

// Constants of glibc's logf: ln 2 and the degree-3 polynomial for log1p(r).
const (
	logfLn2 = 0x1.62e42fefa39efp-01
	logfA0  = -0x1.00ea348b88334p-02
	logfA1  = 0x1.5575b0be00b6ap-02
	logfA2  = -0x1.ffffef20a4123p-02
	logfOff = 0x3f330000
)

// Logf returns the natural logarithm of x rounded to float32 exactly as the
// x86-64 FMA build of glibc 2.36's logf does (the variant its ifunc selects
// on AVX2+FMA CPUs; llama.cpp's min-p, typical, dynamic-temperature and DRY
// samplers call it). The algorithm is ARM optimized-routines': x = 2^k z
// with z in [0x1.66p-1, 0x1.66p0), log x = k ln2 + log c + log1p(z/c - 1),
// the polynomial evaluated in double with the contractions the compiler
// emitted (read from the disassembly of libm.so.6).
//
// Special cases: Logf(1) = +0, Logf(±0) = -Inf, Logf(+Inf) = +Inf,
// Logf(x < 0) = NaN (x86's default NaN, 0xffc00000), Logf(NaN) = that NaN
// quieted; subnormal x are normalised first.
func Logf(x float32) float32 {
	ix := math.Float32bits(x)
	if ix == 0x3f800000 {
		return 0
	}
	if ix-0x00800000 >= 0x7f800000-0x00800000 {
		switch {
		case ix*2 == 0:
			return float32(math.Inf(-1))
		case ix == 0x7f800000:
			return x
		case ix&0x80000000 != 0 || ix*2 >= 0xff000000:
			return invalidf(ix)
		}
		ix = math.Float32bits(x * 0x1p23)
		ix -= 23 << 23
	}
	tmp := ix - logfOff
	i := (tmp >> (23 - 4)) % 16
	k := int32(tmp) >> 23
	iz := ix - tmp&0xff800000
	invc, logc := logfTab[i].invc, logfTab[i].logc
	z := float64(math.Float32frombits(iz))
	r := fma64(z, invc, -1)
	y0 := fma64(float64(k), logfLn2, logc)
	y := fma64(logfA1, r, logfA2)
	r2 := r * r
	t := r + y0
	y = fma64(logfA0, r2, y)
	return float32(fma64(r2, y, t))
}

// invalidf is glibc's __math_invalidf(x) = (x - x) / (x - x) on x86: the
// default NaN 0xffc00000 for a non-NaN x, the quieted NaN for a NaN.
func invalidf(ix uint32) float32 {
	if ix&0x7fffffff > 0x7f800000 {
		return math.Float32frombits(ix | 0x00400000)
	}
	return math.Float32frombits(0xffc00000)
}
