package fmath

import "math"

// logTableBits is log2 of the table size of glibc's logf (LOGF_TABLE_BITS).
const logTableBits = 4

// logTab holds glibc's __logf_data.tab (ARM optimized-routines logf_data.c):
// for the 16 subintervals of [0x1.66p-1, 0x1.66p0) that the top mantissa bits
// select, invc ≈ 1/c near the subinterval's centre and logc = log(c) in
// double. The values are copied from glibc (and were compared with the bytes
// of libm.so.6's .rodata); TestLogfMatchesLibmBitForBit compares results.
var logTab = [1 << logTableBits]struct{ invc, logc float64 }{
	{0x1.661ec79f8f3bep+0, -0x1.57bf7808caadep-2},
	{0x1.571ed4aaf883dp+0, -0x1.2bef0a7c06ddbp-2},
	{0x1.49539f0f010bp+0, -0x1.01eae7f513a67p-2},
	{0x1.3c995b0b80385p+0, -0x1.b31d8a68224e9p-3},
	{0x1.30d190c8864a5p+0, -0x1.6574f0ac07758p-3},
	{0x1.25e227b0b8eap+0, -0x1.1aa2bc79c81p-3},
	{0x1.1bb4a4a1a343fp+0, -0x1.a4e76ce8c0e5ep-4},
	{0x1.12358f08ae5bap+0, -0x1.1973c5a611cccp-4},
	{0x1.0953f419900a7p+0, -0x1.252f438e10c1ep-5},
	{0x1p+0, 0x0p+0},
	{0x1.e608cfd9a47acp-1, 0x1.aa5aa5df25984p-5},
	{0x1.ca4b31f026aap-1, 0x1.c5e53aa362eb4p-4},
	{0x1.b2036576afce6p-1, 0x1.526e57720db08p-3},
	{0x1.9c2d163a1aa2dp-1, 0x1.bc2860d22477p-3},
	{0x1.886e6037841edp-1, 0x1.1058bc8a07ee1p-2},
	{0x1.767dcf5534862p-1, 0x1.4043057b6ee09p-2},
}

// Constants of glibc's logf: ln 2, the polynomial A[0..2] for log1p(r) − r
// (evaluated as in Logf) and the offset that centres the table's range.
const (
	logLn2 = 0x1.62e42fefa39efp-1
	logA0  = -0x1.00ea348b88334p-2
	logA1  = 0x1.5575b0be00b6ap-2
	logA2  = -0x1.ffffef20a4123p-2
	logOff = 0x3f330000
)

// Logf returns the natural logarithm of x rounded to float32 exactly as the
// x86-64 FMA build of glibc 2.36's logf does (__logf_fma, the variant its
// ifunc selects on AVX2+FMA CPUs; the reference calls it for YaRN's corrections
// in ggml_rope_yarn_corr_dims, rope_yarn and llama_context's attention
// factor). As read from libm's disassembly, r = fma(z, invc, -1),
// y0 = fma(k, ln2, logc), y = fma(r, A1, A2), y = fma(r², A0, y) and the result
// is fma(r², y, y0 + r) rounded to float32.
//
// Special cases: Logf(1) = +0, Logf(±0) = -Inf, Logf(+Inf) = +Inf, Logf(x) =
// NaN for x < 0 or NaN (the quiet NaN glibc returns: the default NaN for a
// negative x, the quieted input for a NaN); subnormals are normalised first.
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
			if ix*2 > 0xff000000 { // NaN: quieted
				return math.Float32frombits(ix | 0x00400000)
			}
			return math.Float32frombits(0xffc00000) // (x-x)/(x-x): the default NaN
		}
		ix = math.Float32bits(x * 0x1p23)
		ix -= 23 << 23
	}
	tmp := ix - logOff
	i := (tmp >> (23 - logTableBits)) % (1 << logTableBits)
	k := int32(tmp) >> 23
	iz := ix - tmp&0xff800000
	invc, logc := logTab[i].invc, logTab[i].logc
	z := float64(math.Float32frombits(iz))
	r := fma64(z, invc, -1)
	y0 := fma64(float64(k), logLn2, logc)
	r2 := r * r
	y := fma64(r, logA1, logA2)
	y = fma64(r2, logA0, y)
	y = fma64(r2, y, y0+r)
	return float32(y)
}
