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
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	bb := s - p
	e := (p - (s - bb)) + (fc - bb)
	if e != 0 {
		bits := math.Float64bits(s)
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
