package quant

import (
	"encoding/binary"

	"github.com/bankml/bankml/fmath"
)

// BlockQ5_0Size is sizeof(block_q5_0): f16 d, qh (4 bytes, little-endian
// uint32: bit i is the fifth bit of element i), then 16 bytes of nibbles
// (element i < 16 in the low nibble of qs[i], element i+16 in its high
// nibble); weight = (nibble | bit<<4) - 16, times d. 22 bytes per 32 weights.
const BlockQ5_0Size = 2 + 4 + QK8_0/2

// BlockQ5_1Size is sizeof(block_q5_1): f16 d, f16 m, qh, 16 bytes of nibbles
// laid out as in Q5_0; weight = (nibble | bit<<4)*d + m. 24 bytes per 32
// weights.
const BlockQ5_1Size = 4 + 4 + QK8_0/2

// q5Values unpacks the 32 five-bit codes (0..31) of a Q5_0 or Q5_1 block
// from its qh word and 16 nibble bytes.
func q5Values(qh uint32, qs []byte, x *[32]uint8) {
	qs = qs[:16]
	for i := range 16 {
		x[i] = qs[i]&0xf | uint8(qh>>i&1)<<4
		x[i+16] = qs[i]>>4 | uint8(qh>>(i+16)&1)<<4
	}
}

// q5LaneCodes packs the 32 five-bit codes of a Q5_0/Q5_1 block as eight
// uint32, four codes (one byte each, element 4j+k in byte k) per lane j:
// each qh bit moved to bit 4 of its byte (b·0x00204081 puts bit k at bit 8k).
func q5LaneCodes(qh uint32, qs []byte, c *[8]uint32) {
	qs = qs[:16]
	for j := range 4 {
		q := binary.LittleEndian.Uint32(qs[4*j:])
		c[j] = q&0x0f0f0f0f | (qh>>(4*j)&0xf*0x00204081&0x01010101)<<4
		c[4+j] = q>>4&0x0f0f0f0f | (qh>>(16+4*j)&0xf*0x00204081&0x01010101)<<4
	}
}

// DequantizeRowQ5_0 is dequantize_row_q5_0 (libggml-base.so): y =
// float(code-16)*d per block. len(y) should be a multiple of 32; src holds
// len(y)/32 blocks of 22 bytes. Blocks missing from src are not written.
func DequantizeRowQ5_0(src []byte, y []float32) {
	nb := min(len(y)/QK8_0, len(src)/BlockQ5_0Size)
	f16 := legacyF16Table()
	var x [32]uint8
	for b := range nb {
		blk := src[b*BlockQ5_0Size : (b+1)*BlockQ5_0Size]
		d := f16[binary.LittleEndian.Uint16(blk)]
		q5Values(binary.LittleEndian.Uint32(blk[2:]), blk[6:], &x)
		yb := y[b*QK8_0 : (b+1)*QK8_0]
		for i := range 32 {
			yb[i] = float32(int32(x[i])-16) * d
		}
	}
}

// DequantizeRowQ5_1 is dequantize_row_q5_1 (libggml-base.so): y =
// float(code)*d + m per block, the product and the sum rounded separately.
// len(y) should be a multiple of 32; src holds len(y)/32 blocks of 24 bytes.
func DequantizeRowQ5_1(src []byte, y []float32) {
	nb := min(len(y)/QK8_0, len(src)/BlockQ5_1Size)
	f16 := legacyF16Table()
	var x [32]uint8
	for b := range nb {
		blk := src[b*BlockQ5_1Size : (b+1)*BlockQ5_1Size]
		d := f16[binary.LittleEndian.Uint16(blk[0:])]
		m := f16[binary.LittleEndian.Uint16(blk[2:])]
		q5Values(binary.LittleEndian.Uint32(blk[4:]), blk[8:], &x)
		yb := y[b*QK8_0 : (b+1)*QK8_0]
		for i := range 32 {
			yb[i] = float32(float32(x[i])*d) + m
		}
	}
}

// QuantizeRowQ5_0Ref is quantize_row_q5_0_ref (libggml-base.so; also the CPU
// library's quantize_row_q5_0): per block of 32, max = the first x of
// largest |x| (NaNs skipped), d = max/-16 stored as f16, id = 1/d (0 when d
// is 0), code = MIN(31, (int8)(x*id + 16.5)) with the product and the sum
// rounded separately and the cast truncating through cvttss2si. len(x)
// should be a multiple of 32; dst needs len(x)/32*22 bytes.
func QuantizeRowQ5_0Ref(x []float32, dst []byte) {
	nb := min(len(x)/QK8_0, len(dst)/BlockQ5_0Size)
	for b := range nb {
		xb := x[b*QK8_0 : (b+1)*QK8_0]
		out := dst[b*BlockQ5_0Size : (b+1)*BlockQ5_0Size]
		var amax, vmax float32
		for _, v := range xb {
			if a := absBits(v); amax < a {
				amax, vmax = a, v
			}
		}
		d := vmax / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(out[0:], softFP32ToFP16(d))
		var qh uint32
		for j := range 16 {
			q0 := uint8(min(31, int8(cvttss2si(float32(xb[j]*id)+16.5))))
			q1 := uint8(min(31, int8(cvttss2si(float32(xb[j+16]*id)+16.5))))
			out[6+j] = q0&0xf | q1&0xf<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(out[2:], qh)
	}
}

// QuantizeRowQ5_1Ref is quantize_row_q5_1_ref (libggml-base.so; also the CPU
// library's quantize_row_q5_1): per block of 32, min and max of x (NaNs
// skipped), d = (max-min)/31, id = 1/d (0 when d is 0), d and min stored as
// f16, code = (uint8)((x-min)*id + 0.5) — no clamp; the cast keeps the low
// byte of cvttss2si — every operation rounded separately. len(x) should be
// a multiple of 32; dst needs len(x)/32*24 bytes.
func QuantizeRowQ5_1Ref(x []float32, dst []byte) {
	nb := min(len(x)/QK8_0, len(dst)/BlockQ5_1Size)
	for b := range nb {
		xb := x[b*QK8_0 : (b+1)*QK8_0]
		out := dst[b*BlockQ5_1Size : (b+1)*BlockQ5_1Size]
		lo, id := legacyMinMaxHeader(xb, out, 31)
		var qh uint32
		for j := range 16 {
			q0 := uint8(cvttss2si(float32((xb[j]-lo)*id) + 0.5))
			q1 := uint8(cvttss2si(float32((xb[j+16]-lo)*id) + 0.5))
			out[8+j] = q0&0xf | q1&0xf<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(out[4:], qh)
	}
}

// hasInt8Min reports whether any of the 32 bytes of b is 0x80 (int8 -128),
// the one activation value for which the vpsignb trick of
// mul_sum_i8_pairs_float differs from the true product.
func hasInt8Min(b []byte) bool {
	b = b[:32]
	const lo7, hi1 = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	for i := 0; i < 32; i += 8 {
		v := binary.LittleEndian.Uint64(b[i:]) ^ hi1 // 0x80 bytes become 0
		// A byte's top bit of ((v&0x7f)+0x7f)|v is clear exactly when the byte is 0.
		if ((v&lo7)+lo7)|v|lo7 != ^uint64(0) {
			return true
		}
	}
	return false
}

// q5_0SignedProduct is one byte pair of vpsignb/vpmaddubsw in
// mul_sum_i8_pairs_float: |x| times y with the sign of x applied to y in
// int8 arithmetic, so y = -128 against x < 0 gives -128·|x|.
func q5_0SignedProduct(x, y int8) int32 {
	return int32(signEpi8(x, x)) * int32(signEpi8(y, x))
}

// q5_0LaneSums computes the eight int32 lanes of ggml_vec_dot_q5_0_q8_0's
// mul_sum_i8_pairs_float(code-16, y): lane j sums elements 4j..4j+3. The
// products are exact (|x| <= 16, so no pair saturates); blocks holding an
// activation of -128 take the vpsignb form.
func q5_0LaneSums(c *[8]uint32, y []byte, ls *[8]int32) {
	y = y[:32]
	if hasInt8Min(y) {
		for j := range 8 {
			var s int32
			for k := range 4 {
				s += q5_0SignedProduct(int8(c[j]>>(8*k))-16, int8(y[4*j+k]))
			}
			ls[j] = s
		}
		return
	}
	var yf [8]uint64
	legacyActFields(y, &yf)
	for j := range 8 {
		ls[j] = legacyLane4(legacyWeightField(c[j], 16), yf[j])
	}
}

// VecDotQ5_0Q8_0 is ggml_vec_dot_q5_0_q8_0 of the haswell variant, and
// equally one output of tinyBLAS_Q0_AVX<block_q5_0> (mul_mat with two or
// more columns): per block d = d_w*d_a, eight lanes acc[j] = fma(d, lane sum
// j, acc[j]) with the lane sums of mul_sum_i8_pairs_float (see
// q5_0LaneSums), then hsum. w holds nb Q5_0 blocks, a nb Q8_0 blocks; blocks
// beyond either slice are not read.
func VecDotQ5_0Q8_0(w, a []byte, nb int) float32 {
	nb = min(nb, len(w)/BlockQ5_0Size, len(a)/BlockQ8_0Size)
	f16 := legacyF16Table()
	var acc [8]float32
	var c [8]uint32
	var ls [8]int32
	for b := range nb {
		wb := w[b*BlockQ5_0Size : (b+1)*BlockQ5_0Size]
		ab := a[b*BlockQ8_0Size : (b+1)*BlockQ8_0Size]
		d := f16[binary.LittleEndian.Uint16(wb)] * f16[binary.LittleEndian.Uint16(ab)]
		q5LaneCodes(binary.LittleEndian.Uint32(wb[2:]), wb[6:], &c)
		q5_0LaneSums(&c, ab[2:], &ls)
		legacyFMA8(d, &ls, &acc)
	}
	return hsum8(&acc)
}

// VecDotQ5_0Q8_0Generic is ggml_vec_dot_q5_0_q8_0_generic as compiled in the
// haswell library: per block the exact integer dot product sumi (true
// products, no vpsignb quirk), then sumf = fma(d_w*d_a, float(sumi), sumf).
// w holds nb Q5_0 blocks, a nb Q8_0 blocks.
func VecDotQ5_0Q8_0Generic(w, a []byte, nb int) float32 {
	nb = min(nb, len(w)/BlockQ5_0Size, len(a)/BlockQ8_0Size)
	f16 := legacyF16Table()
	var sumf float32
	var c [8]uint32
	var yf [8]uint64
	for b := range nb {
		wb := w[b*BlockQ5_0Size : (b+1)*BlockQ5_0Size]
		ab := a[b*BlockQ8_0Size : (b+1)*BlockQ8_0Size]
		q5LaneCodes(binary.LittleEndian.Uint32(wb[2:]), wb[6:], &c)
		legacyActFields(ab[2:], &yf)
		var sumi int32
		for j := range 8 {
			sumi += legacyLane4(legacyWeightField(c[j], 16), yf[j])
		}
		d := f16[binary.LittleEndian.Uint16(wb)] * f16[binary.LittleEndian.Uint16(ab)]
		sumf = fmath.FMA32(d, float32(sumi), sumf)
	}
	return sumf
}

// q5_1LaneSums computes the eight int32 lanes of
// mul_sum_us8_pairs_float(code, y) in ggml_vec_dot_q5_1_q8_1: lane j sums
// elements 4j..4j+3. Exact (31·128·2 < 32767).
func q5_1LaneSums(c *[8]uint32, y []byte, ls *[8]int32) {
	var yf [8]uint64
	legacyActFields(y, &yf)
	for j := range 8 {
		ls[j] = legacyLane4(legacyWeightField(c[j], 0), yf[j])
	}
}

// VecDotQ5_1Q8_1 is ggml_vec_dot_q5_1_q8_1 of the haswell variant (the only
// path mul_mat takes for Q5_1 on AVX2): per block summs = fma(m_w, s_a,
// summs), eight lanes acc[j] = fma(float(lane sum j), d_w*d_a, acc[j]); the
// result is hsum(acc) + summs. w holds nb Q5_1 blocks, a nb Q8_1 blocks.
func VecDotQ5_1Q8_1(w, a []byte, nb int) float32 {
	nb = min(nb, len(w)/BlockQ5_1Size, len(a)/BlockQ8_1Size)
	f16 := legacyF16Table()
	var acc [8]float32
	var c [8]uint32
	var ls [8]int32
	var summs float32
	for b := range nb {
		wb := w[b*BlockQ5_1Size : (b+1)*BlockQ5_1Size]
		ab := a[b*BlockQ8_1Size : (b+1)*BlockQ8_1Size]
		summs = fmath.FMA32(f16[binary.LittleEndian.Uint16(wb[2:])], f16[binary.LittleEndian.Uint16(ab[2:])], summs)
		d := f16[binary.LittleEndian.Uint16(wb)] * f16[binary.LittleEndian.Uint16(ab)]
		q5LaneCodes(binary.LittleEndian.Uint32(wb[4:]), wb[8:], &c)
		q5_1LaneSums(&c, ab[4:], &ls)
		legacyFMA8(d, &ls, &acc) // fma(float(ls), d, acc): the same product
	}
	return hsum8(&acc) + summs
}

// VecDotQ5_1Q8_1Generic is ggml_vec_dot_q5_1_q8_1_generic as compiled in the
// haswell library: per block the exact integer dot product sumi, then sumf
// += fma(d_w*d_a, float(sumi), m_w*s_a). w holds nb Q5_1 blocks, a nb Q8_1
// blocks.
func VecDotQ5_1Q8_1Generic(w, a []byte, nb int) float32 {
	nb = min(nb, len(w)/BlockQ5_1Size, len(a)/BlockQ8_1Size)
	f16 := legacyF16Table()
	var sumf float32
	var c [8]uint32
	var ls [8]int32
	for b := range nb {
		wb := w[b*BlockQ5_1Size : (b+1)*BlockQ5_1Size]
		ab := a[b*BlockQ8_1Size : (b+1)*BlockQ8_1Size]
		q5LaneCodes(binary.LittleEndian.Uint32(wb[4:]), wb[8:], &c)
		q5_1LaneSums(&c, ab[4:], &ls)
		sumi := ls[0] + ls[1] + ls[2] + ls[3] + ls[4] + ls[5] + ls[6] + ls[7]
		d := f16[binary.LittleEndian.Uint16(wb)] * f16[binary.LittleEndian.Uint16(ab)]
		ms := f16[binary.LittleEndian.Uint16(wb[2:])] * f16[binary.LittleEndian.Uint16(ab[2:])]
		sumf += fmath.FMA32(d, float32(sumi), ms)
	}
	return sumf
}
