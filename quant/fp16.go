package quant

import "math"

// FP16ToFP32 converts an IEEE 754 binary16 value (ggml_fp16_t) to float32
// exactly, as F16C's vcvtph2ps does.
func FP16ToFP32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f && mant == 0:
		return math.Float32frombits(sign | 0x7f800000)
	case exp == 0x1f: // NaN: payload kept, quieted as vcvtph2ps does
		return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// FP32ToFP16 converts float32 to binary16 with round-to-nearest-even, as
// F16C's vcvtps2ph with imm8 = 0 (GGML_CPU_FP32_TO_FP16 on x86) does:
// overflow gives ±Inf, NaN stays NaN with its payload's top bits and the quiet
// bit set, and subnormal results are rounded correctly.
func FP32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign // rounds to zero (even below half the smallest subnormal)
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		r := m >> shift
		rem := m & (1<<shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, and up to Inf: both correct
	}
	return sign | uint16(r)
}

// FP32ToFP16Row converts x to f16 into dst (len(dst) >= len(x)), as
// ggml_cpu_fp32_to_fp16 does for a row.
func FP32ToFP16Row(x []float32, dst []uint16) {
	for i, v := range x {
		dst[i] = FP32ToFP16(v)
	}
}
