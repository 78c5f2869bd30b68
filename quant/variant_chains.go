package quant

import (
	"encoding/binary"
	"math"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/cpuvariant"
)

// Chains of CPU variants other than haswell that bankml models so far, for
// the CPU variants sweep (docs/exactness.md, "CPU variants"): the dot
// products of the AVX builds without AVX2 (sandybridge, ivybridge: no FMA;
// piledriver: FMA), the __AVX__ branches of
// ggml/src/ggml-cpu/arch/x86/quants.c, and the generic loops as the builds
// without FMA compile them. fused says whether a build contracts a*b+c
// (piledriver's vfmadd231ps/ss, read with objdump).

// mulAdd is a*b+c as the build computes it: one rounding when fused, else
// the product rounded first.
func mulAdd(a, b, c float32, fused bool) float32 {
	if fused {
		return fmath.FMA32(a, b, c)
	}
	return float32(a*b) + c
}

// avxLanes4 is mul_sum_i8_quad_float's (and the Q4_0 branch's int16 adds
// and sum_i16_pairs_float's) lane sums of one block: lane k is the
// maddubs-saturated sum of bytes 4k..4k+3 and 16+4k..16+4k+3, i.e. AVX2's
// lanes k and k+4 added.
func avxLanes4(x, y *[32]int8, out []int32) {
	var ls [8]int32
	laneSums8(x, y, &ls)
	for k := range 4 {
		out[k] = ls[k] + ls[k+4]
	}
}

// vecDotQ8_0Q8_0AVX is ggml_vec_dot_q8_0_q8_0 of the AVX builds: two blocks
// per step, lanes 0..3 of the first and 4..7 of the second, each
// acc = acc + (dx*dy)·lane; hsum_float_8; an odd last block scalar,
// sumf += sumi·(dx*dy) with the exact integer sum.
func vecDotQ8_0Q8_0AVX(w, a []byte, nb int, fused bool) float32 {
	var acc [8]float32
	var x, y [32]int8
	var ls [8]int32
	b := 0
	for ; b+1 < nb; b += 2 {
		for h := range 2 {
			wb, ab := w[(b+h)*BlockQ8_0Size:], a[(b+h)*BlockQ8_0Size:]
			d := FP16ToFP32(binary.LittleEndian.Uint16(wb)) * FP16ToFP32(binary.LittleEndian.Uint16(ab))
			for i := range 32 {
				x[i], y[i] = int8(wb[2+i]), int8(ab[2+i])
			}
			avxLanes4(&x, &y, ls[4*h:4*h+4])
			for k := 4 * h; k < 4*h+4; k++ {
				acc[k] = mulAdd(d, float32(ls[k]), acc[k], fused)
			}
		}
	}
	sumf := hsum8(&acc)
	for ; b < nb; b++ {
		wb, ab := w[b*BlockQ8_0Size:], a[b*BlockQ8_0Size:]
		var sumi int32
		for i := range 32 {
			sumi += int32(int8(wb[2+i])) * int32(int8(ab[2+i]))
		}
		d := FP16ToFP32(binary.LittleEndian.Uint16(wb)) * FP16ToFP32(binary.LittleEndian.Uint16(ab))
		sumf = mulAdd(float32(sumi), d, sumf, fused)
	}
	return sumf
}

// vecDotQ4_0Q8_0AVX is ggml_vec_dot_q4_0_q8_0 of the AVX builds: as
// vecDotQ8_0Q8_0AVX with the weights unpacked to nibble-8 (the int16 adds
// cannot wrap: |pair| ≤ 2048); an odd last block sumf += (sumi·dx)·dy.
func vecDotQ4_0Q8_0AVX(w, a []byte, nb int, fused bool) float32 {
	var acc [8]float32
	var x, y [32]int8
	var ls [8]int32
	b := 0
	for ; b+1 < nb; b += 2 {
		for h := range 2 {
			wb, ab := w[(b+h)*BlockQ4_0Size:], a[(b+h)*BlockQ8_0Size:]
			d := FP16ToFP32(binary.LittleEndian.Uint16(wb)) * FP16ToFP32(binary.LittleEndian.Uint16(ab))
			q4_0Values(wb, &x)
			for i := range 32 {
				y[i] = int8(ab[2+i])
			}
			avxLanes4(&x, &y, ls[4*h:4*h+4])
			for k := 4 * h; k < 4*h+4; k++ {
				acc[k] = mulAdd(d, float32(ls[k]), acc[k], fused)
			}
		}
	}
	sumf := hsum8(&acc)
	for ; b < nb; b++ {
		wb, ab := w[b*BlockQ4_0Size:], a[b*BlockQ8_0Size:]
		q4_0Values(wb, &x)
		var sumi int32
		for i := range 32 {
			sumi += int32(x[i]) * int32(int8(ab[2+i]))
		}
		t := float32(sumi) * FP16ToFP32(binary.LittleEndian.Uint16(wb))
		sumf = mulAdd(t, FP16ToFP32(binary.LittleEndian.Uint16(ab)), sumf, fused)
	}
	return sumf
}

// vecDotQ2_0Q8_0NoFMA is ggml_vec_dot_q2_0_q8_0 of the builds without FMA
// (x64, sse42, sandybridge, ivybridge: the same generic C loop as haswell's,
// compiled to mulss/addss):
// s = +0 + float(isum0)*dy0, s += float(isum1)*dy1, sumf += s*d, each
// product and sum rounded.
func vecDotQ2_0Q8_0NoFMA(w, a []byte, nb int) float32 {
	var sumf float32
	for b := range nb {
		wb := w[b*BlockQ2_0Size:]
		a0, a1 := a[2*b*BlockQ8_0Size:], a[(2*b+1)*BlockQ8_0Size:]
		var s float32
		s += float32(float32(q2SubSum(wb[2:10], a0[2:])) * FP16ToFP32(binary.LittleEndian.Uint16(a0)))
		s += float32(float32(q2SubSum(wb[10:18], a1[2:])) * FP16ToFP32(binary.LittleEndian.Uint16(a1)))
		sumf += float32(s * FP16ToFP32(binary.LittleEndian.Uint16(wb)))
	}
	return sumf
}

// vecDotQ1_0AVX is ggml_vec_dot_q1_0_q8_0 of the AVX builds without AVX2
// (sandybridge, ivybridge): haswell's lanes and order with the block scale
// multiplied and added apart (the sub-block products are exact either way:
// see VecDotQ1_0Q8_0).
func vecDotQ1_0AVX(w, a []byte, nb int) float32 {
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
			for j := range 8 {
				if k == 0 {
					blk[j] = dy * float32(ls[j])
				} else {
					blk[j] += float32(dy * float32(ls[j]))
				}
			}
		}
		for j := range 8 {
			acc[j] += float32(d0 * blk[j])
		}
	}
	return hsum8(&acc)
}

// vecDotQ1_0SSSE3 is ggml_vec_dot_q1_0_q8_0 of the sse42 build (its SSSE3
// branch): one 4-lane accumulator per Q8_0 sub-block K, lane l holding the
// sums of bytes 4l..4l+3 and 16+4l..16+4l+3, acc_K += ((d0*dy_K)·q) with
// every product rounded; hsum_float_4x4 of the four (hadd pairs, then the
// pairs' sums, then those).
func vecDotQ1_0SSSE3(w, a []byte, nb int) float32 {
	var acc [4][4]float32
	var ls [8]int32
	for b := range nb {
		wb := w[b*BlockQ1_0Size : (b+1)*BlockQ1_0Size]
		d0 := FP16ToFP32(binary.LittleEndian.Uint16(wb))
		for k := range 4 {
			ab := a[(4*b+k)*BlockQ8_0Size : (4*b+k+1)*BlockQ8_0Size]
			d := d0 * FP16ToFP32(binary.LittleEndian.Uint16(ab))
			q1LaneSums(binary.LittleEndian.Uint32(wb[2+4*k:]), ab[2:], &ls)
			for l := range 4 {
				acc[k][l] += float32(d * float32(ls[l]+ls[l+4]))
			}
		}
	}
	var s [4]float32
	for k := range 4 {
		s[k] = (acc[k][0] + acc[k][1]) + (acc[k][2] + acc[k][3])
	}
	return (s[0] + s[1]) + (s[2] + s[3])
}

// quantizeRowQ8_0Ref is quantize_row_q8_0_ref of libggml-base.so, which the
// x64 and sse42 builds' quantize_row_q8_0 calls (no AVX branch): as
// QuantizeRowQ8_1Ref without the sum, amax = max |x| (amax > |x| ? amax :
// |x|), d = amax/127 stored by the software f16 conversion, id = 1/d (0
// when d is 0), q = (int8)roundf(x*id) (halves away from zero, truncated
// through cvttss2si). len(x) a multiple of 32; dst needs len(x)/32*34 bytes.
func quantizeRowQ8_0Ref(x []float32, dst []byte) {
	nb := min(len(x)/QK8_0, len(dst)/BlockQ8_0Size)
	for b := range nb {
		xb := x[b*QK8_0 : (b+1)*QK8_0]
		out := dst[b*BlockQ8_0Size : (b+1)*BlockQ8_0Size]
		var amax float32
		for _, v := range xb {
			amax = legacyMaxPS(amax, absBits(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(out, softFP32ToFP16(d))
		for i, v := range xb {
			out[2+i] = byte(int8(cvttss2si(float32(math.Round(float64(v * id))))))
		}
	}
}

// variantQuantizeQ8_0 returns quantize_row_q8_0 as variant v computes it
// where it differs from haswell's and bankml models it, else nil.
func variantQuantizeQ8_0(v Variant) func(x []float32, dst []byte) {
	if v == cpuvariant.X64 || v == cpuvariant.SSE42 {
		return quantizeRowQ8_0Ref
	}
	return nil
}

// variantVecDotOnly reports whether v's mul_mat takes typ's vec_dot for two
// or more columns too: always but for the types llamafile's tinyBLAS_Q0
// takes in the builds with AVX (Q8_0, Q4_0, Q5_0; its per-output chain is
// not the AVX builds' vec_dot's).
func variantVecDotOnly(v Variant, typ gguf.GGMLType) bool {
	switch typ {
	case gguf.Q8_0, gguf.Q4_0, gguf.Q5_0:
		return v == cpuvariant.X64 || v == cpuvariant.SSE42
	}
	return true
}

// variantDot returns the block dot product of typ as variant v computes it
// where its chain differs from haswell's and bankml models it, else nil (the
// sweep falls back to haswell's kernel; a variant is matched only once all
// its paths are modelled: Modelled).
func variantDot(v Variant, typ gguf.GGMLType) func(w, a []byte, nb int) float32 {
	unfused := func(f func(w, a []byte, nb int, fused bool) float32) func(w, a []byte, nb int) float32 {
		return func(w, a []byte, nb int) float32 { return f(w, a, nb, false) }
	}
	switch {
	case v == cpuvariant.X64 && typ == gguf.Q4_0:
		return unfused(vecDotQ4_0Generic)
	case v == cpuvariant.X64 && typ == gguf.Q1_0:
		return unfused(vecDotQ1_0Generic)
	case v == cpuvariant.SSE42 && typ == gguf.Q1_0:
		return vecDotQ1_0SSSE3
	case (v == cpuvariant.SandyBridge || v == cpuvariant.IvyBridge) && typ == gguf.Q1_0:
		return vecDotQ1_0AVX
	case (v == cpuvariant.X64 || v == cpuvariant.SSE42) && typ == gguf.Q8_0:
		// sse42 has no SSSE3 branch for Q8_0: its scalar loop is the generic one.
		return unfused(vecDotQ8_0Generic)
	}
	switch v {
	case cpuvariant.X64, cpuvariant.SSE42, cpuvariant.SandyBridge, cpuvariant.IvyBridge:
		// ggml's generic C loops, compiled without FMA.
		switch typ {
		case gguf.Q2_0:
			return vecDotQ2_0Q8_0NoFMA
		case gguf.TQ1_0:
			return unfused(vecDotTQ1_0Generic)
		case gguf.TQ2_0:
			return unfused(vecDotTQ2_0Generic)
		}
	}
	if v == cpuvariant.Piledriver {
		// Without AVX2 these types take ggml's generic C loops, which the
		// FMA build contracts as haswell's *_generic exports are.
		switch typ {
		case gguf.TQ1_0:
			return VecDotTQ1_0Q8_KGeneric
		case gguf.TQ2_0:
			return VecDotTQ2_0Q8_KGeneric
		}
	}
	var fused bool
	switch v {
	case cpuvariant.SandyBridge, cpuvariant.IvyBridge:
	case cpuvariant.Piledriver:
		fused = true
	default:
		return nil
	}
	switch typ {
	case gguf.Q8_0:
		return func(w, a []byte, nb int) float32 { return vecDotQ8_0Q8_0AVX(w, a, nb, fused) }
	case gguf.Q4_0:
		return func(w, a []byte, nb int) float32 { return vecDotQ4_0Q8_0AVX(w, a, nb, fused) }
	}
	return nil
}
