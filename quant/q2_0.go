package quant

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/bankml/bankml/fmath"
)

// Q2_0: ggml's 2-bit format, group 64 (ggml-common.h block_q2_0). A block
// holds 64 weights: f16 d, then 16 bytes of 2-bit codes, weight j in bits
// 2*(j%4)..2*(j%4)+1 of byte j/4 (lowest bits first); code c is the weight
// (c-1)*d, so 0, 1, 2, 3 stand for -d, 0, +d, +2d.
//
// Design record
//
//   - Follows: quantize_row_q2_0_ref and dequantize_row_q2_0 (ggml-quants.c),
//     and ggml_vec_dot_q2_0_q8_0, which on x86 is the generic C loop of
//     ggml-cpu/quants.c (arch-fallback.h renames it; no variant has SIMD for
//     it), as GCC compiled it in libggml-cpu-haswell.so (read with objdump):
//     per Q2_0 block the two Q8_0 sub-blocks' integer sums are converted
//     (vcvtsi2ss) and accumulated with vfmadd231ss into a block sum that
//     starts at +0, and the block sum enters the row sum with one more
//     vfmadd231ss by d. The x64 variant (no FMA) rounds each product and sum
//     separately; it is a different result, not the target.
//   - The matmul path (ggml_compute_forward_mul_mat, AVX2): vec_dot_type
//     Q8_0, nrows 1; llamafile_sgemm has no Q2_0 case and the repack
//     selector has no Q2_0 branch, so every output, for one activation
//     column or many, is one ggml_vec_dot_q2_0_q8_0 call: VecDotQ2_0Q8_0.
//   - Deliberate differences: none in the float chain; integer sums in any
//     order (exact).
//   - Determinism: a pure function of one weight row and one activation row.

// QK2_0 is the number of weights in a Q2_0 block.
const QK2_0 = 64

// BlockQ2_0Size is sizeof(block_q2_0): f16 d and 16 bytes of 2-bit codes.
const BlockQ2_0Size = 2 + QK2_0/4

// QuantizeRowQ2_0 is quantize_row_q2_0_ref (and the CPU library's
// quantize_row_q2_0): per block of 64, d = max |x| (NaNs skipped) stored as
// f16, id = 1/d (0 when d is 0), code = clamp((int)roundf(x*id) + 1, 0, 3)
// with roundf rounding halves away from zero and (int) being cvttss2si — so
// a NaN or infinite x*id (an infinite x, or a subnormal d whose reciprocal
// overflows) gives code 0. len(x) must be a multiple of 64; dst needs
// len(x)/64*18 bytes.
func QuantizeRowQ2_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/QK2_0; b++ {
		xb := x[b*QK2_0 : (b+1)*QK2_0]
		out := dst[b*BlockQ2_0Size : (b+1)*BlockQ2_0Size]
		var amax float32
		for _, v := range xb {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax = a
			}
		}
		var id float32
		if amax > 0 {
			id = 1 / amax
		}
		binary.LittleEndian.PutUint16(out, softFP32ToFP16(amax))
		for i := range QK2_0 / 4 {
			var q byte
			for j := range 4 {
				c := cvttss2si(float32(math.Round(float64(xb[4*i+j]*id)))) + 1
				c = max(0, min(3, c))
				q |= byte(c) << (2 * j)
			}
			out[2+i] = q
		}
	}
}

// DequantizeRowQ2_0 is dequantize_row_q2_0: y = float(code-1)*d, so a zero
// code times a negative d is -0.
func DequantizeRowQ2_0(src []byte, y []float32) {
	for b := 0; b < len(y)/QK2_0; b++ {
		blk := src[b*BlockQ2_0Size:]
		d := FP16ToFP32(binary.LittleEndian.Uint16(blk))
		yb := y[b*QK2_0 : (b+1)*QK2_0]
		for i := range QK2_0 / 4 {
			q := blk[2+i]
			for j := range 4 {
				yb[4*i+j] = float32(int32(q>>(2*j)&3)-1) * d
			}
		}
	}
}

// q2CodeMasks[c] holds, for the four 2-bit codes of byte c, byte masks
// (0xff) in bytes 0..3 where a code's low bit is set and in bytes 4..7
// where its high bit is set.
var q2CodeMasks = func() (t [256]uint64) {
	for c := range 256 {
		for i := range 4 {
			if c>>(2*i)&1 != 0 {
				t[c] |= 0xff << (8 * i)
			}
			if c>>(2*i+1)&1 != 0 {
				t[c] |= 0xff << (8 * (i + 4))
			}
		}
	}
	return t
}()

// q2SubSum is the exact integer dot product of 32 Q2_0 weights (8 bytes of
// codes) with one Q8_0 block's 32 activations: Σ(c-1)q = Σlow q + 2Σhigh q
// - Σq, each Σ over the biased bytes u = q+128 (q xor 0x80) in SWAR, the
// bias taken back out with the bit counts.
func q2SubSum(codes, qs []byte) int32 {
	codes, qs = codes[:8], qs[:32]
	var lo, hi, all uint64 // 16-bit lanes, each at most 4*2*255
	for w := range 4 {
		u := binary.LittleEndian.Uint64(qs[8*w:]) ^ swarBytes80
		m0, m1 := q2CodeMasks[codes[2*w]], q2CodeMasks[codes[2*w+1]]
		ml := m0&0xffffffff | m1<<32
		mh := m0>>32 | m1&^0xffffffff
		lo += u&ml&swarLo8 + u&ml>>8&swarLo8
		hi += u&mh&swarLo8 + u&mh>>8&swarLo8
		all += u&swarLo8 + u>>8&swarLo8
	}
	const ones16 = 0x0001000100010001
	slo, shi, sall := int32(lo*ones16>>48), int32(hi*ones16>>48), int32(all*ones16>>48)
	c := binary.LittleEndian.Uint64(codes)
	nlo := int32(bits.OnesCount64(c & 0x5555555555555555))
	nhi := int32(bits.OnesCount64(c & 0xaaaaaaaaaaaaaaaa))
	return (slo - 128*nlo) + 2*(shi-128*nhi) - (sall - 128*32)
}

// VecDotQ2_0Q8_0 is ggml_vec_dot_q2_0_q8_0 of the haswell variant: w holds
// nb Q2_0 blocks, a the 2*nb Q8_0 blocks of the activation row. The compiled
// chain per block is s = fma(float(isum0), dy0, +0), s = fma(float(isum1),
// dy1, s), then sumf = fma(s, d, sumf) from sumf = +0. Only the last fusion
// shows: |isum| <= 32*2*128 = 8192 has at most 13 significant bits and dy,
// an f16 value, 11, so float(isum)*dy is exact in float32 and s is the
// exact sum of the two products rounded once (its sign of zero cannot
// matter: sumf is never -0, so fma(±0, d, sumf) = sumf).
func VecDotQ2_0Q8_0(w, a []byte, nb int) float32 {
	var sumf float32
	for b := range nb {
		wb := w[b*BlockQ2_0Size : (b+1)*BlockQ2_0Size]
		a0 := a[2*b*BlockQ8_0Size : (2*b+1)*BlockQ8_0Size]
		a1 := a[(2*b+1)*BlockQ8_0Size : (2*b+2)*BlockQ8_0Size]
		p0 := float32(q2SubSum(wb[2:10], a0[2:])) * FP16ToFP32(binary.LittleEndian.Uint16(a0))
		p1 := float32(q2SubSum(wb[10:18], a1[2:])) * FP16ToFP32(binary.LittleEndian.Uint16(a1))
		sumf = fmath.FMA32(p0+p1, FP16ToFP32(binary.LittleEndian.Uint16(wb)), sumf)
	}
	return sumf
}
