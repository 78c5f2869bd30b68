package quant

import (
	"encoding/binary"
	"math"

	"github.com/bankml/bankml/fmath"
)

// TQ1_0 and TQ2_0: ggml's ternary formats (ggml-common.h block_tq1_0,
// block_tq2_0), 256 weights per block, weight (code-1)*d with code 0, 1, 2
// for -d, 0, +d; d is an f16 scale stored last.
//
// TQ2_0 (66 bytes): qs[64], d. Weight 128*h + 32*n + m (h < 2, n < 4,
// m < 32) is bits 2n..2n+1 of qs[32h+m].
//
// TQ1_0 (54 bytes): qs[48], qh[4], d; five trits per byte of qs and four per
// byte of qh, stored as a base-3 fixed-point fraction: the byte q holds trits
// t0 t1 t2 t3 t4 as ceil((t0*81+t1*27+t2*9+t3*3+t4)*256/243), and trit n is
// read back as (uint8(q*3^n)*3) >> 8. Weights 0..159 are trit e/32 of
// qs[e%32]; weights 160..239 are trit p/16 of qs[32+p%16] (p = e-160);
// weights 240..255 are trit p/4 of qh[p%4] (p = e-240, qh holding four trits
// shifted up by one place).
//
// Design record
//
//   - Follows: quantize_row_tq1_0_ref, quantize_row_tq2_0_ref,
//     dequantize_row_tq1_0, dequantize_row_tq2_0 (ggml-quants.c, in
//     libggml-base.so, compiled without FMA: every product and sum is
//     rounded), and ggml_vec_dot_tq1_0_q8_K / ggml_vec_dot_tq2_0_q8_K of
//     arch/x86/quants.c as GCC compiled them in libggml-cpu-haswell.so, with
//     their _generic twins of ggml-cpu/quants.c (same library).
//   - The AVX2 kernels (both formats alike): per block, sixteen int16 lanes
//     k = (e%32)/2 sum code*y over the elements e of their lane
//     (vpmaddubsw; never saturates, codes are at most 3) minus bsums[k]
//     (vpsubw, wrapping), pairs of lanes are added into eight int32 lanes
//     (vpmaddwd with ones), and acc[l] = fma(float(lane l), d, acc[l]) with
//     d = y.d*x.d rounded: the source writes _mm256_add_ps(_mm256_mul_ps(..),
//     acc), and GCC contracted it to vfmadd231ps (objdump), so a
//     source-faithful port (product rounded, then added) differs in the last
//     bit. The row sum is hsum_float_8 of acc.
//   - The generic kernels: one exact integer sum of (code-1)*y per block,
//     then sumf = fma(float(sum), d, sumf) (vfmadd231ss, again a contraction
//     of the source's sumf += (float)sum*d).
//   - The trit decoding of the AVX2 TQ1_0 kernel (bytes multiplied by 3^n
//     with shifts and masks, then vpsubusb/vpavgb/vpsrlw) equals
//     (q*3)>>8 for all 256 bytes, so both kernels see the same trits.
//   - The matmul path (ggml_compute_forward_mul_mat on AVX2): vec_dot_type
//     Q8_K, nrows 1; llamafile_sgemm has no TQ case and the repack selector
//     none either, so every output is one ggml_vec_dot_tq*_0_q8_K call on an
//     activation row quantized by quantize_row_q8_K.
//   - Deliberate differences: integer sums in any order (exact); the
//     reference's uint8 wrap-around and int16 wrap-around are reproduced, so
//     arbitrary bytes (not only valid blocks) give the reference's result.
//   - Determinism: each dot is a pure function of one weight row and one
//     activation row.

// BlockTQ1_0Size is sizeof(block_tq1_0): qs[48], qh[4], f16 d.
const BlockTQ1_0Size = 48 + 4 + 2

// BlockTQ2_0Size is sizeof(block_tq2_0): qs[64], f16 d.
const BlockTQ2_0Size = QK_K/4 + 2

// tq1Pow3 is pow3 of dequantize_row_tq1_0.
var tq1Pow3 = [6]uint8{1, 3, 9, 27, 81, 243}

// tq1Trits[q][n] is trit n of the byte q: ((uint8(q*3^n))*3) >> 8, in 0..2.
var tq1Trits = func() (t [256][5]uint8) {
	for q := range 256 {
		for n := range 5 {
			t[q][n] = uint8((uint16(uint8(q)*tq1Pow3[n]) * 3) >> 8)
		}
	}
	return t
}()

// tq1Codes writes the 256 codes (trits, 0..2) of a TQ1_0 block in element
// order.
func tq1Codes(blk *[BlockTQ1_0Size]byte, c *[QK_K]uint8) {
	for m := range 32 {
		t := &tq1Trits[blk[m]]
		c[m], c[32+m], c[64+m], c[96+m], c[128+m] = t[0], t[1], t[2], t[3], t[4]
	}
	for m := range 16 {
		t := &tq1Trits[blk[32+m]]
		c[160+m], c[176+m], c[192+m], c[208+m], c[224+m] = t[0], t[1], t[2], t[3], t[4]
	}
	for j := range 4 {
		t := &tq1Trits[blk[48+j]]
		c[240+j], c[244+j], c[248+j], c[252+j] = t[0], t[1], t[2], t[3]
	}
}

// tq2Codes writes the 256 codes (0..3) of a TQ2_0 block in element order.
func tq2Codes(blk *[BlockTQ2_0Size]byte, c *[QK_K]uint8) {
	for h := range 2 {
		for m := range 32 {
			q := blk[32*h+m]
			c[128*h+m], c[128*h+32+m], c[128*h+64+m], c[128*h+96+m] = q&3, q>>2&3, q>>4&3, q>>6
		}
	}
}

func tq1D(blk *[BlockTQ1_0Size]byte) float32 {
	return FP16ToFP32(binary.LittleEndian.Uint16(blk[52:]))
}

func tq2D(blk *[BlockTQ2_0Size]byte) float32 {
	return FP16ToFP32(binary.LittleEndian.Uint16(blk[64:]))
}

// DequantizeRowTQ1_0 is dequantize_row_tq1_0: y[e] = float(code-1)*d.
// len(y) must be a multiple of 256 and src must hold len(y)/256 blocks of
// 54 bytes; blocks beyond either are ignored.
func DequantizeRowTQ1_0(src []byte, y []float32) {
	var c [QK_K]uint8
	for b := range min(len(y)/QK_K, len(src)/BlockTQ1_0Size) {
		blk := (*[BlockTQ1_0Size]byte)(src[b*BlockTQ1_0Size:])
		tq1Codes(blk, &c)
		dequantTernary(&c, tq1D(blk), (*[QK_K]float32)(y[b*QK_K:]))
	}
}

// DequantizeRowTQ2_0 is dequantize_row_tq2_0: y[e] = float(code-1)*d (a code
// of 3, which the quantizer never writes, gives 2*d). len(y) must be a
// multiple of 256 and src must hold len(y)/256 blocks of 66 bytes; blocks
// beyond either are ignored.
func DequantizeRowTQ2_0(src []byte, y []float32) {
	for b := range min(len(y)/QK_K, len(src)/BlockTQ2_0Size) {
		blk := (*[BlockTQ2_0Size]byte)(src[b*BlockTQ2_0Size:])
		d := tq2D(blk)
		vals := [4]float32{-1 * d, 0 * d, 1 * d, 2 * d}
		for h := range 2 {
			yh := (*[128]float32)(y[b*QK_K+128*h:])
			qs := (*[32]byte)(blk[32*h:])
			for m, q := range qs {
				yh[m], yh[32+m], yh[64+m], yh[96+m] = vals[q&3], vals[q>>2&3], vals[q>>4&3], vals[q>>6]
			}
		}
	}
}

// dequantTernary writes y[e] = float(code-1)*d. The four possible values
// are formed once per block: each is the same single rounded product the
// reference computes per element.
func dequantTernary(c *[QK_K]uint8, d float32, y *[QK_K]float32) {
	vals := [4]float32{-1 * d, 0 * d, 1 * d, 2 * d}
	for e, q := range c {
		y[e] = vals[q&3]
	}
}

// tqAmax is the amax loop of quantize_row_tq*_0_ref: MAX(amax, fabsf(v)).
func tqAmax(x *[QK_K]float32) float32 {
	var amax float32
	for _, v := range x {
		av := float32(math.Abs(float64(v)))
		if !(amax > av) {
			amax = av
		}
	}
	return amax
}

// lroundfTQ is lroundf (round half away from zero) of a float32, for the
// ternary quantizers; NaN and values beyond int64 give math.MinInt64 as
// x86's cvtss2si does (only reachable with non-finite input).
func lroundfTQ(f float32) int64 {
	r := math.Round(float64(f))
	if r != r || r >= 1<<63 || r < -(1<<63) {
		return math.MinInt64
	}
	return int64(r)
}

// QuantizeTQ1_0Ref is quantize_row_tq1_0_ref (also the CPU library's
// quantize_row_tq1_0): per block of 256, d = max |x| stored as f16, id = 1/d
// (0 when d is 0), trit = lroundf(x*id)+1, five trits per qs byte (x[m],
// x[m+32], ... over 32 bytes, then x[160+m], x[176+m], ... over 16 bytes)
// and four per qh byte, each packed base 3 (first trit most significant) and
// scaled to a byte by ceil(q*256/243); d is stored with ggml's software
// f32->f16 conversion (a NaN d becomes 0x7e00 with its sign). len(x) must be a
// multiple of 256; dst needs len(x)/256*54 bytes. Extra elements and blocks dst has
// no room for are ignored.
func QuantizeTQ1_0Ref(x []float32, dst []byte) {
	for b := range min(len(x)/QK_K, len(dst)/BlockTQ1_0Size) {
		xb := (*[QK_K]float32)(x[b*QK_K:])
		out := (*[BlockTQ1_0Size]byte)(dst[b*BlockTQ1_0Size:])
		d := tqAmax(xb)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(out[52:], softFP32ToFP16(d))
		trit := func(v float32) uint8 { return uint8(lroundfTQ(v*id) + 1) }
		ceil243 := func(q uint8) byte { return byte((int(q)*256 + 242) / 243) }
		for m := range 32 {
			var q uint8
			for n := range 5 {
				q = q*3 + trit(xb[m+32*n])
			}
			out[m] = ceil243(q)
		}
		for m := range 16 {
			var q uint8
			for n := range 5 {
				q = q*3 + trit(xb[160+m+16*n])
			}
			out[32+m] = ceil243(q)
		}
		for j := range 4 {
			var q uint8
			for m := range 4 {
				q = q*3 + trit(xb[240+j+4*m])
			}
			out[48+j] = ceil243(q * 3)
		}
	}
}

// QuantizeTQ2_0Ref is quantize_row_tq2_0_ref (also the CPU library's
// quantize_row_tq2_0): per block of 256, d = max |x| stored as f16, id = 1/d
// (0 when d is 0), code = (lroundf(x*id)+1)&3 at bits 2n of qs[32h+m] for
// x[128h+32n+m]; d is stored with ggml's software f32->f16 conversion (a
// NaN d becomes 0x7e00 with its sign). len(x) must be a multiple of 256; dst needs
// len(x)/256*66 bytes. Extra elements and blocks dst has no room for are
// ignored.
func QuantizeTQ2_0Ref(x []float32, dst []byte) {
	for b := range min(len(x)/QK_K, len(dst)/BlockTQ2_0Size) {
		xb := (*[QK_K]float32)(x[b*QK_K:])
		out := (*[BlockTQ2_0Size]byte)(dst[b*BlockTQ2_0Size:])
		d := tqAmax(xb)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(out[64:], softFP32ToFP16(d))
		for h := range 2 {
			for m := range 32 {
				var q uint8
				for n := range 4 {
					xi := lroundfTQ(xb[128*h+32*n+m]*id) + 1
					q += uint8(xi&3) << (2 * n)
				}
				out[32*h+m] = q
			}
		}
	}
}

// q8KD returns the d of a block_q8_K.
func q8KD(ab *[BlockQ8_KSize]byte) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(ab[:]))
}

// q8KBsum returns bsums[k] of a block_q8_K.
func q8KBsum(ab *[BlockQ8_KSize]byte, k int) int16 {
	return int16(binary.LittleEndian.Uint16(ab[q8KOffBsums+2*k:]))
}

// tqLanes finishes the integer part of the AVX2 ternary kernels: s16[k] is
// the exact sum of code*y over int16 lane k; the lane minus bsums[k] wraps
// to int16 (vpsubw), and pairs of lanes give the eight int32 lanes
// (vpmaddwd with ones).
func tqLanes(s16 *[16]int32, ab *[BlockQ8_KSize]byte, lanes *[8]int32) {
	for l := range 8 {
		lo := int16(s16[2*l] - int32(q8KBsum(ab, 2*l)))
		hi := int16(s16[2*l+1] - int32(q8KBsum(ab, 2*l+1)))
		lanes[l] = int32(lo) + int32(hi)
	}
}

// specVecDotTQ is the executable specification of the AVX2 kernels
// ggml_vec_dot_tq1_0_q8_K and ggml_vec_dot_tq2_0_q8_K, written from the
// element view: codes(b) gives block b's codes in element order and its d.
func specVecDotTQ(nb int, a []byte, codes func(b int, c *[QK_K]uint8) float32) float32 {
	var acc [8]float32
	var c [QK_K]uint8
	for b := range nb {
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		xd := codes(b, &c)
		var s16 [16]int32
		for e := range QK_K {
			s16[(e%32)/2] += int32(c[e]) * int32(int8(ab[q8KOffQs+e]))
		}
		var lanes [8]int32
		tqLanes(&s16, ab, &lanes)
		d := q8KD(ab) * xd
		for l := range 8 {
			acc[l] = fmath.FMA32(float32(lanes[l]), d, acc[l])
		}
	}
	return hsum8(&acc)
}

// specVecDotTQGeneric is the executable specification of the _generic
// ternary kernels: one exact sum of (code-1)*y per block, then
// sumf = fma(float(sum), x.d*y.d, sumf).
func specVecDotTQGeneric(nb int, a []byte, codes func(b int, c *[QK_K]uint8) float32) float32 {
	var sumf float32
	var c [QK_K]uint8
	for b := range nb {
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		xd := codes(b, &c)
		var sum int32
		for e := range QK_K {
			sum += (int32(c[e]) - 1) * int32(int8(ab[q8KOffQs+e]))
		}
		sumf = fmath.FMA32(float32(sum), xd*q8KD(ab), sumf)
	}
	return sumf
}

// VecDotTQ1_0Q8_K is ggml_vec_dot_tq1_0_q8_K of the haswell variant (AVX2):
// the dot product of nb TQ1_0 blocks w (54 bytes each) with nb Q8_K blocks a
// (292 bytes each, bsums used as stored). nb is clamped to the whole blocks
// both slices hold.
func VecDotTQ1_0Q8_K(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockTQ1_0Size)
	var acc [8]float32
	var lanes [8]int32
	var c [QK_K]uint8
	for b := range nb {
		blk := (*[BlockTQ1_0Size]byte)(w[b*BlockTQ1_0Size:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		y := (*[QK_K]byte)(ab[q8KOffQs:])
		tq1Codes(blk, &c)
		var s16 [16]int32
		for ch := range 8 { // int16 lane k: elements 2k, 2k+1 of every chunk
			cc := (*[32]uint8)(c[32*ch:])
			yc := (*[32]byte)(y[32*ch:])
			for k := range 16 {
				s16[k] += int32(cc[2*k])*int32(int8(yc[2*k])) + int32(cc[2*k+1])*int32(int8(yc[2*k+1]))
			}
		}
		tqLanes(&s16, ab, &lanes)
		d := q8KD(ab) * tq1D(blk)
		for l := range 8 {
			acc[l] = fmath.FMA32(float32(lanes[l]), d, acc[l])
		}
	}
	return hsum8(&acc)
}

// VecDotTQ1_0Q8_KGeneric is ggml_vec_dot_tq1_0_q8_K_generic as compiled in
// the haswell library: per block the exact sum of (code-1)*y, then
// sumf = fma(float(sum), x.d*y.d, sumf). Same arguments as VecDotTQ1_0Q8_K.
func VecDotTQ1_0Q8_KGeneric(w, a []byte, nb int) float32 {
	return vecDotTQ1_0Generic(w, a, nb, true)
}

// vecDotTQ1_0Generic is the generic TQ1_0 loop, its sumf += float(sum)*d
// fused (the FMA builds) or not (x64, sse42, sandybridge, ivybridge).
func vecDotTQ1_0Generic(w, a []byte, nb int, fused bool) float32 {
	nb = kBlocks(w, a, nb, BlockTQ1_0Size)
	var sumf float32
	var c [QK_K]uint8
	for b := range nb {
		blk := (*[BlockTQ1_0Size]byte)(w[b*BlockTQ1_0Size:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		y := (*[QK_K]byte)(ab[q8KOffQs:])
		tq1Codes(blk, &c)
		var s0, s1 int32
		for e := 0; e < QK_K; e += 2 {
			s0 += (int32(c[e]) - 1) * int32(int8(y[e]))
			s1 += (int32(c[(e+1)&255]) - 1) * int32(int8(y[(e+1)&255]))
		}
		sumf = mulAdd(float32(s0+s1), tq1D(blk)*q8KD(ab), sumf, fused)
	}
	return sumf
}

// VecDotTQ2_0Q8_K is ggml_vec_dot_tq2_0_q8_K of the haswell variant (AVX2):
// the dot product of nb TQ2_0 blocks w (66 bytes each) with nb Q8_K blocks a
// (292 bytes each, bsums used as stored). nb is clamped to the whole blocks
// both slices hold.
func VecDotTQ2_0Q8_K(w, a []byte, nb int) float32 {
	nb = kBlocks(w, a, nb, BlockTQ2_0Size)
	var acc [8]float32
	var lanes [8]int32
	for b := range nb {
		blk := (*[BlockTQ2_0Size]byte)(w[b*BlockTQ2_0Size:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		y := (*[QK_K]byte)(ab[q8KOffQs:])
		var s16 [16]int32
		// Element 128h+32n+m is bits 2n of qs[32h+m], in int16 lane m/2.
		for h := range 2 {
			qs := (*[32]byte)(blk[32*h:])
			yh := (*[128]byte)(y[128*h:])
			for m := 0; m < 32; m += 2 {
				q0, q1 := int32(qs[m]), int32(qs[m+1])
				s16[m/2] += (q0&3)*int32(int8(yh[m])) + (q1&3)*int32(int8(yh[m+1])) +
					(q0>>2&3)*int32(int8(yh[32+m])) + (q1>>2&3)*int32(int8(yh[32+m+1])) +
					(q0>>4&3)*int32(int8(yh[64+m])) + (q1>>4&3)*int32(int8(yh[64+m+1])) +
					(q0>>6)*int32(int8(yh[96+m])) + (q1>>6)*int32(int8(yh[96+m+1]))
			}
		}
		tqLanes(&s16, ab, &lanes)
		d := q8KD(ab) * tq2D(blk)
		for l := range 8 {
			acc[l] = fmath.FMA32(float32(lanes[l]), d, acc[l])
		}
	}
	return hsum8(&acc)
}

// VecDotTQ2_0Q8_KGeneric is ggml_vec_dot_tq2_0_q8_K_generic as compiled in
// the haswell library: per block the exact sum of (code-1)*y, then
// sumf = fma(float(sum), y.d*x.d, sumf). Same arguments as VecDotTQ2_0Q8_K.
func VecDotTQ2_0Q8_KGeneric(w, a []byte, nb int) float32 {
	return vecDotTQ2_0Generic(w, a, nb, true)
}

// vecDotTQ2_0Generic is the generic TQ2_0 loop, its sumf += float(sum)*d
// fused (the FMA builds) or not (x64, sse42, sandybridge, ivybridge).
func vecDotTQ2_0Generic(w, a []byte, nb int, fused bool) float32 {
	nb = kBlocks(w, a, nb, BlockTQ2_0Size)
	var sumf float32
	for b := range nb {
		blk := (*[BlockTQ2_0Size]byte)(w[b*BlockTQ2_0Size:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		y := (*[QK_K]byte)(ab[q8KOffQs:])
		// sum (code-1)*y = sum code*y - sum y.
		var sum, ysum int32
		for h := range 2 {
			qs := (*[32]byte)(blk[32*h:])
			yh := (*[128]byte)(y[128*h:])
			for m := range 32 {
				q := int32(qs[m])
				y0, y1, y2, y3 := int32(int8(yh[m])), int32(int8(yh[32+m])), int32(int8(yh[64+m])), int32(int8(yh[96+m]))
				sum += (q&3)*y0 + (q>>2&3)*y1 + (q>>4&3)*y2 + (q>>6)*y3
				ysum += y0 + y1 + y2 + y3
			}
		}
		sumf = mulAdd(float32(sum-ysum), q8KD(ab)*tq2D(blk), sumf, fused)
	}
	return sumf
}
