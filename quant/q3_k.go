package quant

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/bankml/bankml/fmath"
)

// Q3_K: ggml's 3-bit K-quant (ggml-common.h block_q3_K), 256 weights per
// super-block of 16 groups of 16, 110 bytes: hmask[32], qs[64], scales[12],
// f16 d. Element e = 128h + 32n + m (h < 2, n < 4, m < 32) has the low bits
// q = bits 2n..2n+1 of qs[32h+m] and the high bit = bit 4h+n of hmask[m]; its
// weight is d*(s[g]-32)*(q - (high bit ? 0 : 4)) with g = e/16 and the
// 6-bit scale s[g] = (g < 8 ? scales[g]&15 : scales[g-8]>>4) |
// ((scales[8+g%4] >> 2(g/4)) & 3) << 4.
//
// Design record
//
//   - Follows: quantize_row_q3_K_ref (with make_q3_quants, rmse search) and
//     dequantize_row_q3_K (ggml-quants.c; libggml-base.so has no FMA, every
//     float operation rounds in source order, kept here with explicit
//     float32 conversions), ggml_vec_dot_q3_K_q8_K of arch/x86/quants.c and
//     ggml_vec_dot_q3_K_q8_K_generic of ggml-cpu/quants.c as GCC compiled
//     them in libggml-cpu-haswell.so (read with objdump).
//   - The AVX2 kernel per block: sumi[l], the exact sum over the elements e
//     with (e%32)/4 == l of (s[e/16]-32)*w*y (vpmaddubsw of the low bits and
//     of the inverted high bit, subtracted in int16 — never wraps — then
//     vpmaddwd by the scales), and acc[l] = fma(y.d*d, float(sumi[l]),
//     acc[l]) (the source's _mm256_fmadd_ps); the row ends with hsum_float_8.
//   - The generic kernel keeps eight int32 lanes aux32[l] = sum over e with
//     e%8 == l of (s[e/16]-32)*w*y per block, and eight float sums
//     sums[l] = fma(d*y.d, float(aux32[l]), sums[l]) across blocks: GCC
//     vectorised the source's sums[l] += d*aux32[l] into one vfmadd231ps
//     (objdump), so a source-faithful port that rounds the product differs;
//     the row is then 0 + sums[0] + sums[1] + ... + sums[7] in that order.
//   - The matmul path on AVX2 (haswell): vec_dot_type Q8_K, nrows 1; the
//     repack selector has no Q3_K branch and llamafile_sgemm no Q3_K case,
//     so every output is one ggml_vec_dot_q3_K_q8_K call on a
//     quantize_row_q8_K activation row.
//   - Deliberate differences: integer sums in any order (exact).
//   - Determinism: each dot is a pure function of one weight row and one
//     activation row.

// BlockQ3_KSize is sizeof(block_q3_K): hmask[32], qs[64], scales[12], f16 d.
const BlockQ3_KSize = QK_K/8 + QK_K/4 + 12 + 2

const (
	q3KOffQs     = QK_K / 8
	q3KOffScales = q3KOffQs + QK_K/4
	q3KOffD      = q3KOffScales + 12
)

func q3KD(blk *[BlockQ3_KSize]byte) float32 {
	return FP16ToFP32(binary.LittleEndian.Uint16(blk[q3KOffD:]))
}

// q3KScales decodes the sixteen 6-bit scales of a Q3_K block, minus 32.
func q3KScales(blk *[BlockQ3_KSize]byte, s *[16]int32) {
	sc := (*[12]byte)(blk[q3KOffScales:])
	for g := range 16 {
		var lo byte
		if g < 8 {
			lo = sc[g] & 0xf
		} else {
			lo = sc[g-8] >> 4
		}
		s[g] = int32(lo|(sc[8+g%4]>>(2*(g/4))&3)<<4) - 32
	}
}

// q3KWeights writes the 256 signed 3-bit weights (-4..3) of a Q3_K block in
// element order.
func q3KWeights(blk *[BlockQ3_KSize]byte, wq *[QK_K]int8) {
	for h := range 2 {
		for n := range 4 {
			bit := byte(1) << (4*h + n)
			for m := range 32 {
				q := int8(blk[q3KOffQs+32*h+m] >> (2 * n) & 3)
				if blk[m]&bit == 0 {
					q -= 4
				}
				wq[128*h+32*n+m] = q
			}
		}
	}
}

// DequantizeRowQ3_K is dequantize_row_q3_K: per group g, dl = d*(s[g]-32),
// then y = dl*w. len(y) must be a multiple of 256 and src must hold
// len(y)/256 blocks of 110 bytes; blocks beyond either are ignored.
func DequantizeRowQ3_K(src []byte, y []float32) {
	var s [16]int32
	var wq [QK_K]int8
	for b := range min(len(y)/QK_K, len(src)/BlockQ3_KSize) {
		blk := (*[BlockQ3_KSize]byte)(src[b*BlockQ3_KSize:])
		yb := (*[QK_K]float32)(y[b*QK_K:])
		d := q3KD(blk)
		q3KScales(blk, &s)
		q3KWeightsSWAR(blk, &wq)
		for g := range 16 {
			dl := d * float32(s[g])
			// The group's eight values dl*w, w = -4..3.
			var vals [8]float32
			for i := range vals {
				vals[i] = dl * float32(i-4)
			}
			for e := 16 * g; e < 16*g+16; e++ {
				yb[e] = vals[(wq[e]+4)&7]
			}
		}
	}
}

// makeQ3Quants is make_q3_quants (ggml-quants.c) with do_rmse: levels
// -nmax..nmax-1 from -nmax/max, then up to five passes of per-element
// changes that improve the weighted (x^2) fit; it writes L (len(x)) as
// levels plus nmax, or all zero for an all-zero group, and returns the
// scale. Every float operation rounds to float32 in the source's order.
func makeQ3Quants(nmax int, x []float32, L []int8) float32 {
	n := len(x)
	L = L[:n]
	var maxv, amax float32
	for _, v := range x {
		if ax := float32(math.Abs(float64(v))); ax > amax {
			amax, maxv = ax, v
		}
	}
	if amax < 1e-15 { // GROUP_MAX_EPS
		clear(L)
		return 0
	}
	clampL := func(l int32) int32 { return max(-int32(nmax), min(int32(nmax)-1, l)) }
	iscale := float32(-nmax) / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampL(nearestIntK(iscale * v))
		L[i] = int8(l)
		w, fl := v*v, float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for range 5 {
		changed := 0
		for i, v := range x {
			w := v * v
			li := float32(L[i])
			slx := sumlx - float32(float32(w*v)*li)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*li)*li)
				newL := clampL(nearestIntK(float32(v*sl2) / slx))
				if newL != int32(L[i]) {
					fl := float32(newL)
					slx += float32(float32(w*v) * fl)
					sl2 += float32(float32(w*fl) * fl)
					if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i] = int8(newL)
						sumlx, suml2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range L {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// QuantizeQ3_KRef is quantize_row_q3_K_ref (also the CPU library's
// quantize_row_q3_K): per group of 16, make_q3_quants(16, 4, rmse) gives a
// signed scale; the one of largest magnitude sets d = -(that)/32 (f16), each
// group scale becomes clamp(nearest_int(-32/max*scale), -32, 31)+32 in six
// bits, and each weight is requantized as clamp(nearest_int(x/dl), -4, 3)+4
// against the stored values (groups whose dl is 0 keep their make_q3_quants
// levels), split into qs (low two bits) and hmask (high bit). len(x) must be
// a multiple of 256 and finite; dst needs len(x)/256*110 bytes. Extra
// elements and blocks dst has no room for are ignored.
func QuantizeQ3_KRef(x []float32, dst []byte) {
	var (
		L      [QK_K]int8
		scales [16]float32
	)
	for b := range min(len(x)/QK_K, len(dst)/BlockQ3_KSize) {
		xb := (*[QK_K]float32)(x[b*QK_K:])
		out := (*[BlockQ3_KSize]byte)(dst[b*BlockQ3_KSize:])
		var maxScale, amax float32
		for j := range 16 {
			scales[j] = makeQ3Quants(4, xb[16*j:16*j+16], L[16*j:16*j+16])
			if scale := float32(math.Abs(float64(scales[j]))); scale > amax {
				amax, maxScale = scale, scales[j]
			}
		}
		sc := (*[12]byte)(out[q3KOffScales:])
		clear(sc[:])
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := range 16 {
				l := int8(nearestIntK(iscale * scales[j]))
				l = max(-32, min(31, l)) + 32
				if j < 8 {
					sc[j] = byte(l & 0xf)
				} else {
					sc[j-8] |= byte(l&0xf) << 4
				}
				l >>= 4
				sc[j%4+8] |= byte(l) << (2 * (j / 4))
			}
			binary.LittleEndian.PutUint16(out[q3KOffD:], FP32ToFP16(1/iscale))
		} else {
			binary.LittleEndian.PutUint16(out[q3KOffD:], FP32ToFP16(0))
		}
		d := q3KD(out)
		var s [16]int32
		q3KScales(out, &s)
		for j := range 16 {
			dl := d * float32(s[j])
			if dl == 0 {
				continue
			}
			for ii := range 16 {
				l := nearestIntK(xb[16*j+ii] / dl)
				L[16*j+ii] = int8(max(-4, min(3, l)) + 4)
			}
		}
		hm := (*[32]byte)(out[:])
		clear(hm[:])
		for j := range QK_K {
			if L[j] > 3 {
				hm[j%32] |= 1 << (j / 32)
				L[j] -= 4
			}
		}
		for h := range 2 {
			for l := range 32 {
				o := 128 * h
				out[q3KOffQs+32*h+l] = byte(L[o+l]) | byte(L[o+l+32])<<2 | byte(L[o+l+64])<<4 | byte(L[o+l+96])<<6
			}
		}
	}
}

// specVecDotQ3_K is the executable specification of the AVX2 kernel
// ggml_vec_dot_q3_K_q8_K, from the element view.
func specVecDotQ3_K(w, a []byte, nb int) float32 {
	var acc [8]float32
	var s [16]int32
	var wq [QK_K]int8
	for b := range nb {
		blk := (*[BlockQ3_KSize]byte)(w[b*BlockQ3_KSize:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		q3KScales(blk, &s)
		q3KWeights(blk, &wq)
		var sumi [8]int32
		for e := range QK_K {
			sumi[(e%32)/4] += s[e/16] * int32(wq[e]) * int32(int8(ab[q8KOffQs+e]))
		}
		d := q8KD(ab) * q3KD(blk)
		for l := range 8 {
			acc[l] = fmath.FMA32(d, float32(sumi[l]), acc[l])
		}
	}
	return hsum8(&acc)
}

// specVecDotQ3_KGeneric is the executable specification of
// ggml_vec_dot_q3_K_q8_K_generic as compiled, from the element view.
func specVecDotQ3_KGeneric(w, a []byte, nb int) float32 {
	var sums [8]float32
	var s [16]int32
	var wq [QK_K]int8
	for b := range nb {
		blk := (*[BlockQ3_KSize]byte)(w[b*BlockQ3_KSize:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		q3KScales(blk, &s)
		q3KWeights(blk, &wq)
		var aux32 [8]int32
		for e := range QK_K {
			aux32[e%8] += s[e/16] * int32(wq[e]) * int32(int8(ab[q8KOffQs+e]))
		}
		d := q3KD(blk) * q8KD(ab)
		for l := range 8 {
			sums[l] = fmath.FMA32(d, float32(aux32[l]), sums[l])
		}
	}
	var sumf float32
	for _, v := range sums {
		sumf += v
	}
	return sumf
}

// q3KWeightsSWAR is q3KWeights eight elements at a time: for chunk c the
// low bits (qs >> 2(c%4)) & 3 and the high bit (hmask >> c) & 1 form w+4 in
// 0..7 per byte, and 4 is subtracted bytewise without borrows.
func q3KWeightsSWAR(blk *[BlockQ3_KSize]byte, wq *[QK_K]int8) {
	const hi = 0x8080808080808080
	wb := (*[QK_K]byte)(unsafe.Pointer(wq))
	for i := range 4 {
		hm := binary.LittleEndian.Uint64(blk[8*i:])
		for h := range 2 {
			qw := binary.LittleEndian.Uint64(blk[q3KOffQs+32*h+8*i:])
			for n := range 4 {
				c := 4*h + n
				v := qw>>(2*n)&0x0303030303030303 | (hm>>c&0x0101010101010101)<<2
				binary.LittleEndian.PutUint64(wb[32*c+8*i:], ((v|hi)-0x0404040404040404)^hi)
			}
		}
	}
}

// VecDotQ3_KQ8_K is ggml_vec_dot_q3_K_q8_K of the haswell variant (AVX2):
// the dot product of nb Q3_K blocks w (110 bytes each) with nb Q8_K blocks a
// (292 bytes each; bsums unused). nb is clamped to the whole blocks both
// slices hold.
func VecDotQ3_KQ8_K(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockQ3_KSize)
	var acc [8]float32
	var s [16]int32
	var wq [QK_K]int8
	for b := range nb {
		blk := (*[BlockQ3_KSize]byte)(w[b*BlockQ3_KSize:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		y := (*[QK_K]byte)(ab[q8KOffQs:])
		q3KScales(blk, &s)
		q3KWeightsSWAR(blk, &wq)
		var sumi [8]int32
		for c := range 8 {
			wc := (*[32]int8)(wq[32*c:])
			yc := (*[32]byte)(y[32*c:])
			for l := range 8 {
				m := 4 * l
				p := int32(wc[m])*int32(int8(yc[m])) + int32(wc[m+1])*int32(int8(yc[m+1])) +
					int32(wc[m+2])*int32(int8(yc[m+2])) + int32(wc[m+3])*int32(int8(yc[m+3]))
				sumi[l] += s[2*c+l/4] * p
			}
		}
		d := q8KD(ab) * q3KD(blk)
		for l := range 8 {
			acc[l] = fmath.FMA32(d, float32(sumi[l]), acc[l])
		}
	}
	return hsum8(&acc)
}

// VecDotQ3_KQ8_KGeneric is ggml_vec_dot_q3_K_q8_K_generic as compiled in the
// haswell library: eight int32 lanes aux32[l] over the elements e%8 == l
// per block, eight float sums fused across blocks
// (sums[l] = fma(x.d*y.d, float(aux32[l]), sums[l])), then
// 0 + sums[0] + ... + sums[7] in order. Same arguments as VecDotQ3_KQ8_K.
func VecDotQ3_KQ8_KGeneric(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockQ3_KSize)
	var sums [8]float32
	var s [16]int32
	var wq [QK_K]int8
	for b := range nb {
		blk := (*[BlockQ3_KSize]byte)(w[b*BlockQ3_KSize:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		y := (*[QK_K]byte)(ab[q8KOffQs:])
		q3KScales(blk, &s)
		q3KWeightsSWAR(blk, &wq)
		var aux32 [8]int32
		for g := range 16 {
			wg := (*[16]int8)(wq[16*g:])
			yg := (*[16]byte)(y[16*g:])
			sg := s[g]
			for l := range 8 {
				aux32[l] += sg * (int32(wg[l])*int32(int8(yg[l])) + int32(wg[l+8])*int32(int8(yg[l+8])))
			}
		}
		d := q3KD(blk) * q8KD(ab)
		for l := range 8 {
			sums[l] = fmath.FMA32(d, float32(aux32[l]), sums[l])
		}
	}
	var sumf float32
	for _, v := range sums {
		sumf += v
	}
	return sumf
}
