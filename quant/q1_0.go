package quant

import (
	"encoding/binary"
	"math"

	"github.com/bankml/bankml/fmath"
)

// Q1_0: ggml's 1-bit format (ggml-common.h block_q1_0). A block holds 128
// weights: f16 d, then 16 bytes of sign bits, weight j in bit j%8 of byte
// j/8 (least significant bit first); a set bit is +d, a clear bit -d.
//
// Design record
//
//   - Follows: quantize_row_q1_0_ref and dequantize_row_q1_0 (ggml-quants.c),
//     ggml_vec_dot_q1_0_q8_0 of arch/x86/quants.c (its __AVX2__ branch) as
//     compiled in libggml-cpu-haswell.so of the reference (read with objdump:
//     vmulps for the first Q8_0 sub-block, vfmadd for the other three and
//     for the block scale, then hsum_float_8). Only the block-scale fusion
//     shows in the result: the sub-block products lane*dy are exact in
//     float32 (see VecDotQ1_0Q8_0), so there fused and unfused agree.
//   - The matmul path (ggml_compute_forward_mul_mat, AVX2): type_traits_cpu
//     gives vec_dot_type Q8_0 and nrows 1; llamafile_sgemm has no Q1_0 case
//     (its switch falls to default: false) and the repack selector
//     (ggml_repack_get_optimal_repack_type) offers q1_0_4x4/4x8 only under
//     NEON, so on x86 every output, for one activation column or many, is
//     one ggml_vec_dot_q1_0_q8_0 call on the plain layout: VecDotQ1_0Q8_0.
//   - Deliberate differences: none in the float chain; the integer lane sums
//     are formed in any order (they are exact). At AVX-512 a block whose
//     four Q8_0 scales keep every partial sum of the chain exact
//     (q1IntScales, in every column of the tile's batch) has that chain
//     computed in integers: the same bits.
//   - Determinism: a pure function of one weight row and one activation row.

// QK1_0 is the number of weights in a Q1_0 block.
const QK1_0 = 128

// BlockQ1_0Size is sizeof(block_q1_0): f16 d and 16 bytes of sign bits.
const BlockQ1_0Size = 2 + QK1_0/8

// QuantizeRowQ1_0 is quantize_row_q1_0_ref (and the CPU library's
// quantize_row_q1_0): per block of 128, d = (Σ|x|, summed in order from
// +0)/128 stored as f16 (a NaN as 0x7e00 with its sign), bit j set when x[j] >= 0 (so -0 sets it and NaN
// clears it). len(x) must be a multiple of 128; dst needs len(x)/128*18 bytes.
func QuantizeRowQ1_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/QK1_0; b++ {
		xb := x[b*QK1_0 : (b+1)*QK1_0]
		out := dst[b*BlockQ1_0Size : (b+1)*BlockQ1_0Size]
		var sum float32
		for _, v := range xb {
			sum += float32(math.Abs(float64(v)))
		}
		binary.LittleEndian.PutUint16(out, softFP32ToFP16(sum/QK1_0))
		for i := range QK1_0 / 8 {
			var q byte
			for j := range 8 {
				if xb[8*i+j] >= 0 {
					q |= 1 << j
				}
			}
			out[2+i] = q
		}
	}
}

// DequantizeRowQ1_0 is dequantize_row_q1_0: y = d for a set bit, -d (d with
// its sign flipped) for a clear one.
func DequantizeRowQ1_0(src []byte, y []float32) {
	for b := 0; b < len(y)/QK1_0; b++ {
		blk := src[b*BlockQ1_0Size:]
		d := FP16ToFP32(binary.LittleEndian.Uint16(blk))
		yb := y[b*QK1_0 : (b+1)*QK1_0]
		for i := range QK1_0 / 8 {
			q := blk[2+i]
			for j := range 8 {
				if q>>j&1 != 0 {
					yb[8*i+j] = d
				} else {
					yb[8*i+j] = -d
				}
			}
		}
	}
}

// q1ByteMask[b] has byte i set to 0xff where bit i of b is set.
var q1ByteMask = func() (t [256]uint64) {
	for b := range 256 {
		for i := range 8 {
			if b>>i&1 != 0 {
				t[b] |= 0xff << (8 * i)
			}
		}
	}
	return t
}()

const (
	swarBytes01 = 0x0101010101010101
	swarBytes80 = 0x8080808080808080
	swarLo8     = 0x00ff00ff00ff00ff
	swarLo16    = 0x0000ffff0000ffff
)

// sum4Bytes adds the unsigned bytes of v in groups of four: the sum of
// bytes 0..3 in bits 0..31 of the result, of bytes 4..7 in bits 32..63.
func sum4Bytes(v uint64) uint64 {
	t := v&swarLo8 + v>>8&swarLo8
	return t&swarLo16 + t>>16&swarLo16
}

// q1LaneSums computes the eight int32 lanes the AVX2 kernel forms for one
// Q8_0 sub-block: the 32 activations qs with their sign flipped where the
// corresponding bit of bits (LSB first) is clear — in int8 arithmetic, as
// vpxor/vpsubb do, so -128 stays -128 — then lane j = sum of values
// 4j..4j+3 (vpmaddubsw with ones, vpmaddwd with ones; no saturation is
// possible). Eight bytes at a time: with u = q+128 (q xor 0x80) and c the
// set bits of a lane, lane = Σset q - Σclear q = Σset u - Σclear u - 256c + 512.
func q1LaneSums(bits uint32, qs []byte, out *[8]int32) {
	qs = qs[:32]
	for w := range 4 {
		u := binary.LittleEndian.Uint64(qs[8*w:]) ^ swarBytes80
		b := byte(bits >> (8 * w))
		m := q1ByteMask[b]
		if v := u | m; (v-swarBytes01)&^v&swarBytes80 != 0 {
			// A -128 under a clear bit: negation wraps. Rare (quantize_row_q8_0
			// never makes -128), so take it byte by byte.
			for j := 2 * w; j < 2*w+2; j++ {
				var s int32
				for i := 4 * j; i < 4*j+4; i++ {
					m := int8(bits>>i&1) - 1 // 0 for a set bit, -1 for a clear one
					s += int32((int8(qs[i]) ^ m) - m)
				}
				out[j] = s
			}
			continue
		}
		set, clr := sum4Bytes(u&m), sum4Bytes(u&^m)
		c0, c1 := int32(bits8Ones[b&0xf]), int32(bits8Ones[b>>4])
		out[2*w] = int32(uint32(set)) - int32(uint32(clr)) - 256*c0 + 512
		out[2*w+1] = int32(set>>32) - int32(clr>>32) - 256*c1 + 512
	}
}

// bits8Ones[n] is the number of set bits of the nibble n.
var bits8Ones = [16]uint8{0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4}

// VecDotQ1_0Q8_0 is ggml_vec_dot_q1_0_q8_0 of the haswell variant: w holds
// nb Q1_0 blocks, a the 4*nb Q8_0 blocks of the activation row. Per Q1_0
// block, eight lanes blk[j] = dy0*lane0[j], then
// blk[j] = fma(lane_K[j], dy_K, blk[j]) for the Q8_0 sub-blocks K = 1..3,
// then acc[j] = fma(d, blk[j], acc[j]); the result is hsum_float_8(acc).
func VecDotQ1_0Q8_0(w, a []byte, nb int) float32 {
	var acc [8]float32
	var ls [8]int32
	for b := range nb {
		wb := w[b*BlockQ1_0Size : (b+1)*BlockQ1_0Size]
		d0 := FP16ToFP32(binary.LittleEndian.Uint16(wb))
		var blk [8]float32
		for k := range 4 {
			ab := a[(4*b+k)*BlockQ8_0Size : (4*b+k+1)*BlockQ8_0Size]
			dy := FP16ToFP32(binary.LittleEndian.Uint16(ab))
			q1LaneSums(binary.LittleEndian.Uint32(wb[2+4*k:]), ab[2:], &ls)
			if k == 0 {
				for j := range 8 {
					blk[j] = dy * float32(ls[j])
				}
				continue
			}
			// The kernel fuses these (vfmadd), but |lane| <= 512 has at most
			// 10 significant bits and dy, an f16 value, 11: the product is
			// exact in float32, so fused or not the sum rounds once.
			for j := range 8 {
				blk[j] += float32(ls[j]) * dy
			}
		}
		for j := range 8 {
			acc[j] = fmath.FMA32(d0, blk[j], acc[j])
		}
	}
	return hsum8(&acc)
}

// q1IntScales reports whether one Q1_0 block's product with a column may
// run in the integer form (tileQ1_0I4AVX512), and its operands. dy holds
// the block's four Q8_0 scales (f16 values as float32). Write each non-zero
// dy_k = s_k*2^u_k with s_k an integer (at most 11 bits), e the least u_k,
// m_k = s_k*2^(u_k-e) (0 for a zero scale), divided by their common power
// of two (e raised by it). When Σ m_k <= 32767, every partial sum of the
// reference's chain blk = float(L_0)*dy_0, blk = fma(float(L_k), dy_k, blk)
// (VecDotQ1_0Q8_0) is an integer times 2^e of magnitude at most
// 512*32767 < 2^24, so exact in float32: blk = float32(S)*2^e with
// S = Σ L_k*m_k, and the reference's acc = fma(d, blk, acc) is
// fma(d*2^e, float32(S), acc) (the same real product; d*2^e is exact, e
// between -34 and 15). A zero S is +0 where the reference's blk may be -0
// (all L_k < 0 under zero scales); fma(d, ±0, acc) agrees because acc,
// starting at +0, is never -0 under round to nearest. Then ok, m the four
// m_k and scale 2^e. A negative, negative-zero, infinite or NaN scale is
// not ok (kept out rather than argued: Q8_0 scales are amax/127 >= +0),
// nor a span too wide for the sum.
func q1IntScales(dy *[4]float32) (m [4]uint16, scale float32, ok bool) {
	var s [4]uint32
	var u [4]int
	e, any := 0, false
	for k, v := range dy {
		if v < 0 || math.Signbit(float64(v)) || math.IsInf(float64(v), 0) || v != v {
			return m, 0, false
		}
		if v == 0 {
			continue
		}
		fr, ex := math.Frexp(float64(v))
		sig := fr * 2048
		if sig != math.Trunc(sig) {
			return m, 0, false // not an f16 value
		}
		s[k], u[k] = uint32(sig), ex-11
		if !any || u[k] < e {
			e = u[k]
		}
		any = true
	}
	if !any {
		return m, 1, true // S = 0: see the zero case above
	}
	var mk [4]uint32
	var or uint32
	for k := range 4 {
		if s[k] == 0 {
			continue
		}
		sh := u[k] - e
		if sh > 15 {
			return m, 0, false
		}
		mk[k] = s[k] << sh
		or |= mk[k]
	}
	for or&1 == 0 {
		or >>= 1
		e++
		for k := range mk {
			mk[k] >>= 1
		}
	}
	if mk[0]+mk[1]+mk[2]+mk[3] > 32767 {
		return m, 0, false
	}
	for k := range 4 {
		m[k] = uint16(mk[k])
	}
	return m, float32(math.Ldexp(1, e)), true
}
