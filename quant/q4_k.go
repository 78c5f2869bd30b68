package quant

import (
	"encoding/binary"
	"math"

	"github.com/bankml/bankml/fmath"
)

// Q4_K, Q5_K, Q6_K: ggml's K-quants of users' Q4_K_M / Q5_K_M files
// (ggml-common.h block_q4_K, block_q5_K, block_q6_K; 256 weights per
// super-block), multiplied against Q8_K activations (q8_k.go).
//
// Design record
//
//   - What: per format the row dequantizer (dequantize_row_*), the reference
//     quantizer (quantize_row_*_ref, the float search of make_qkx2_quants /
//     make_qx_quants), the dot product ggml_vec_dot_*_q8_K as the haswell
//     variant computes it and as its exported *_generic scalar twin computes
//     it; for Q4_K also the per-output chains of the repacked q4_K_8x8 kernels
//     (ggml_gemv_q4_K_8x8_q8_K, ggml_gemm_q4_K_8x8_q8_K) and the activation
//     quantizer of the latter (ggml_quantize_mat_q8_K_4x8).
//   - Follows: ggml-quants.c (libggml-base.so: compiled for plain x86-64, no
//     FMA, so every product there rounds before it is added), ggml-cpu/quants.c
//     and arch/x86/quants.c, arch/x86/repack.cpp of llama.cpp v0.5.0, and the
//     contractions GCC emitted in libggml-cpu-haswell.so, read with objdump:
//       - ggml_vec_dot_q4_K_q8_K: eight int32 lanes (lane m holds bytes
//         4m..4m+3 of every 32-byte chunk, scaled), acc = vfmadd(d, lane, acc);
//         the mins in four lanes, acc_m = vfmadd(-dy*dmin, lane, acc_m);
//         result hsum_float_8(acc) + ((m0+m2)+(m1+m3)).
//       - ggml_vec_dot_q5_K_q8_K: the same lanes; the mins summed to one int
//         and folded in a scalar: summs = vfmadd231ss(dmin, float(isum),
//         summs) — the source's `summs += dmin * isum` is contracted.
//       - ggml_vec_dot_q6_K_q8_K: weights kept unsigned (0..63) in the lane
//         sums and 32·Σ bsums·scale subtracted per lane: lane m loses
//         32·(bsums[2m]·sc[2m] + bsums[2m+1]·sc[2m+1]) although its products
//         belong to sub-blocks 2c+m/4. The per-lane integers thus differ from
//         a "signed weights per lane" reading; the totals agree.
//       - *_generic: sums[l] = vfmadd(d, aux32[l], sums[l]) and
//         sumf = vfnmadd231ss(dmin, sumi, sumf) (contracted), then sumf +=
//         sums[0..7] one by one.
//       - q4_K_8x8 gemv: one exact integer per output and block, acc =
//         vfmadd(float(isum), dw*da, acc), accmin likewise with dmin; result
//         acc - accmin. gemm: the same per 64 weights (four FMAs per block,
//         one per pair of sub-blocks), not per block.
//     A NaN passes vfnmadd unnegated (k456FNMAdd231), so −dmin is not
//     formed before the fused operation when dmin can be NaN.
//   - Matmul path on AVX2 (ggml_compute_forward_mul_mat, checked against the
//     reference's whole mul_mat for 1, 2, 3, 4, 5, 8, 16 and 64 columns):
//     vec_dot_type Q8_K (quantize_row_q8_K), nrows 1, no llamafile sgemm case
//     for K-quants. The repack selector takes only Q4_K with rows%8 == 0 (the
//     CPU_REPACK buffer llama.cpp loads weights into): its first n−n%4
//     columns are quantized four at a time by ggml_quantize_mat_q8_K_4x8
//     (QuantizeRowQ8_K4x8) and run the gemm chain (RepackGemmQ4_KQ8_K), the
//     last n%4 columns quantize_row_q8_K and the gemv chain
//     (RepackGemvQ4_KQ8_K). Q5_K, Q6_K and other Q4_K shapes: vec_dot.
//   - Deliberate differences: integer sums are formed in any order (exact);
//     rows are not physically repacked (the repacked kernels' arithmetic is
//     reproduced on the plain layout); bad lengths are clamped to the whole
//     blocks both sides hold instead of read past.
//   - Determinism: every output is a pure function of its weight row and
//     activation row.

// BlockQ4_KSize is sizeof(block_q4_K): f16 d, f16 dmin, 12 bytes of packed
// 6-bit scales and mins, 128 bytes of nibbles (144 bytes per 256 weights).
const BlockQ4_KSize = 2 + 2 + 12 + QK_K/2

// Byte offsets inside a block_q4_K / block_q5_K.
const (
	k456OffScales = 4
	q4KOffQs      = 16
)

// k456GroupMaxEps is GROUP_MAX_EPS of ggml-quants.c.
const k456GroupMaxEps float32 = 1e-15

func k456LE16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

// k456ScaleMin decodes the twelve packed bytes of a Q4_K/Q5_K super-block into
// its eight 6-bit scales and mins (get_scale_min_k4 for j = 0..7).
func k456ScaleMin(s []byte, sc, mn *[8]int32) {
	_ = s[11]
	for j := range 4 {
		sc[j] = int32(s[j] & 63)
		mn[j] = int32(s[j+4] & 63)
		sc[j+4] = int32(s[j+8]&0xf | (s[j]>>6)<<4)
		mn[j+4] = int32(s[j+8]>>4 | (s[j+4]>>6)<<4)
	}
}

// k456QuantizeScalesMins is the part quantize_row_q4_K_ref and
// quantize_row_q5_K_ref share: per 32-weight sub-block the weights
// av_x + |x| (av_x = sqrt(Σx²/32)), make_qkx2_quants, then the eight scales
// and mins quantized to 6 bits against their maxima and packed into
// blk[4:16], d and dmin stored as f16 in blk[0:4], and the final levels
// (0..nmax) of every weight in L.
func k456QuantizeScalesMins(x []float32, blk []byte, nmax int32, rmin, rdelta float32, nstep int, L *[QK_K]uint8) {
	var weights [32]float32
	var laux [32]uint8
	var scales, mins [8]float32
	var maxScale, maxMin float32
	for j := range QK_K / 32 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := fmath.Sqrtf(sumX2 / 32)
		for l, v := range xs {
			weights[l] = avX + absBits(v)
		}
		scales[j], mins[j] = makeQKX2Quants(int(nmax), xs, weights[:], L[32*j:32*j+32], laux[:], rmin, rdelta, nstep, false)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sb := blk[k456OffScales : k456OffScales+12]
	for j := range QK_K / 32 {
		ls := min(63, uint8(nearestIntK(float32(invScale*scales[j]))))
		lm := min(63, uint8(nearestIntK(float32(invMin*mins[j]))))
		if j < 4 {
			sb[j] = ls
			sb[j+4] = lm
		} else {
			sb[j+4] = ls&0xf | (lm&0xf)<<4
			sb[j-4] |= (ls >> 4) << 6
			sb[j] |= (lm >> 4) << 6
		}
	}
	binary.LittleEndian.PutUint16(blk[0:], FP32ToFP16(maxScale/63))
	binary.LittleEndian.PutUint16(blk[2:], FP32ToFP16(maxMin/63))
	var sc, mn [8]int32
	k456ScaleMin(sb, &sc, &mn)
	dAll := FP16ToFP32(k456LE16(blk[0:]))
	mAll := FP16ToFP32(k456LE16(blk[2:]))
	for j := range QK_K / 32 {
		d := dAll * float32(sc[j])
		if d == 0 {
			continue
		}
		dm := mAll * float32(mn[j])
		for ii := range 32 {
			l := nearestIntK((x[32*j+ii] + dm) / d)
			L[32*j+ii] = uint8(max(0, min(nmax, l)))
		}
	}
}

// QuantizeRowQ4_KRef is quantize_row_q4_K_ref (ggml-quants.c; the CPU
// library's quantize_row_q4_K calls it): per super-block of 256, per
// sub-block of 32 make_qkx2_quants(nmax 15, rmin -1, rdelta 0.1, 20 steps)
// with weights av_x+|x|, scales and mins to 6 bits, levels recomputed from the
// quantized scales. len(x) must be a multiple of 256; dst needs len(x)/256*144
// bytes; whole blocks beyond either are not written.
func QuantizeRowQ4_KRef(x []float32, dst []byte) {
	nb := min(len(x)/QK_K, len(dst)/BlockQ4_KSize)
	var L [QK_K]uint8
	for b := range nb {
		blk := dst[b*BlockQ4_KSize : (b+1)*BlockQ4_KSize]
		k456QuantizeScalesMins(x[b*QK_K:(b+1)*QK_K], blk, 15, -1, 0.1, 20, &L)
		q := blk[q4KOffQs:]
		for j := 0; j < QK_K; j += 64 {
			for l := range 32 {
				q[l] = L[j+l] | L[j+l+32]<<4
			}
			q = q[32:]
		}
	}
}

// DequantizeRowQ4_K is dequantize_row_q4_K: per sub-block j of 32, y =
// (d·sc_j)·q − dmin·m_j with the product rounded before the subtraction.
// len(y) must be a multiple of 256 and src must hold len(y)/256 blocks;
// blocks beyond either are ignored.
func DequantizeRowQ4_K(src []byte, y []float32) {
	nb := min(len(y)/QK_K, len(src)/BlockQ4_KSize)
	var sc, mn [8]int32
	for b := range nb {
		blk := (*[BlockQ4_KSize]byte)(src[b*BlockQ4_KSize:])
		yb := (*[QK_K]float32)(y[b*QK_K:])
		d := FP16ToFP32(k456LE16(blk[0:]))
		dmin := FP16ToFP32(k456LE16(blk[2:]))
		k456ScaleMin(blk[k456OffScales:], &sc, &mn)
		for j := range 4 {
			d1, m1 := d*float32(sc[2*j]), dmin*float32(mn[2*j])
			d2, m2 := d*float32(sc[2*j+1]), dmin*float32(mn[2*j+1])
			q := blk[q4KOffQs+32*j : q4KOffQs+32*j+32]
			y1 := yb[64*j : 64*j+32]
			y2 := yb[64*j+32 : 64*j+64]
			for l, v := range q {
				y1[l] = float32(d1*float32(v&0xf)) - m1
				y2[l] = float32(d2*float32(v>>4)) - m2
			}
		}
	}
}

// k456Q8 returns the scale and quants of a block_q8_K.
func k456Q8(ab []byte) (float32, *[QK_K]byte) {
	return math.Float32frombits(binary.LittleEndian.Uint32(ab)), (*[QK_K]byte)(ab[q8KOffQs:])
}

// k456Bsum is bsums[j] of a block_q8_K.
func k456Bsum(ab []byte, j int) int32 {
	return int32(int16(binary.LittleEndian.Uint16(ab[q8KOffBsums+2*j:])))
}

// k456MinPairs is q8s = _mm_hadd_epi16 of the sixteen bsums (pairs added with
// int16 wrap-around: bs32[k] = bsums[2k] + bsums[2k+1], the sums of 32).
func k456MinPairs(ab []byte, bs32 *[8]int32) {
	for k := range 8 {
		bs32[k] = int32(int16(k456Bsum(ab, 2*k) + k456Bsum(ab, 2*k+1)))
	}
}

// q4KLanes adds the eight lane sums of the haswell Q4_K/Q5_K kernels'
// integer part for one super-block, here read straight from the packed
// nibbles q of a Q4_K block: lane m gets, over the four 64-weight chunks j,
// sc[2j]·Σ w·a over bytes 4m..4m+3 of the low nibbles (activations
// 64j..64j+31) plus sc[2j+1]·(the same over the high nibbles, activations
// 64j+32..64j+63).
func q4KLanes(q *[QK_K / 2]byte, qs *[QK_K]byte, sc *[8]int32, lanes *[8]int32) {
	for j := range 4 {
		qj := (*[32]byte)(q[32*j:])
		al := (*[32]byte)(qs[64*j:])
		ah := (*[32]byte)(qs[64*j+32:])
		s0, s1 := sc[2*j], sc[2*j+1]
		for m := range 8 {
			b := 4 * m
			v0, v1, v2, v3 := int32(qj[b]), int32(qj[b+1]), int32(qj[b+2]), int32(qj[b+3])
			lo := (v0&15)*int32(int8(al[b])) + (v1&15)*int32(int8(al[b+1])) +
				(v2&15)*int32(int8(al[b+2])) + (v3&15)*int32(int8(al[b+3]))
			hi := (v0>>4)*int32(int8(ah[b])) + (v1>>4)*int32(int8(ah[b+1])) +
				(v2>>4)*int32(int8(ah[b+2])) + (v3>>4)*int32(int8(ah[b+3]))
			lanes[m] += s0*lo + s1*hi
		}
	}
}

// q4KValues unpacks the 256 nibbles of a Q4_K block in weight order.
func q4KValues(blk *[BlockQ4_KSize]byte, w *[QK_K]int8) {
	for j := range 4 {
		q := (*[32]byte)(blk[q4KOffQs+32*j:])
		lo := (*[32]int8)(w[64*j:])
		hi := (*[32]int8)(w[64*j+32:])
		for l, v := range q {
			lo[l] = int8(v & 0xf)
			hi[l] = int8(v >> 4)
		}
	}
}

// k456HsumMins4 is the reduction of the four-lane mins accumulator in
// ggml_vec_dot_q4_K_q8_K: movehl + add, then movehdup + add_ss.
func k456HsumMins4(a *[4]float32) float32 { return (a[0] + a[2]) + (a[1] + a[3]) }

// VecDotQ4_KQ8_K is ggml_vec_dot_q4_K_q8_K of the haswell variant: w holds nb
// Q4_K blocks, a nb Q8_K blocks. Per block d = da·dw and dmin = −da·dwmin
// (rounded); eight lanes acc = fma(d, lane, acc) over the scaled nibble
// products; four lanes acc_m = fma(dmin, mins·bsum pairs, acc_m); result
// hsum_float_8(acc) + reduced acc_m. nb is clamped to the blocks w and a hold.
func VecDotQ4_KQ8_K(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockQ4_KSize)
	var acc [8]float32
	var accM [4]float32
	var sc, mn [8]int32
	var bs32 [8]int32
	for b := range nb {
		wb := (*[BlockQ4_KSize]byte)(w[b*BlockQ4_KSize:])
		ab := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		da, qs := k456Q8(ab)
		d := da * FP16ToFP32(k456LE16(wb[0:]))
		dmin := -da * FP16ToFP32(k456LE16(wb[2:]))
		k456ScaleMin(wb[k456OffScales:], &sc, &mn)
		k456MinPairs(ab, &bs32)
		for m := range 4 {
			prod := mn[2*m]*bs32[2*m] + mn[2*m+1]*bs32[2*m+1]
			accM[m] = fmath.FMA32(dmin, float32(prod), accM[m])
		}
		var lanes [8]int32
		q4KLanes((*[QK_K / 2]byte)(wb[q4KOffQs:]), qs, &sc, &lanes)
		for m := range 8 {
			acc[m] = fmath.FMA32(d, float32(lanes[m]), acc[m])
		}
	}
	return hsum8(&acc) + k456HsumMins4(&accM)
}

// k456GenericLanes adds the eight aux32 lanes of the *_generic K-quant dot
// products: lane l sums scale(g)·a[8g+l]·w[8g+l] over the 32 groups g of 8
// weights, the scale of group g being sc[g/gps].
func k456GenericLanes(w *[QK_K]int8, qs *[QK_K]byte, sc []int32, gps int, lanes *[8]int32) {
	for g := range QK_K / 8 {
		s := sc[g/gps]
		wg := (*[8]int8)(w[8*g:])
		ag := (*[8]byte)(qs[8*g:])
		for l := range 8 {
			lanes[l] += s * (int32(wg[l]) * int32(int8(ag[l])))
		}
	}
}

// k456GenericFinish is the tail of the *_generic dot products: sumf plus
// sums[0], …, sums[7] one at a time.
func k456GenericFinish(sumf float32, sums *[8]float32) float32 {
	for _, s := range sums {
		sumf += s
	}
	return sumf
}

// k456FNMAdd231 is vfnmadd231ss c, b, a: −(a·b)+c rounded once. A NaN
// operand is returned as it is, the negation not applied to it, the first of
// c, b, a that is NaN winning (x86's operand order src1, src2, src3).
func k456FNMAdd231(a, b, c float32) float32 {
	switch {
	case c != c:
		return c
	case b != b:
		return b
	case a != a:
		return a
	}
	return fmath.FMA32(-a, b, c)
}

// VecDotQ4_KQ8_KGeneric is ggml_vec_dot_q4_K_q8_K_generic (ggml-cpu/quants.c)
// as compiled in the haswell library: eight int32 lanes by weight index mod
// 8, sums[l] = fma(dw·da, lane, sums[l]), sumf = fma(−dwmin·da, Σ bsums·mins,
// sumf), finally sumf + sums[0] + … + sums[7] in order. nb is clamped to the
// blocks w and a hold.
func VecDotQ4_KQ8_KGeneric(w, a []byte, nb int) float32 {
	return k456GenericScaleMinDot(w, a, nb, BlockQ4_KSize, func(wb []byte, vals *[QK_K]int8) {
		q4KValues((*[BlockQ4_KSize]byte)(wb), vals)
	})
}

// k456GenericScaleMinDot is the loop VecDotQ4_KQ8_KGeneric and
// VecDotQ5_KQ8_KGeneric share (the two _generic kernels differ only in how
// a block's weights are unpacked): values writes the 256 weights of the
// blockSize-byte block wb.
func k456GenericScaleMinDot(w, a []byte, nb, blockSize int, values func(wb []byte, vals *[QK_K]int8)) float32 {
	nb = kBlocks(w, a, nb, blockSize)
	var sums [8]float32
	var sumf float32
	var sc, mn [8]int32
	var vals [QK_K]int8
	for b := range nb {
		wb := w[b*blockSize : (b+1)*blockSize]
		ab := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		da, qs := k456Q8(ab)
		k456ScaleMin(wb[k456OffScales:], &sc, &mn)
		var sumi int32
		for j := range QK_K / 16 {
			sumi += k456Bsum(ab, j) * mn[j/2]
		}
		values(wb, &vals)
		var lanes [8]int32
		k456GenericLanes(&vals, qs, sc[:], 4, &lanes)
		d := FP16ToFP32(k456LE16(wb[0:])) * da
		for l := range 8 {
			sums[l] = fmath.FMA32(d, float32(lanes[l]), sums[l])
		}
		dmin := FP16ToFP32(k456LE16(wb[2:])) * da
		sumf = k456FNMAdd231(dmin, float32(sumi), sumf)
	}
	return k456GenericFinish(sumf, &sums)
}

// q4KBlockInts returns, for one Q4_K block against one Q8_K block, the exact
// integer Σ_j sc_j·Σ w·a of each pair of sub-blocks (2p, 2p+1) and of the
// mins Σ_j m_j·bs32_j, per pair p = 0..3: what the repacked kernels form.
func q4KBlockInts(wb *[BlockQ4_KSize]byte, ab []byte, isum, imin *[4]int32) {
	var sc, mn [8]int32
	var bs32 [8]int32
	k456ScaleMin(wb[k456OffScales:], &sc, &mn)
	k456MinPairs(ab, &bs32)
	_, qs := k456Q8(ab)
	for p := range 4 {
		q := (*[32]byte)(wb[q4KOffQs+32*p:])
		lo := (*[32]byte)(qs[64*p:])
		hi := (*[32]byte)(qs[64*p+32:])
		var sl, sh int32
		for l, v := range q {
			sl += int32(v&0xf) * int32(int8(lo[l]))
			sh += int32(v>>4) * int32(int8(hi[l]))
		}
		isum[p] = sc[2*p]*sl + sc[2*p+1]*sh
		imin[p] = mn[2*p]*bs32[2*p] + mn[2*p+1]*bs32[2*p+1]
	}
}

// RepackGemvQ4_KQ8_K is one output of ggml_gemv_q4_K_8x8_q8_K (AVX2,
// arch/x86/repack.cpp), the kernel the reference runs for Q4_K weights whose
// row count is a multiple of 8 (they live in the CPU_REPACK buffer) against
// one activation column, or the columns left over after the groups of four:
// per block the exact integers isum and imin, acc = fma(float(isum), dw·da,
// acc), accmin = fma(float(imin), dwmin·da, accmin); result acc − accmin.
// The activations are quantize_row_q8_K's (QuantizeRowQ8_K). w holds nb Q4_K
// blocks, a nb Q8_K blocks; nb is clamped to the blocks both hold.
func RepackGemvQ4_KQ8_K(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockQ4_KSize)
	var acc, accMin float32
	var isum, imin [4]int32
	for b := range nb {
		wb := (*[BlockQ4_KSize]byte)(w[b*BlockQ4_KSize:])
		ab := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		q4KBlockInts(wb, ab, &isum, &imin)
		da, _ := k456Q8(ab)
		dw := FP16ToFP32(k456LE16(wb[0:])) * da
		dm := FP16ToFP32(k456LE16(wb[2:])) * da
		acc = fmath.FMA32(float32(isum[0]+isum[1]+isum[2]+isum[3]), dw, acc)
		accMin = fmath.FMA32(float32(imin[0]+imin[1]+imin[2]+imin[3]), dm, accMin)
	}
	return acc - accMin
}

// RepackGemmQ4_KQ8_K is one output of ggml_gemm_q4_K_8x8_q8_K (AVX2), the
// kernel the reference runs for repacked Q4_K weights against each group of
// four activation columns: as RepackGemvQ4_KQ8_K but the fused multiply-adds
// are per pair of sub-blocks (64 weights, four per block), in order. Its
// activations come from ggml_quantize_mat_q8_K_4x8 (QuantizeRowQ8_K4x8).
// nb is clamped to the blocks w and a hold.
func RepackGemmQ4_KQ8_K(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockQ4_KSize)
	var acc, accMin float32
	var isum, imin [4]int32
	for b := range nb {
		wb := (*[BlockQ4_KSize]byte)(w[b*BlockQ4_KSize:])
		ab := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		q4KBlockInts(wb, ab, &isum, &imin)
		da, _ := k456Q8(ab)
		dw := FP16ToFP32(k456LE16(wb[0:])) * da
		dm := FP16ToFP32(k456LE16(wb[2:])) * da
		for p := range 4 {
			acc = fmath.FMA32(float32(isum[p]), dw, acc)
			accMin = fmath.FMA32(float32(imin[p]), dm, accMin)
		}
	}
	return acc - accMin
}

// QuantizeRowQ8_K4x8 is the per-row arithmetic of ggml_quantize_mat_q8_K_4x8
// (AVX2, arch/x86/repack.cpp), the activation quantizer of the repacked Q4_K
// gemm, written in the plain block_q8_K layout (d, qs, bsums of 16) rather
// than interleaved four rows at a time: per super-block amax = max|x|,
// iscale = −127/amax when some x equals +amax, else 127/amax (quantize_row_q8_K
// takes the sign of the first x of largest |x| instead, so the two differ when
// −amax comes before +amax: qs and d then both change sign), d = 1/iscale,
// qs = round-half-even(x·iscale) saturated to int8; all-zero blocks give d = 0,
// qs = 0. len(x) must be a multiple of 256; dst needs len(x)/256*292 bytes;
// whole blocks beyond either are not written. Finite inputs only: NaNs follow
// vmaxps, not modelled here (a subnormal amax, where 127/amax overflows, is).
func QuantizeRowQ8_K4x8(x []float32, dst []byte) {
	nb := min(len(x)/QK_K, len(dst)/BlockQ8_KSize)
	for b := range nb {
		xb := (*[QK_K]float32)(x[b*QK_K:])
		out := (*[BlockQ8_KSize]byte)(dst[b*BlockQ8_KSize:])
		var amax float32
		for _, v := range xb {
			if a := absBits(v); a > amax {
				amax = a
			}
		}
		positive := false
		for _, v := range xb {
			if v == amax {
				positive = true
				break
			}
		}
		var iscale, d float32
		if amax != 0 {
			iscale = 127 / amax
			if positive {
				iscale = -127 / amax
			}
			d = 1 / iscale
		}
		binary.LittleEndian.PutUint32(out[0:], math.Float32bits(d))
		for j := range QK_K / 16 {
			var s int32
			for i := 16 * j; i < 16*j+16; i++ {
				q := k456CvtPack(xb[i] * iscale)
				out[q8KOffQs+i] = byte(int8(q))
				s += q
			}
			binary.LittleEndian.PutUint16(out[q8KOffBsums+2*j:], uint16(int16(s)))
		}
	}
}

// k456CvtPack is vroundps (nearest even), vcvtps2dq and the two saturating
// packs to int8 of one value: NaN and values outside int32 become the
// integer indefinite 0x80000000 and so -128.
func k456CvtPack(f float32) int32 {
	r := math.RoundToEven(float64(f))
	if !(r >= -(1<<31) && r < 1<<31) {
		return -128
	}
	return int32(max(-128, min(127, r)))
}
