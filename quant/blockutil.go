package quant

import (
	"encoding/binary"
	"math"
)

// Helpers shared by several format families (q1_0.go, q2_0.go, q4_1.go,
// q5.go, q8_1.go): scalar conversions as the reference's compiled code does
// them and block headers written the same way by more than one quantizer.

// softFP32ToFP16 is the software ggml_compute_fp32_to_fp16 (GGML_FP32_TO_FP16
// of libggml-base.so, which the _ref quantizers call, and
// GGML_CPU_FP32_TO_FP16 of the haswell library's quantize_row_q8_1): as
// FP32ToFP16, except that every NaN becomes the quiet NaN 0x7e00 with its
// sign (FP32ToFP16 keeps the payload's top bits, as vcvtps2ph does).
func softFP32ToFP16(f float32) uint16 {
	if f != f {
		return uint16(math.Float32bits(f)>>16)&0x8000 | 0x7e00
	}
	return FP32ToFP16(f)
}

// cvttss2si is x86's truncating float-to-int32 conversion: truncation toward
// zero, with NaN and values outside int32's range giving math.MinInt32 (the
// "integer indefinite").
func cvttss2si(f float32) int32 {
	if f >= -2147483648 && f < 2147483648 {
		return int32(f)
	}
	return math.MinInt32
}

// legacyMinMaxHeader is the common head of quantize_row_q4_1_ref and
// quantize_row_q5_1_ref for one block: min and max of xb (NaNs skipped; an
// all-NaN block keeps min = FLT_MAX, max = -FLT_MAX), d = (max-min)/levels,
// id = 1/d (0 when d is 0), d and min stored as f16 (software conversion) in
// out[0:2] and out[2:4]. It returns min and id.
func legacyMinMaxHeader(xb []float32, out []byte, levels float32) (lo, id float32) {
	lo, hi := float32(math.MaxFloat32), float32(-math.MaxFloat32)
	for _, v := range xb {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	d := (hi - lo) / levels
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(out[0:], softFP32ToFP16(d))
	binary.LittleEndian.PutUint16(out[2:], softFP32ToFP16(lo))
	return lo, id
}

// absBits is |f| by clearing the sign bit (vandnps with -0.0, the fabsf of
// the compiled code), NaNs included.
func absBits(f float32) float32 {
	return math.Float32frombits(math.Float32bits(f) &^ (1 << 31))
}
