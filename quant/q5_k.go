package quant

import "github.com/bankml/bankml/fmath"

// Q5_K (ggml-common.h block_q5_K): as Q4_K with a fifth bit per weight. The
// design record of the Q4_K–Q6_K family is in q4_k.go.

// BlockQ5_KSize is sizeof(block_q5_K): f16 d, f16 dmin, 12 bytes of packed
// 6-bit scales and mins, 32 bytes of high bits qh, 128 bytes of low nibbles qs
// (176 bytes per 256 weights).
const BlockQ5_KSize = 2 + 2 + 12 + QK_K/8 + QK_K/2

// Byte offsets inside a block_q5_K.
const (
	q5KOffQh = 16
	q5KOffQs = 16 + QK_K/8
)

// q5KValues unpacks the 256 five-bit weights (0..31) of a Q5_K block in weight
// order: weight 64j+l (l < 32) is the low nibble of qs[32j+l] plus 16·bit 2j
// of qh[l]; weight 64j+32+l the high nibble plus 16·bit 2j+1.
func q5KValues(blk *[BlockQ5_KSize]byte, w *[QK_K]int8) {
	qh := (*[32]byte)(blk[q5KOffQh:])
	for j := range 4 {
		q := (*[32]byte)(blk[q5KOffQs+32*j:])
		lo := (*[32]int8)(w[64*j:])
		hi := (*[32]int8)(w[64*j+32:])
		for l, v := range q {
			h := qh[l] >> (2 * j)
			lo[l] = int8(v&0xf | (h&1)<<4)
			hi[l] = int8(v>>4 | (h&2)<<3)
		}
	}
}

// q5KLanes is q4KLanes for Q5_K, read straight from the block: the weights of
// chunk j are the nibbles of qs[32j..] plus 16·bits 2j, 2j+1 of qh.
func q5KLanes(blk *[BlockQ5_KSize]byte, qs *[QK_K]byte, sc *[8]int32, lanes *[8]int32) {
	qh := (*[32]byte)(blk[q5KOffQh:])
	for j := range 4 {
		qj := (*[32]byte)(blk[q5KOffQs+32*j:])
		al := (*[32]byte)(qs[64*j:])
		ah := (*[32]byte)(qs[64*j+32:])
		s0, s1 := sc[2*j], sc[2*j+1]
		sh := uint(2 * j)
		for m := range 8 {
			var lo, hi int32
			for b := 4 * m; b < 4*m+4; b++ {
				v, h := int32(qj[b]), int32(qh[b])>>sh
				lo += (v&15 | (h&1)<<4) * int32(int8(al[b]))
				hi += (v>>4 | (h&2)<<3) * int32(int8(ah[b]))
			}
			lanes[m] += s0*lo + s1*hi
		}
	}
}

// QuantizeRowQ5_KRef is quantize_row_q5_K_ref (ggml-quants.c; the CPU
// library's quantize_row_q5_K calls it): as QuantizeRowQ4_KRef with levels
// 0..31 (make_qkx2_quants with nmax 31, rmin -0.5, rdelta 0.1, 15 steps), the
// fifth bits going to qh. len(x) must be a multiple of 256; dst needs
// len(x)/256*176 bytes; whole blocks beyond either are not written.
func QuantizeRowQ5_KRef(x []float32, dst []byte) {
	nb := min(len(x)/QK_K, len(dst)/BlockQ5_KSize)
	var L [QK_K]uint8
	for b := range nb {
		blk := dst[b*BlockQ5_KSize : (b+1)*BlockQ5_KSize]
		k456QuantizeScalesMins(x[b*QK_K:(b+1)*QK_K], blk, 31, -0.5, 0.1, 15, &L)
		qh := blk[q5KOffQh : q5KOffQh+QK_K/8]
		clear(qh)
		ql := blk[q5KOffQs:]
		m1, m2 := uint8(1), uint8(2)
		for n := 0; n < QK_K; n += 64 {
			for j := range 32 {
				l1 := L[n+j]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				l2 := L[n+j+32]
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				ql[j] = l1 | l2<<4
			}
			m1 <<= 2
			m2 <<= 2
			ql = ql[32:]
		}
	}
}

// DequantizeRowQ5_K is dequantize_row_q5_K: per sub-block j of 32, y =
// (d·sc_j)·q − dmin·m_j, q = nibble + 16·high bit, the product rounded before
// the subtraction. len(y) must be a multiple of 256 and src must hold
// len(y)/256 blocks; blocks beyond either are ignored.
func DequantizeRowQ5_K(src []byte, y []float32) {
	nb := min(len(y)/QK_K, len(src)/BlockQ5_KSize)
	var sc, mn [8]int32
	for b := range nb {
		blk := (*[BlockQ5_KSize]byte)(src[b*BlockQ5_KSize:])
		yb := (*[QK_K]float32)(y[b*QK_K:])
		d := FP16ToFP32(k456LE16(blk[0:]))
		dmin := FP16ToFP32(k456LE16(blk[2:]))
		k456ScaleMin(blk[k456OffScales:], &sc, &mn)
		qh := (*[32]byte)(blk[q5KOffQh:])
		for j := range 4 {
			d1, m1 := d*float32(sc[2*j]), dmin*float32(mn[2*j])
			d2, m2 := d*float32(sc[2*j+1]), dmin*float32(mn[2*j+1])
			q := (*[32]byte)(blk[q5KOffQs+32*j:])
			y1 := (*[32]float32)(yb[64*j:])
			y2 := (*[32]float32)(yb[64*j+32:])
			sh := uint(2 * j)
			for l, v := range q {
				h := qh[l] >> sh
				y1[l] = float32(d1*float32(v&15|(h&1)<<4)) - m1
				y2[l] = float32(d2*float32(v>>4|(h&2)<<3)) - m2
			}
		}
	}
}

// VecDotQ5_KQ8_K is ggml_vec_dot_q5_K_q8_K of the haswell variant: w holds nb
// Q5_K blocks, a nb Q8_K blocks. The scaled weight products in eight lanes as
// VecDotQ4_KQ8_K, acc = fma(da·dw, lane, acc); the mins summed to one integer
// per block and folded into a scalar, summs = fma(−da·dwmin, float(isum),
// summs) (GCC contracted the source's summs += dmin*isum); result
// hsum_float_8(acc) + summs. nb is clamped to the blocks w and a hold.
func VecDotQ5_KQ8_K(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockQ5_KSize)
	var acc [8]float32
	var summs float32
	var sc, mn [8]int32
	var bs32 [8]int32
	for b := range nb {
		wb := (*[BlockQ5_KSize]byte)(w[b*BlockQ5_KSize:])
		ab := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		da, qs := k456Q8(ab)
		d := da * FP16ToFP32(k456LE16(wb[0:]))
		dmin := -da * FP16ToFP32(k456LE16(wb[2:]))
		k456ScaleMin(wb[k456OffScales:], &sc, &mn)
		k456MinPairs(ab, &bs32)
		var isum int32
		for k := range 8 {
			isum += mn[k] * bs32[k]
		}
		summs = fmath.FMA32(dmin, float32(isum), summs)
		var lanes [8]int32
		q5KLanes(wb, qs, &sc, &lanes)
		for m := range 8 {
			acc[m] = fmath.FMA32(d, float32(lanes[m]), acc[m])
		}
	}
	return hsum8(&acc) + summs
}

// VecDotQ5_KQ8_KGeneric is ggml_vec_dot_q5_K_q8_K_generic as compiled in the
// haswell library: the order of VecDotQ4_KQ8_KGeneric on five-bit weights.
// nb is clamped to the blocks w and a hold.
func VecDotQ5_KQ8_KGeneric(w, a []byte, nb int) float32 {
	return k456GenericScaleMinDot(w, a, nb, BlockQ5_KSize, func(wb []byte, vals *[QK_K]int8) {
		q5KValues((*[BlockQ5_KSize]byte)(wb), vals)
	})
}
