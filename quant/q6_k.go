package quant

import (
	"encoding/binary"

	"github.com/bankml/bankml/fmath"
)

// Q6_K (ggml-common.h block_q6_K): 256 six-bit weights per super-block in 16
// sub-blocks of 16 with int8 scales, weight = d·sc·(q−32). The design record
// of the Q4_K–Q6_K family is in q4_k.go.

// BlockQ6_KSize is sizeof(block_q6_K): 128 bytes of low nibbles ql, 64 bytes
// of high bit pairs qh, 16 int8 scales, f16 d (210 bytes per 256 weights).
const BlockQ6_KSize = QK_K/2 + QK_K/4 + QK_K/16 + 2

// Byte offsets inside a block_q6_K.
const (
	q6KOffQh     = QK_K / 2
	q6KOffScales = QK_K/2 + QK_K/4
	q6KOffD      = QK_K/2 + QK_K/4 + QK_K/16
)

// q6KValues unpacks the 256 six-bit weights of a Q6_K block, unsigned
// (0..63, the stored code; the weight is code−32), in weight order.
func q6KValues(blk *[BlockQ6_KSize]byte, w *[QK_K]int8) {
	for n := range 2 {
		ql := (*[64]byte)(blk[64*n:])
		qh := (*[32]byte)(blk[q6KOffQh+32*n:])
		o := (*[128]int8)(w[128*n:])
		for l := range 32 {
			h := qh[l]
			o[l] = int8(ql[l]&0xf | (h&3)<<4)
			o[l+32] = int8(ql[l+32]&0xf | (h>>2&3)<<4)
			o[l+64] = int8(ql[l]>>4 | (h>>4&3)<<4)
			o[l+96] = int8(ql[l+32]>>4 | (h>>6&3)<<4)
		}
	}
}

// q6KMakeQX is make_qx_quants (ggml-quants.c) with rmse_type 1 and no
// quant_weights, as quantize_row_q6_K_ref calls it: the scale of n values by a
// weighted (w = x²) least-squares search over 19 candidate inverse scales;
// L receives the levels l+nmax (0..2·nmax−1). Products are rounded before
// they are added (libggml-base.so has no FMA).
func q6KMakeQX(x []float32, nmax int32, L []int8) float32 {
	n := len(x)
	var mx, amax float32
	for _, v := range x {
		if ax := absBits(v); ax > amax {
			amax, mx = ax, v
		}
	}
	if amax < k456GroupMaxEps {
		clear(L[:n])
		return 0
	}
	fnmax := float32(nmax)
	iscale := -fnmax / mx
	var sumlx, suml2 float32
	for i, v := range x {
		l := max(-nmax, min(nmax-1, nearestIntK(float32(iscale*v))))
		L[i] = int8(l + nmax)
		w := float32(v * v)
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	const tenth float32 = 0.1
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(tenth*float32(is))) / mx
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := max(-nmax, min(nmax-1, nearestIntK(float32(iscale*v))))
			w := float32(v * v)
			fl := float32(l)
			sumlx += float32(float32(w*v) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				l := nearestIntK(float32(iscale * v))
				L[i] = int8(nmax + max(-nmax, min(nmax-1, l)))
			}
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	return scale
}

// QuantizeRowQ6_KRef is quantize_row_q6_K_ref (ggml-quants.c; the CPU
// library's quantize_row_q6_K calls it): per sub-block of 16 make_qx_quants
// (nmax 32, rmse_type 1); the scale of largest magnitude gives iscale =
// −128/max_scale, d = f16(1/iscale), int8 scales min(127,
// nearest_int(iscale·scale)); levels recomputed as clamp(nearest_int(x/(d·sc)),
// −32, 31)+32. A super-block whose scales are all below 1e-15 is stored as
// zeros. len(x) must be a multiple of 256; dst needs len(x)/256*210 bytes;
// whole blocks beyond either are not written.
func QuantizeRowQ6_KRef(x []float32, dst []byte) {
	nb := min(len(x)/QK_K, len(dst)/BlockQ6_KSize)
	var L [QK_K]int8
	var scales [QK_K / 16]float32
	for b := range nb {
		xb := x[b*QK_K : (b+1)*QK_K]
		blk := (*[BlockQ6_KSize]byte)(dst[b*BlockQ6_KSize:])
		var maxScale, maxAbsScale float32
		for ib := range QK_K / 16 {
			scale := q6KMakeQX(xb[16*ib:16*ib+16], 32, L[16*ib:16*ib+16])
			scales[ib] = scale
			if as := absBits(scale); as > maxAbsScale {
				maxAbsScale, maxScale = as, scale
			}
		}
		if maxAbsScale < k456GroupMaxEps {
			clear(blk[:])
			continue
		}
		iscale := -128 / maxScale
		binary.LittleEndian.PutUint16(blk[q6KOffD:], FP32ToFP16(1/iscale))
		sc := blk[q6KOffScales : q6KOffScales+QK_K/16]
		for ib := range QK_K / 16 {
			sc[ib] = byte(int8(min(127, nearestIntK(float32(iscale*scales[ib])))))
		}
		dAll := FP16ToFP32(k456LE16(blk[q6KOffD:]))
		for j := range QK_K / 16 {
			d := dAll * float32(int8(sc[j]))
			if d == 0 {
				continue
			}
			for ii := range 16 {
				l := nearestIntK(xb[16*j+ii] / d)
				L[16*j+ii] = int8(max(-32, min(31, l)) + 32)
			}
		}
		for n := range 2 {
			ql := blk[64*n : 64*n+64]
			qh := blk[q6KOffQh+32*n : q6KOffQh+32*n+32]
			Ln := L[128*n : 128*n+128]
			for l := range 32 {
				q1, q2 := uint8(Ln[l])&0xf, uint8(Ln[l+32])&0xf
				q3, q4 := uint8(Ln[l+64])&0xf, uint8(Ln[l+96])&0xf
				ql[l] = q1 | q3<<4
				ql[l+32] = q2 | q4<<4
				qh[l] = uint8(Ln[l]>>4) | uint8(Ln[l+32]>>4)<<2 | uint8(Ln[l+64]>>4)<<4 | uint8(Ln[l+96]>>4)<<6
			}
		}
	}
}

// DequantizeRowQ6_K is dequantize_row_q6_K: y = (d·sc)·(q−32) per sub-block of
// 16, both products rounded. len(y) must be a multiple of 256 and src must
// hold len(y)/256 blocks; blocks beyond either are ignored.
func DequantizeRowQ6_K(src []byte, y []float32) {
	nb := min(len(y)/QK_K, len(src)/BlockQ6_KSize)
	var vals [QK_K]int8
	for b := range nb {
		blk := (*[BlockQ6_KSize]byte)(src[b*BlockQ6_KSize:])
		yb := (*[QK_K]float32)(y[b*QK_K:])
		d := FP16ToFP32(k456LE16(blk[q6KOffD:]))
		q6KValues(blk, &vals)
		for j := range QK_K / 16 {
			ds := d * float32(int8(blk[q6KOffScales+j]))
			for l := 16 * j; l < 16*j+16; l++ {
				yb[l] = ds * float32(vals[l]-32)
			}
		}
	}
}

// VecDotQ6_KQ8_K is ggml_vec_dot_q6_K_q8_K of the haswell variant: w holds nb
// Q6_K blocks, a nb Q8_K blocks. Eight int32 lanes: lane m sums, over the
// eight 32-weight chunks c, sc[2c+m/4]·Σ code·a over bytes 4m..4m+3 with the
// codes unsigned (0..63), minus 32·(bsums[2m]·sc[2m] + bsums[2m+1]·sc[2m+1]);
// acc = fma(da·dw, lane, acc); result hsum_float_8(acc). nb is clamped to the
// blocks w and a hold.
func VecDotQ6_KQ8_K(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockQ6_KSize)
	var acc [8]float32
	var sc [16]int32
	for b := range nb {
		wb := (*[BlockQ6_KSize]byte)(w[b*BlockQ6_KSize:])
		ab := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		da, qs := k456Q8(ab)
		d := da * FP16ToFP32(k456LE16(wb[q6KOffD:]))
		for j := range sc {
			sc[j] = int32(int8(wb[q6KOffScales+j]))
		}
		var lanes [8]int32
		for m := range 8 {
			lanes[m] = -(k456Bsum(ab, 2*m)*sc[2*m] + k456Bsum(ab, 2*m+1)*sc[2*m+1]) << 5
		}
		for c := range 8 {
			// Chunk c = 4n+k: low nibbles (k < 2) or high (k >= 2) of
			// ql[64n+32(k&1)..], high bits 2k, 2k+1 of qh[32n..].
			n, k := c/4, c%4
			ql := (*[32]byte)(wb[64*n+32*(k&1):])
			qh := (*[32]byte)(wb[q6KOffQh+32*n:])
			ls, hs := uint(4*(k>>1)), uint(2*k)
			ac := (*[32]byte)(qs[32*c:])
			s0, s1 := sc[2*c], sc[2*c+1]
			for m := range 8 {
				b := 4 * m
				p := int32(ql[b]>>ls&15|(qh[b]>>hs&3)<<4)*int32(int8(ac[b])) +
					int32(ql[b+1]>>ls&15|(qh[b+1]>>hs&3)<<4)*int32(int8(ac[b+1])) +
					int32(ql[b+2]>>ls&15|(qh[b+2]>>hs&3)<<4)*int32(int8(ac[b+2])) +
					int32(ql[b+3]>>ls&15|(qh[b+3]>>hs&3)<<4)*int32(int8(ac[b+3]))
				s := s0
				if m >= 4 {
					s = s1
				}
				lanes[m] += s * p
			}
		}
		for m := range 8 {
			acc[m] = fmath.FMA32(d, float32(lanes[m]), acc[m])
		}
	}
	return hsum8(&acc)
}

// VecDotQ6_KQ8_KGeneric is ggml_vec_dot_q6_K_q8_K_generic as compiled in the
// haswell library: signed weights code−32, eight int32 lanes by weight index
// mod 8 scaled per sub-block of 16, sums[l] = fma(dw·da, lane, sums[l]), then
// 0 + sums[0] + … + sums[7] in order. nb is clamped to the blocks w and a
// hold.
func VecDotQ6_KQ8_KGeneric(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockQ6_KSize)
	var sums [8]float32
	var vals [QK_K]int8
	var sc [16]int32
	for b := range nb {
		wb := (*[BlockQ6_KSize]byte)(w[b*BlockQ6_KSize:])
		ab := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		da, qs := k456Q8(ab)
		for j := range sc {
			sc[j] = int32(int8(wb[q6KOffScales+j]))
		}
		q6KValues(wb, &vals)
		for i := range vals {
			vals[i] -= 32
		}
		var lanes [8]int32
		k456GenericLanes(&vals, qs, sc[:], 2, &lanes)
		d := FP16ToFP32(k456LE16(wb[q6KOffD:])) * da
		for l := range 8 {
			sums[l] = fmath.FMA32(d, float32(lanes[l]), sums[l])
		}
	}
	return k456GenericFinish(0, &sums)
}
