package quant

import (
	"encoding/binary"

	"github.com/bankml/bankml/fmath"
)

// BlockQ4_1Size is sizeof(block_q4_1): f16 d, f16 m, then 16 bytes of
// nibbles (element i < 16 in the low nibble of qs[i], element i+16 in its
// high nibble); weight = nibble*d + m. 20 bytes per 32 weights.
const BlockQ4_1Size = 4 + QK8_0/2

// DequantizeRowQ4_1 is dequantize_row_q4_1 (libggml-base.so): y =
// float(nibble)*d + m per block, the product and the sum rounded separately
// (the library has no FMA). len(y) should be a multiple of 32; src holds
// len(y)/32 blocks of 20 bytes. Blocks missing from src are not written.
func DequantizeRowQ4_1(src []byte, y []float32) {
	nb := min(len(y)/QK8_0, len(src)/BlockQ4_1Size)
	f16 := legacyF16Table()
	for b := range nb {
		blk := src[b*BlockQ4_1Size : (b+1)*BlockQ4_1Size]
		d := f16[binary.LittleEndian.Uint16(blk[0:])]
		m := f16[binary.LittleEndian.Uint16(blk[2:])]
		yb := y[b*QK8_0 : (b+1)*QK8_0]
		for i := range 16 {
			q := blk[4+i]
			yb[i] = float32(float32(q&0xf)*d) + m
			yb[i+16] = float32(float32(q>>4)*d) + m
		}
	}
}

// QuantizeRowQ4_1Ref is quantize_row_q4_1_ref (libggml-base.so; also the CPU
// library's quantize_row_q4_1): per block of 32, min and max of x (NaNs
// skipped; an all-NaN block keeps min = FLT_MAX, max = -FLT_MAX), d =
// (max-min)/15, id = 1/d (0 when d is 0), d and min stored as f16 (software
// conversion), then q = MIN(15, (int8)((x-min)*id + 0.5)) with every
// operation rounded separately and the cast truncating through cvttss2si.
// len(x) should be a multiple of 32; dst needs len(x)/32*20 bytes.
func QuantizeRowQ4_1Ref(x []float32, dst []byte) {
	nb := min(len(x)/QK8_0, len(dst)/BlockQ4_1Size)
	for b := range nb {
		xb := x[b*QK8_0 : (b+1)*QK8_0]
		out := dst[b*BlockQ4_1Size : (b+1)*BlockQ4_1Size]
		lo, id := legacyMinMaxHeader(xb, out, 15)
		for j := range 16 {
			q0 := uint8(min(15, int8(cvttss2si(float32((xb[j]-lo)*id)+0.5))))
			q1 := uint8(min(15, int8(cvttss2si(float32((xb[j+16]-lo)*id)+0.5))))
			out[4+j] = q0 | q1<<4
		}
	}
}

// q4_1LaneSums computes the eight int32 lanes of the haswell kernel's
// mul_sum_us8_pairs_float(bytes_from_nibbles_32(qs), y): lane j sums the
// products of elements 4j..4j+3 (low nibbles for lanes 0..3, high nibbles
// for 4..7). Exact: no vpmaddubsw pair can saturate (15·128·2 < 32767).
func q4_1LaneSums(qs, y []byte, ls *[8]int32) {
	qs = qs[:16]
	var yf [8]uint64
	legacyActFields(y, &yf)
	for j := range 4 {
		q := binary.LittleEndian.Uint32(qs[4*j:])
		ls[j] = legacyLane4(legacyWeightField(q&0x0f0f0f0f, 0), yf[j])
		ls[4+j] = legacyLane4(legacyWeightField(q>>4&0x0f0f0f0f, 0), yf[4+j])
	}
}

// VecDotQ4_1Q8_1 is ggml_vec_dot_q4_1_q8_1 of the haswell variant (the only
// path mul_mat takes for Q4_1 on AVX2: no tinyBLAS, no repack): per block
// summs = fma(m_w, s_a, summs) (the compiled contraction of summs += m*s),
// d = d_w*d_a, eight lanes acc[j] = fma(d, lane sum j, acc[j]); the result is
// hsum(acc) + summs. w holds nb Q4_1 blocks, a nb Q8_1 blocks; blocks beyond
// either slice are not read.
func VecDotQ4_1Q8_1(w, a []byte, nb int) float32 {
	nb = min(nb, len(w)/BlockQ4_1Size, len(a)/BlockQ8_1Size)
	f16 := legacyF16Table()
	var acc [8]float32
	var ls [8]int32
	var summs float32
	for b := range nb {
		wb := w[b*BlockQ4_1Size : (b+1)*BlockQ4_1Size]
		ab := a[b*BlockQ8_1Size : (b+1)*BlockQ8_1Size]
		summs = fmath.FMA32(f16[binary.LittleEndian.Uint16(wb[2:])], f16[binary.LittleEndian.Uint16(ab[2:])], summs)
		d := f16[binary.LittleEndian.Uint16(wb)] * f16[binary.LittleEndian.Uint16(ab)]
		q4_1LaneSums(wb[4:], ab[4:], &ls)
		legacyFMA8(d, &ls, &acc)
	}
	return hsum8(&acc) + summs
}

// VecDotQ4_1Q8_1Generic is ggml_vec_dot_q4_1_q8_1_generic as compiled in the
// haswell library: per block the exact integer dot product sumi, then sumf
// += fma(d_w*d_a, float(sumi), m_w*s_a) with both products rounded. w holds
// nb Q4_1 blocks, a nb Q8_1 blocks.
func VecDotQ4_1Q8_1Generic(w, a []byte, nb int) float32 {
	nb = min(nb, len(w)/BlockQ4_1Size, len(a)/BlockQ8_1Size)
	f16 := legacyF16Table()
	var sumf float32
	var ls [8]int32
	for b := range nb {
		wb := w[b*BlockQ4_1Size : (b+1)*BlockQ4_1Size]
		ab := a[b*BlockQ8_1Size : (b+1)*BlockQ8_1Size]
		q4_1LaneSums(wb[4:], ab[4:], &ls)
		sumi := ls[0] + ls[1] + ls[2] + ls[3] + ls[4] + ls[5] + ls[6] + ls[7]
		d := f16[binary.LittleEndian.Uint16(wb)] * f16[binary.LittleEndian.Uint16(ab)]
		ms := f16[binary.LittleEndian.Uint16(wb[2:])] * f16[binary.LittleEndian.Uint16(ab[2:])]
		sumf += fmath.FMA32(d, float32(sumi), ms)
	}
	return sumf
}
