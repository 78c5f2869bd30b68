package quant

import "encoding/binary"

// Models of the plain-C scalar loops ggml exports as
// ggml_vec_dot_{q8_0,q4_0,q1_0}_q8_0_generic (ggml-cpu/quants.c), in the
// float order GCC compiled them to in the haswell library: where the
// compiled code fuses a multiply-add (vfmadd231ss) the model fuses it
// (mulAdd, fmath.FMA32), and every other product is rounded to float32 explicitly, so
// that Go cannot fuse it. The integer sums are exact in any order.
// (ggml_vec_dot_q2_0_q8_0_generic is not exported by the library.)

// VecDotQ8_0Q8_0Generic is ggml_vec_dot_q8_0_q8_0_generic as compiled in the
// haswell library: per block the exact integer dot sumi, d = dx*dy rounded
// (vmulss), then sumf = fma(float(sumi), d, sumf) (vfmadd231ss). w and a hold
// nb Q8_0 blocks each.
func VecDotQ8_0Q8_0Generic(w, a []byte, nb int) float32 {
	return vecDotQ8_0Generic(w, a, nb, true)
}

// vecDotQ8_0Generic is the loop of VecDotQ8_0Q8_0Generic, its multiply-adds fused (the FMA
// builds) or each product rounded first (the builds without FMA).
func vecDotQ8_0Generic(w, a []byte, nb int, fused bool) float32 {
	nb = min(nb, len(w)/BlockQ8_0Size, len(a)/BlockQ8_0Size)
	var sumf float32
	for b := range nb {
		wb := w[b*BlockQ8_0Size : (b+1)*BlockQ8_0Size]
		ab := a[b*BlockQ8_0Size : (b+1)*BlockQ8_0Size]
		var sumi int32
		for j := range QK8_0 {
			sumi += int32(int8(wb[2+j])) * int32(int8(ab[2+j]))
		}
		d := float32(FP16ToFP32(binary.LittleEndian.Uint16(wb)) * FP16ToFP32(binary.LittleEndian.Uint16(ab)))
		sumf = mulAdd(float32(sumi), d, sumf, fused)
	}
	return sumf
}

// VecDotQ4_0Q8_0Generic is ggml_vec_dot_q4_0_q8_0_generic as compiled in the
// haswell library: per block the exact integer dot sumi of the nibbles-8
// against the activations, p = float(sumi)*dx rounded (vmulss), then
// sumf = fma(p, dy, sumf) (vfmadd231ss), as C's left-to-right
// sumi*dx*dy. w holds nb Q4_0 blocks, a nb Q8_0 blocks.
func VecDotQ4_0Q8_0Generic(w, a []byte, nb int) float32 {
	return vecDotQ4_0Generic(w, a, nb, true)
}

// vecDotQ4_0Generic is the loop of VecDotQ4_0Q8_0Generic, its multiply-adds fused (the FMA
// builds) or each product rounded first (the builds without FMA).
func vecDotQ4_0Generic(w, a []byte, nb int, fused bool) float32 {
	nb = min(nb, len(w)/BlockQ4_0Size, len(a)/BlockQ8_0Size)
	var sumf float32
	for b := range nb {
		wb := w[b*BlockQ4_0Size : (b+1)*BlockQ4_0Size]
		ab := a[b*BlockQ8_0Size : (b+1)*BlockQ8_0Size]
		var sumi int32
		for j := range QK8_0 / 2 {
			q := wb[2+j]
			sumi += (int32(q&0x0f) - 8) * int32(int8(ab[2+j]))
			sumi += (int32(q>>4) - 8) * int32(int8(ab[2+j+QK8_0/2]))
		}
		p := float32(float32(sumi) * FP16ToFP32(binary.LittleEndian.Uint16(wb)))
		sumf = mulAdd(p, FP16ToFP32(binary.LittleEndian.Uint16(ab)), sumf, fused)
	}
	return sumf
}

// VecDotQ1_0Q8_0Generic is ggml_vec_dot_q1_0_q8_0_generic as compiled in the
// haswell library: w holds nb Q1_0 blocks, a the 4*nb Q8_0 blocks of the
// activation row. Per Q1_0 block, for each of its four Q8_0 sub-blocks K the
// exact integer sum s_K of ±qy (bit set: +, clear: −), then
// sumi = fma(float(s_K), dy_K, sumi) from sumi = 0 (vfmadd231ss), and
// sumf = fma(d, sumi, sumf) (vfmadd231ss).
func VecDotQ1_0Q8_0Generic(w, a []byte, nb int) float32 {
	return vecDotQ1_0Generic(w, a, nb, true)
}

// vecDotQ1_0Generic is the loop of VecDotQ1_0Q8_0Generic, its multiply-adds fused (the FMA
// builds) or each product rounded first (the builds without FMA).
func vecDotQ1_0Generic(w, a []byte, nb int, fused bool) float32 {
	nb = min(nb, len(w)/BlockQ1_0Size, len(a)/(4*BlockQ8_0Size))
	var sumf float32
	for b := range nb {
		wb := w[b*BlockQ1_0Size : (b+1)*BlockQ1_0Size]
		d0 := FP16ToFP32(binary.LittleEndian.Uint16(wb))
		var sumi float32
		for k := range 4 {
			ab := a[(4*b+k)*BlockQ8_0Size : (4*b+k+1)*BlockQ8_0Size]
			d1 := FP16ToFP32(binary.LittleEndian.Uint16(ab))
			var s int32
			for e := range QK8_0 {
				q := int32(int8(ab[2+e]))
				if wb[2+4*k+e/8]>>(e%8)&1 != 0 {
					s += q
				} else {
					s -= q
				}
			}
			sumi = mulAdd(float32(s), d1, sumi, fused)
		}
		sumf = mulAdd(d0, sumi, sumf, fused)
	}
	return sumf
}
