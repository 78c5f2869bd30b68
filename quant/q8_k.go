package quant

import (
	"encoding/binary"
	"math"
)

// Q8_K: ggml's K-quant activation format (ggml-common.h block_q8_K), the
// vec_dot_type of every K-quant and ternary weight format: 256 values per
// block as float32 d, int8 qs[256] and int16 bsums[16] (sums of 16 qs).
//
// Design record
//
//   - Follows: quantize_row_q8_K_ref and dequantize_row_q8_K
//     (ggml-quants.c). On x86 the haswell library's quantize_row_q8_K and
//     quantize_row_q8_K_generic are both a jmp to quantize_row_q8_K_ref in
//     libggml-base.so (objdump), which is compiled without FMA: the
//     quantizer has no float chain beyond one product per value and 1/iscale.
//   - Rounding: nearest_int adds 1.5*2^23 in float32 and reads the mantissa
//     bits (round half to even); reproduced bit for bit, product rounded
//     first.
//   - Deliberate differences: an all-zero block gets zeroed bsums where the
//     reference leaves them as they were (every dot scales them by d = 0).
//   - Determinism: each block is a pure function of its 256 inputs.

// QK_K is the number of weights in a K-quant super-block (Q2_K … Q6_K, Q8_K,
// TQ1_0, TQ2_0): ggml's QK_K.
const QK_K = 256

// BlockQ8_KSize is sizeof(block_q8_K): float32 d (4 bytes), int8 qs[256],
// int16 bsums[16] (bsums[j] = sum of qs[16j..16j+15]), 292 bytes.
const BlockQ8_KSize = 4 + QK_K + 2*QK_K/16

// Byte offsets inside a block_q8_K.
const (
	q8KOffQs    = 4
	q8KOffBsums = 4 + QK_K
)

// nearestIntK is ggml's nearest_int (ggml-quants.c): fval + 12582912.0f
// rounded to float32, then the low 23 bits of its encoding minus 0x400000,
// i.e. round half to even for |fval| <= 4194303 (and the same bit trick,
// whatever it gives, beyond). The conversion keeps Go from fusing a product
// passed as fval into the add: the reference rounds it first.
func nearestIntK(fval float32) int32 {
	val := float32(fval) + 12582912
	return int32(math.Float32bits(val)&0x007fffff) - 0x00400000
}

// QuantizeRowQ8_K is quantize_row_q8_K of the haswell variant, which on x86 is
// quantize_row_q8_K_ref (ggml-quants.c; also quantize_row_q8_K_generic): per
// super-block of 256, max = the first x of largest |x| (NaN skipped), iscale =
// -127/max, qs = min(127, nearest_int(iscale*x)), bsums = sums of 16, d =
// 1/iscale; an all-zero block stores d = 0 and qs = 0 (the reference leaves
// its bsums untouched; here they are zeroed, which no dot product can tell
// apart since they are scaled by d = 0). len(x) must be a multiple of QK_K;
// dst needs len(x)/256*292 bytes. Extra elements of x beyond the last whole
// block, and blocks dst has no room for, are ignored.
func QuantizeRowQ8_K(x []float32, dst []byte) {
	nb := min(len(x)/QK_K, len(dst)/BlockQ8_KSize)
	for b := range nb {
		quantizeBlockQ8_K((*[QK_K]float32)(x[b*QK_K:]), (*[BlockQ8_KSize]byte)(dst[b*BlockQ8_KSize:]))
	}
}

func quantizeBlockQ8_K(x *[QK_K]float32, out *[BlockQ8_KSize]byte) {
	maxv := firstAbsMaxK(x)
	if maxv == 0 {
		clear(out[:])
		return
	}
	iscale := -127 / maxv
	qs := (*[QK_K]byte)(out[q8KOffQs:])
	for g := range QK_K / 16 {
		var s int32
		for j := 16 * g; j < 16*g+16; j++ {
			// float32(...) keeps Go from fusing the product into the add:
			// nearest_int rounds the product first.
			q := min(127, nearestIntK(float32(iscale*x[j])))
			qs[j] = byte(int8(q))
			s += int32(int8(q))
		}
		binary.LittleEndian.PutUint16(out[q8KOffBsums+2*g:], uint16(int16(s)))
	}
	binary.LittleEndian.PutUint32(out[:], math.Float32bits(1/iscale))
}

// firstAbsMaxK is the max search of quantize_row_q8_K_ref: the first x of
// largest |x| (a NaN never compares greater, so NaNs are skipped), 0 when
// every x is zero.
func firstAbsMaxK(x *[QK_K]float32) float32 {
	var maxv, amax float32
	for _, v := range x {
		if ax := float32(math.Abs(float64(v))); ax > amax {
			amax, maxv = ax, v
		}
	}
	return maxv
}

// kBlocks clamps nb to the whole blocks both rows of a Q8_K-family dot hold
// (wsize-byte weight blocks, Q8_K activation blocks).
func kBlocks(w, a []byte, nb, wsize int) int {
	return max(0, min(nb, len(w)/wsize, len(a)/BlockQ8_KSize))
}

// DequantizeRowQ8_K is dequantize_row_q8_K (ggml-quants.c): y = d*qs per
// super-block. len(y) must be a multiple of QK_K and src must hold len(y)/256
// blocks; blocks beyond either are ignored.
func DequantizeRowQ8_K(src []byte, y []float32) {
	nb := min(len(y)/QK_K, len(src)/BlockQ8_KSize)
	for b := range nb {
		blk := src[b*BlockQ8_KSize:]
		d := math.Float32frombits(binary.LittleEndian.Uint32(blk))
		yb := y[b*QK_K : (b+1)*QK_K]
		for j, q := range blk[q8KOffQs : q8KOffQs+QK_K] {
			yb[j] = d * float32(int8(q))
		}
	}
}
