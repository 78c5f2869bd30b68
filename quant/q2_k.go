package quant

import (
	"encoding/binary"
	"math"

	"github.com/bankml/bankml/fmath"
)

// Q2_K: ggml's 2-bit K-quant (ggml-common.h block_q2_K), 256 weights per
// super-block of 16 groups of 16, 84 bytes: scales[16] (group g's scale in
// the low nibble, its min in the high nibble), qs[64], f16 d, f16 dmin.
// Element e = 128h + 32n + m (h < 2, n < 4, m < 32) has the 2-bit code
// q = bits 2n..2n+1 of qs[32h+m] and lies in group g = e/16; its weight is
// d*(scales[g]&15)*q - dmin*(scales[g]>>4).
//
// Design record
//
//   - Follows: quantize_row_q2_K_ref (with make_qkx2_quants) and
//     dequantize_row_q2_K (ggml-quants.c; libggml-base.so is compiled
//     without FMA and without fast-math: every float operation rounds in
//     source order, which this port keeps with explicit float32
//     conversions), ggml_vec_dot_q2_K_q8_K of arch/x86/quants.c and
//     ggml_vec_dot_q2_K_q8_K_generic of ggml-cpu/quants.c as GCC compiled
//     them in libggml-cpu-haswell.so (read with objdump).
//   - The AVX2 kernel per block: prod[l] = mins[2l]*bsums[2l] +
//     mins[2l+1]*bsums[2l+1] (vpmaddwd), acc[l] = fma(-(y.d*dmin),
//     float(prod[l]), acc[l]); then sumi[l], the exact sum over the
//     elements e with (e%32)/4 == l of scale[e/16]*q*y, and acc[l] =
//     fma(y.d*d, float(sumi[l]), acc[l]); the row ends with hsum_float_8.
//     Both fused multiply-adds are the source's _mm256_fmadd_ps.
//   - The generic kernel per block: isum = sum scale*q*y, summs = sum
//     bsums[j]*min[j] (exact), dall = y.d*d, dmin = y.d*dmin, and
//     sumf += fma(float(isum), dall, -(dmin*float(summs))): the source's
//     sumf += dall*isum - dmin*summs became vmulss + vfmsub132ss + vaddss
//     (objdump), where a source-faithful port rounds dall*isum separately.
//   - The matmul path on AVX2 (haswell): vec_dot_type Q8_K, nrows 1.
//     ggml_repack_get_optimal_repack_type offers q2_K_8x8_q8_K only when
//     ggml_cpu_has_avx512() (false in the haswell build), and
//     llamafile_sgemm has no Q2_K case, so every output is one
//     ggml_vec_dot_q2_K_q8_K call on a quantize_row_q8_K activation row.
//   - Deliberate differences: integer sums in any order (exact).
//   - Determinism: each dot is a pure function of one weight row and one
//     activation row.

// BlockQ2_KSize is sizeof(block_q2_K): scales[16], qs[64], f16 d, f16 dmin.
const BlockQ2_KSize = QK_K/16 + QK_K/4 + 2 + 2

const (
	q2KOffQs   = QK_K / 16
	q2KOffD    = q2KOffQs + QK_K/4
	q2KOffDmin = q2KOffD + 2
)

func q2KD(blk *[BlockQ2_KSize]byte) (d, dmin float32) {
	return FP16ToFP32(binary.LittleEndian.Uint16(blk[q2KOffD:])), FP16ToFP32(binary.LittleEndian.Uint16(blk[q2KOffDmin:]))
}

// q2KCodes writes the 256 2-bit codes of a Q2_K block in element order.
func q2KCodes(blk *[BlockQ2_KSize]byte, c *[QK_K]uint8) {
	for h := range 2 {
		for m := range 32 {
			q := blk[q2KOffQs+32*h+m]
			c[128*h+m], c[128*h+32+m], c[128*h+64+m], c[128*h+96+m] = q&3, q>>2&3, q>>4&3, q>>6
		}
	}
}

// DequantizeRowQ2_K is dequantize_row_q2_K: per group g, dl = d*(sc&15) and
// ml = dmin*(sc>>4), then y = dl*q - ml, each operation rounded. len(y) must
// be a multiple of 256 and src must hold len(y)/256 blocks of 84 bytes;
// blocks beyond either are ignored.
func DequantizeRowQ2_K(src []byte, y []float32) {
	var c [QK_K]uint8
	for b := range min(len(y)/QK_K, len(src)/BlockQ2_KSize) {
		blk := (*[BlockQ2_KSize]byte)(src[b*BlockQ2_KSize:])
		yb := (*[QK_K]float32)(y[b*QK_K:])
		d, dmin := q2KD(blk)
		q2KCodes(blk, &c)
		for g := range 16 {
			sc := blk[g]
			dl, ml := d*float32(sc&0xf), dmin*float32(sc>>4)
			// The group's four values, each rounded as the reference
			// rounds it per element.
			vals := [4]float32{float32(dl*0) - ml, float32(dl*1) - ml, float32(dl*2) - ml, float32(dl*3) - ml}
			for e := 16 * g; e < 16*g+16; e++ {
				yb[e] = vals[c[e]&3]
			}
		}
	}
}

// makeQKX2Quants is make_qkx2_quants (ggml-quants.c) for n = len(x) values
// with weights, levels 0..nmax: a least-squares scale and min search over
// nstep+1 candidate scales. It writes L and Laux (both len(x)) and returns
// the scale and the_min (the negated min). Every float operation rounds to
// float32 in the source's order.
func makeQKX2Quants(nmax int, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMad bool) (scale, theMin float32) {
	n := len(x)
	weights, L, Laux = weights[:n], L[:n], Laux[:n]
	minv, maxv := x[0], x[0]
	sumW := weights[0]
	sumX := sumW * x[0]
	for i := 1; i < n; i++ {
		if x[i] < minv {
			minv = x[i]
		}
		if x[i] > maxv {
			maxv = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if minv > 0 {
		minv = 0
	}
	if maxv == minv {
		clear(L)
		return 0, -minv
	}
	clampL := func(l int32) uint8 { return uint8(max(0, min(int32(nmax), l))) }
	errOf := func(diff float32) float32 {
		if useMad {
			return float32(math.Abs(float64(diff)))
		}
		return diff * diff
	}
	iscale := float32(nmax) / (maxv - minv)
	scale = 1 / iscale
	var bestError float32
	for i := range n {
		L[i] = clampL(nearestIntK(iscale * (x[i] - minv)))
		diff := float32(float32(scale*float32(L[i]))+minv) - x[i]
		bestError += float32(weights[i] * errOf(diff))
	}
	if nstep < 1 {
		return scale, -minv
	}
	for is := 0; is <= nstep; is++ {
		iscale = float32(float32(rmin+float32(rdelta*float32(is)))+float32(nmax)) / (maxv - minv)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := clampL(nearestIntK(iscale * (x[i] - minv)))
			Laux[i] = l
			w, fl := weights[i], float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curError float32
			for i := range n {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - x[i]
				curError += float32(weights[i] * errOf(diff))
			}
			if curError < bestError {
				copy(L, Laux)
				bestError = curError
				scale = thisScale
				minv = thisMin
			}
		}
	}
	return scale, -minv
}

// QuantizeQ2_KRef is quantize_row_q2_K_ref (also the CPU library's
// quantize_row_q2_K): per group of 16, make_qkx2_quants(16, 3, weights |x|,
// rmin -0.5, rdelta 0.1, 15 steps, mean absolute error) gives a scale and a
// min; the largest of each over the block, divided by 15, become d and dmin
// (f16), the per-group 4-bit scales and mins are nearest_int(15/max*v), and
// each weight is requantized as clamp(nearest_int((x+dm)/dl), 0, 3) against
// the stored values (groups whose dl is 0 keep their make_qkx2_quants
// levels). len(x) must be a multiple of 256 and finite; dst needs
// len(x)/256*84 bytes. Extra elements and blocks dst has no room for are
// ignored.
func QuantizeQ2_KRef(x []float32, dst []byte) {
	var (
		L       [QK_K]uint8
		Laux    [16]uint8
		weights [16]float32
		mins    [16]float32
		scales  [16]float32
	)
	const q4scale = 15
	for b := range min(len(x)/QK_K, len(dst)/BlockQ2_KSize) {
		xb := (*[QK_K]float32)(x[b*QK_K:])
		out := (*[BlockQ2_KSize]byte)(dst[b*BlockQ2_KSize:])
		var maxScale, maxMin float32
		for j := range 16 {
			xg := xb[16*j : 16*j+16]
			for l, v := range xg {
				weights[l] = float32(math.Abs(float64(v)))
			}
			scales[j], mins[j] = makeQKX2Quants(3, xg, weights[:], L[16*j:16*j+16], Laux[:], -0.5, 0.1, 15, true)
			if scales[j] > maxScale {
				maxScale = scales[j]
			}
			if mins[j] > maxMin {
				maxMin = mins[j]
			}
		}
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := range 16 {
				out[j] = uint8(nearestIntK(iscale * scales[j]))
			}
			binary.LittleEndian.PutUint16(out[q2KOffD:], FP32ToFP16(maxScale/q4scale))
		} else {
			clear(out[:16])
			binary.LittleEndian.PutUint16(out[q2KOffD:], FP32ToFP16(0))
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := range 16 {
				out[j] |= uint8(nearestIntK(iscale*mins[j]) << 4)
			}
			binary.LittleEndian.PutUint16(out[q2KOffDmin:], FP32ToFP16(maxMin/q4scale))
		} else {
			binary.LittleEndian.PutUint16(out[q2KOffDmin:], FP32ToFP16(0))
		}
		d, dmin := q2KD(out)
		for j := range 16 {
			dl := d * float32(out[j]&0xf)
			if dl == 0 {
				continue
			}
			dm := dmin * float32(out[j]>>4)
			for ii := range 16 {
				l := nearestIntK((xb[16*j+ii] + dm) / dl)
				L[16*j+ii] = uint8(max(0, min(3, l)))
			}
		}
		for h := range 2 {
			for l := range 32 {
				o := 128 * h
				out[q2KOffQs+32*h+l] = L[o+l] | L[o+l+32]<<2 | L[o+l+64]<<4 | L[o+l+96]<<6
			}
		}
	}
}

// q2KMinProd is the vpmaddwd of the AVX2 Q2_K kernel: lane l =
// min[2l]*bsums[2l] + min[2l+1]*bsums[2l+1].
func q2KMinProd(blk *[BlockQ2_KSize]byte, ab *[BlockQ8_KSize]byte, prod *[8]int32) {
	for l := range 8 {
		prod[l] = int32(blk[2*l]>>4)*int32(q8KBsum(ab, 2*l)) + int32(blk[2*l+1]>>4)*int32(q8KBsum(ab, 2*l+1))
	}
}

// specVecDotQ2_K is the executable specification of the AVX2 kernel
// ggml_vec_dot_q2_K_q8_K, from the element view.
func specVecDotQ2_K(w, a []byte, nb int) float32 {
	var acc [8]float32
	var c [QK_K]uint8
	for b := range nb {
		blk := (*[BlockQ2_KSize]byte)(w[b*BlockQ2_KSize:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		xd, xdmin := q2KD(blk)
		d, dmin := q8KD(ab)*xd, -q8KD(ab)*xdmin
		var prod, sumi [8]int32
		q2KMinProd(blk, ab, &prod)
		for l := range 8 {
			acc[l] = fmath.FMA32(dmin, float32(prod[l]), acc[l])
		}
		q2KCodes(blk, &c)
		for e := range QK_K {
			sumi[(e%32)/4] += int32(blk[e/16]&0xf) * int32(c[e]) * int32(int8(ab[q8KOffQs+e]))
		}
		for l := range 8 {
			acc[l] = fmath.FMA32(d, float32(sumi[l]), acc[l])
		}
	}
	return hsum8(&acc)
}

// specVecDotQ2_KGeneric is the element-view specification of
// ggml_vec_dot_q2_K_q8_K_generic as compiled.
func specVecDotQ2_KGeneric(w, a []byte, nb int) float32 {
	var sumf float32
	var c [QK_K]uint8
	for b := range nb {
		blk := (*[BlockQ2_KSize]byte)(w[b*BlockQ2_KSize:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		q2KCodes(blk, &c)
		var isum, summs int32
		for e := range QK_K {
			isum += int32(blk[e/16]&0xf) * int32(c[e]) * int32(int8(ab[q8KOffQs+e]))
		}
		for j := range 16 {
			summs += int32(q8KBsum(ab, j)) * int32(blk[j]>>4)
		}
		xd, xdmin := q2KD(blk)
		t := q8KD(ab) * xdmin * float32(summs)
		sumf += fmath.FMA32(float32(isum), q8KD(ab)*xd, -t)
	}
	return sumf
}

// VecDotQ2_KQ8_K is ggml_vec_dot_q2_K_q8_K of the haswell variant (AVX2):
// the dot product of nb Q2_K blocks w (84 bytes each) with nb Q8_K blocks a
// (292 bytes each; its bsums carry the mins' term and are used as stored).
// nb is clamped to the whole blocks both slices hold.
func VecDotQ2_KQ8_K(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockQ2_KSize)
	var acc [8]float32
	var prod [8]int32
	for b := range nb {
		blk := (*[BlockQ2_KSize]byte)(w[b*BlockQ2_KSize:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		y := (*[QK_K]byte)(ab[q8KOffQs:])
		xd, xdmin := q2KD(blk)
		yd := q8KD(ab)
		d, dmin := yd*xd, -yd*xdmin
		q2KMinProd(blk, ab, &prod)
		for l := range 8 {
			acc[l] = fmath.FMA32(dmin, float32(prod[l]), acc[l])
		}
		var sumi [8]int32
		for c := range 8 { // 32-element chunk c: bits 2(c%4) of qs[32(c/4)..]
			qs := (*[32]byte)(blk[q2KOffQs+32*(c/4):])
			yc := (*[32]byte)(y[32*c:])
			sh := uint(2 * (c % 4))
			for l := range 8 {
				b := 4 * l
				s := int32(qs[b]>>sh&3)*int32(int8(yc[b])) + int32(qs[b+1]>>sh&3)*int32(int8(yc[b+1])) +
					int32(qs[b+2]>>sh&3)*int32(int8(yc[b+2])) + int32(qs[b+3]>>sh&3)*int32(int8(yc[b+3]))
				sumi[l] += int32(blk[2*c+l/4]&0xf) * s
			}
		}
		for l := range 8 {
			acc[l] = fmath.FMA32(d, float32(sumi[l]), acc[l])
		}
	}
	return hsum8(&acc)
}

// VecDotQ2_KQ8_KGeneric is ggml_vec_dot_q2_K_q8_K_generic as compiled in the
// haswell library: per block sumf += fma(float(isum), y.d*d,
// -(y.d*dmin*float(summs))), with isum the exact scaled code dot and summs
// the bsums-weighted mins. Same arguments as VecDotQ2_KQ8_K.
func VecDotQ2_KQ8_KGeneric(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockQ2_KSize)
	var sumf float32
	for b := range nb {
		blk := (*[BlockQ2_KSize]byte)(w[b*BlockQ2_KSize:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		y := (*[QK_K]byte)(ab[q8KOffQs:])
		var summs int32
		for j := range 16 {
			summs += int32(q8KBsum(ab, j)) * int32(blk[j]>>4)
		}
		xd, xdmin := q2KD(blk)
		yd := q8KD(ab)
		dall, dmin := yd*xd, yd*xdmin
		var isum int32
		for c := range 8 {
			qs := (*[32]byte)(blk[q2KOffQs+32*(c/4):])
			yc := (*[32]byte)(y[32*c:])
			sh := uint(2 * (c % 4))
			for half := range 2 {
				var s int32
				for m := 16 * half; m < 16*half+16; m++ {
					s += int32(qs[m]>>sh&3) * int32(int8(yc[m]))
				}
				isum += int32(blk[2*c+half]&0xf) * s
			}
		}
		sumf += fmath.FMA32(float32(isum), dall, -(dmin * float32(summs)))
	}
	return sumf
}
