package fmath

import "math"

// FMA32 returns a*b+c rounded once to float32, as the x86 vfmadd*ss
// instruction computes it (IEEE 754 fusedMultiplyAdd, round to nearest even).
//
// The product of two float32 values is exact in float64; the sum is formed in
// float64 with its rounding error recovered (Knuth's TwoSum), rounded to odd, and
// then rounded to float32. Round-to-odd at 53 bits followed by rounding to
// 24 bits is a single correct rounding, so the result never suffers the double
// rounding of float32(math.FMA(...)).
func FMA32(a, b, c float32) float32 {
	p := float64(a) * float64(b) // exact: 24+24 bits fit in 53
	fc := float64(c)
	s := p + fc
	bits := math.Float64bits(s)
	exp := bits >> 52 & 0x7ff
	// Fast path: rounding s to float32 equals rounding the exact sum unless s
	// sits exactly on a float32 midpoint (low 29 mantissa bits 1000…0); the
	// float32 midpoints are doubles, so rounding to double never crosses one.
	// Results in float32's subnormal range take the slow path too.
	if exp == 0x7ff || exp >= 1023-126 && bits&(1<<29-1) != 1<<28 {
		return float32(s)
	}
	bb := s - p
	e := (p - (s - bb)) + (fc - bb)
	if e != 0 {
		if bits&1 == 0 {
			// Move to the odd neighbour that lies on the side of the exact value.
			if (e > 0) == (s > 0) {
				bits++
			} else {
				bits--
			}
			s = math.Float64frombits(bits)
		}
	}
	return float32(s)
}

// fma64 is a float64 fused multiply-add (rounded once), as vfmadd*sd.
func fma64(a, b, c float64) float64 { return math.FMA(a, b, c) }
