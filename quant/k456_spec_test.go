package quant

import (
	"encoding/binary"
	"math"

	"github.com/bankml/bankml/fmath"
)

// The executable specification of the Q4_K/Q5_K/Q6_K dot products: the
// reference's kernels transliterated statement by statement, with the AVX2
// intrinsics emulated on byte arrays (k456Spec* helpers) and the scalar twins'
// aux8/aux16/aux32 arrays kept. Slow and plain on purpose; the fast paths in
// q4_k.go, q5_k.go and q6_k.go are fuzzed against these.

type k456SpecV256 [32]byte

func k456SpecLoad(b []byte) (v k456SpecV256) { copy(v[:], b); return }

func k456SpecSet1(b byte) (v k456SpecV256) {
	for i := range v {
		v[i] = b
	}
	return
}

func k456SpecAnd(a, b k456SpecV256) (v k456SpecV256) {
	for i := range v {
		v[i] = a[i] & b[i]
	}
	return
}

func k456SpecOr(a, b k456SpecV256) (v k456SpecV256) {
	for i := range v {
		v[i] = a[i] | b[i]
	}
	return
}

func k456SpecAdd8(a, b k456SpecV256) (v k456SpecV256) {
	for i := range v {
		v[i] = a[i] + b[i]
	}
	return
}

// k456SpecSrli16 and k456SpecSlli16 are _mm256_srli_epi16 / _mm256_slli_epi16.
func k456SpecSrli16(a k456SpecV256, n uint) (v k456SpecV256) {
	for i := 0; i < 32; i += 2 {
		binary.LittleEndian.PutUint16(v[i:], binary.LittleEndian.Uint16(a[i:])>>n)
	}
	return
}

func k456SpecSlli16(a k456SpecV256, n uint) (v k456SpecV256) {
	for i := 0; i < 32; i += 2 {
		binary.LittleEndian.PutUint16(v[i:], binary.LittleEndian.Uint16(a[i:])<<n)
	}
	return
}

// k456SpecShuffle is _mm256_shuffle_epi8: a byte shuffle within each 128-bit lane.
func k456SpecShuffle(a, idx k456SpecV256) (v k456SpecV256) {
	for i := range v {
		if idx[i]&0x80 != 0 {
			continue
		}
		v[i] = a[i&^15+int(idx[i]&15)]
	}
	return
}

// k456SpecMaddubs is _mm256_maddubs_epi16: unsigned bytes of u times signed bytes
// of s, adjacent pairs added with signed saturation.
func k456SpecMaddubs(u, s k456SpecV256) (r [16]int16) {
	for i := range r {
		v := int32(u[2*i])*int32(int8(s[2*i])) + int32(u[2*i+1])*int32(int8(s[2*i+1]))
		r[i] = int16(max(-32768, min(32767, v)))
	}
	return
}

// k456SpecMadd is _mm256_madd_epi16 (n = 16) or _mm_madd_epi16 (n = 8).
func k456SpecMadd(a, b []int16) []int32 {
	r := make([]int32, len(a)/2)
	for i := range r {
		r[i] = int32(a[2*i])*int32(b[2*i]) + int32(a[2*i+1])*int32(b[2*i+1])
	}
	return r
}

// k456SpecHadd16 is _mm_hadd_epi16 (wrapping adds).
func k456SpecHadd16(a, b []int16) []int16 {
	r := make([]int16, 8)
	for i := range 4 {
		r[i] = a[2*i] + a[2*i+1]
		r[i+4] = b[2*i] + b[2*i+1]
	}
	return r
}

func k456SpecI16(b []byte) []int16 {
	r := make([]int16, len(b)/2)
	for i := range r {
		r[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return r
}

func k456SpecBytes16(v []int16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(x))
	}
	return b
}

// k456SpecHsumFloat8 is hsum_float_8 written as its intrinsics.
func k456SpecHsumFloat8(x [8]float32) float32 {
	var res [4]float32
	for i := range 4 {
		res[i] = x[4+i] + x[i] // _mm_add_ps(extractf128(x, 1), cast(x))
	}
	res[0], res[1] = res[0]+res[2], res[1]+res[3] // add movehl
	return res[0] + res[1]                        // add_ss movehdup
}

// k456SpecKShuffleK4 is get_scale_shuffle_k4's table: row i repeats bytes 2i, 2i+1.
func k456SpecKShuffleK4(i int) (v k456SpecV256) {
	for k := 0; k < 32; k += 2 {
		v[k], v[k+1] = byte(2*i), byte(2*i+1)
	}
	return
}

// k456SpecKShuffle is get_scale_shuffle's table: row i is eight 2i then eight 2i+1.
func k456SpecKShuffle(i int) (v [16]byte) {
	for k := range 8 {
		v[k], v[k+8] = byte(2*i), byte(2*i+1)
	}
	return
}

// k456SpecUtmp is the kmask dance both K-quant kernels run on the 12 scale
// bytes: utmp[0..1] hold the eight scales, utmp[2..3] the eight mins.
func k456SpecUtmp(s []byte) [16]byte {
	const kmask1, kmask2, kmask3 = 0x3f3f3f3f, 0x0f0f0f0f, 0x03030303
	var utmp [4]uint32
	for i := range 3 {
		utmp[i] = binary.LittleEndian.Uint32(s[4*i:])
	}
	utmp[3] = ((utmp[2] >> 4) & kmask2) | (((utmp[1] >> 6) & kmask3) << 4)
	uaux := utmp[1] & kmask1
	utmp[1] = (utmp[2] & kmask2) | (((utmp[0] >> 6) & kmask3) << 4)
	utmp[2] = uaux
	utmp[0] &= kmask1
	var b [16]byte
	for i := range 4 {
		binary.LittleEndian.PutUint32(b[4*i:], utmp[i])
	}
	return b
}

func k456SpecF32(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// k456SpecQ45Common is the prologue of the AVX2 Q4_K/Q5_K kernels: the mins
// products (prod, four int32) and the 256-bit vector of the eight scales.
func k456SpecQ45Common(x, y []byte) (prod []int32, scales k456SpecV256) {
	ms := k456SpecUtmp(x[4:16])
	mas := make([]int16, 16) // _mm256_cvtepu8_epi16
	for i := range mas {
		mas[i] = int16(ms[i])
	}
	q8sums := k456SpecI16(y[260:292])
	q8s := k456SpecHadd16(q8sums[0:8], q8sums[8:16])
	prod = k456SpecMadd(mas[8:16], q8s)
	sc := k456SpecBytes16(mas[0:8])
	copy(scales[0:16], sc)
	copy(scales[16:32], sc)
	return
}

func k456SpecVecDotQ4_K(w, a []byte, nb int) float32 {
	var acc [8]float32
	var accM [4]float32
	m4 := k456SpecSet1(0xf)
	for i := range nb {
		x, y := w[i*144:], a[i*292:]
		d := k456SpecF32(y) * FP16ToFP32(binary.LittleEndian.Uint16(x[0:]))
		dmin := -k456SpecF32(y) * FP16ToFP32(binary.LittleEndian.Uint16(x[2:]))
		prod, scales := k456SpecQ45Common(x, y)
		for k := range 4 {
			accM[k] = fmath.FMA32(dmin, float32(prod[k]), accM[k])
		}
		var sumi [8]int32
		for j := range 4 {
			scaleL := k456SpecShuffle(scales, k456SpecKShuffleK4(2*j))
			scaleH := k456SpecShuffle(scales, k456SpecKShuffleK4(2*j+1))
			q4bits := k456SpecLoad(x[16+32*j:])
			q4l := k456SpecAnd(q4bits, m4)
			q4h := k456SpecAnd(k456SpecSrli16(q4bits, 4), m4)
			q8l := k456SpecLoad(y[4+64*j:])
			p16l := k456SpecMaddubs(q4l, q8l)
			p32l := k456SpecMadd(k456SpecI16(scaleL[:]), p16l[:])
			q8h := k456SpecLoad(y[4+64*j+32:])
			p16h := k456SpecMaddubs(q4h, q8h)
			p32h := k456SpecMadd(k456SpecI16(scaleH[:]), p16h[:])
			for l := range 8 {
				sumi[l] += p32l[l] + p32h[l]
			}
		}
		for l := range 8 {
			acc[l] = fmath.FMA32(d, float32(sumi[l]), acc[l])
		}
	}
	accM[0], accM[1] = accM[0]+accM[2], accM[1]+accM[3]
	accM[0] += accM[1]
	return k456SpecHsumFloat8(acc) + accM[0]
}

func k456SpecVecDotQ5_K(w, a []byte, nb int) float32 {
	var acc [8]float32
	var summs float32
	m4 := k456SpecSet1(0xf)
	for i := range nb {
		x, y := w[i*176:], a[i*292:]
		d := k456SpecF32(y) * FP16ToFP32(binary.LittleEndian.Uint16(x[0:]))
		dmin := -k456SpecF32(y) * FP16ToFP32(binary.LittleEndian.Uint16(x[2:]))
		prod, scales := k456SpecQ45Common(x, y)
		h1 := []int32{prod[0] + prod[1], prod[2] + prod[3], 0, 0} // _mm_hadd_epi32(prod, 0)
		hsum := h1[0] + h1[1]                                     // and again
		summs = fmath.FMA32(dmin, float32(hsum), summs)
		hbits := k456SpecLoad(x[16:48])
		hmask := k456SpecSet1(1)
		var sumi [8]int32
		bit := uint(0)
		for j := range 4 {
			scale0 := k456SpecShuffle(scales, k456SpecKShuffleK4(2*j))
			scale1 := k456SpecShuffle(scales, k456SpecKShuffleK4(2*j+1))
			q5bits := k456SpecLoad(x[48+32*j:])
			q5l0 := k456SpecAnd(q5bits, m4)
			q5h0 := k456SpecSlli16(k456SpecSrli16(k456SpecAnd(hbits, hmask), bit), 4)
			bit++
			q50 := k456SpecAdd8(q5l0, q5h0)
			hmask = k456SpecSlli16(hmask, 1)
			q5l1 := k456SpecAnd(k456SpecSrli16(q5bits, 4), m4)
			q5h1 := k456SpecSlli16(k456SpecSrli16(k456SpecAnd(hbits, hmask), bit), 4)
			bit++
			q51 := k456SpecAdd8(q5l1, q5h1)
			hmask = k456SpecSlli16(hmask, 1)
			p160 := k456SpecMaddubs(q50, k456SpecLoad(y[4+64*j:]))
			p161 := k456SpecMaddubs(q51, k456SpecLoad(y[4+64*j+32:]))
			p320 := k456SpecMadd(k456SpecI16(scale0[:]), p160[:])
			p321 := k456SpecMadd(k456SpecI16(scale1[:]), p161[:])
			for l := range 8 {
				sumi[l] += p320[l] + p321[l]
			}
		}
		for l := range 8 {
			acc[l] = fmath.FMA32(d, float32(sumi[l]), acc[l])
		}
	}
	return k456SpecHsumFloat8(acc) + summs
}

func k456SpecVecDotQ6_K(w, a []byte, nb int) float32 {
	var acc [8]float32
	m3, m15 := k456SpecSet1(3), k456SpecSet1(15)
	for i := range nb {
		x, y := w[i*210:], a[i*292:]
		d := k456SpecF32(y) * FP16ToFP32(binary.LittleEndian.Uint16(x[208:]))
		q8sums := k456SpecI16(y[260:292])
		var sc16 [16]int16 // _mm256_cvtepi8_epi16(scales)
		for k := range 16 {
			sc16[k] = int16(int8(x[192+k]))
		}
		q8sclsub := k456SpecMadd(q8sums, sc16[:])
		for l := range q8sclsub {
			q8sclsub[l] <<= 5
		}
		var sumi [8]int32
		is := 0
		for j := range 2 {
			q4bits1 := k456SpecLoad(x[64*j:])
			q4bits2 := k456SpecLoad(x[64*j+32:])
			q4bitsH := k456SpecLoad(x[128+32*j:])
			q4h0 := k456SpecSlli16(k456SpecAnd(q4bitsH, m3), 4)
			q4h1 := k456SpecSlli16(k456SpecAnd(q4bitsH, k456SpecSet1(12)), 2)
			q4h2 := k456SpecAnd(q4bitsH, k456SpecSet1(48))
			q4h3 := k456SpecSrli16(k456SpecAnd(q4bitsH, k456SpecSet1(0xc0)), 2)
			q40 := k456SpecOr(k456SpecAnd(q4bits1, m15), q4h0)
			q41 := k456SpecOr(k456SpecAnd(q4bits2, m15), q4h1)
			q42 := k456SpecOr(k456SpecAnd(k456SpecSrli16(q4bits1, 4), m15), q4h2)
			q43 := k456SpecOr(k456SpecAnd(k456SpecSrli16(q4bits2, 4), m15), q4h3)
			qv := [4]k456SpecV256{q40, q41, q42, q43}
			for k := range 4 {
				p16 := k456SpecMaddubs(qv[k], k456SpecLoad(y[4+128*j+32*k:]))
				shuf := k456SpecKShuffle(is + k)
				var scale [16]int16 // _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, shuf))
				for t := range 16 {
					scale[t] = int16(int8(x[192+int(shuf[t])]))
				}
				p32 := k456SpecMadd(scale[:], p16[:])
				for l := range 8 {
					sumi[l] += p32[l]
				}
			}
			is += 4
		}
		for l := range 8 {
			acc[l] = fmath.FMA32(d, float32(sumi[l]-q8sclsub[l]), acc[l])
		}
	}
	return k456SpecHsumFloat8(acc)
}

// k456SpecGenericQ45 is ggml_vec_dot_q{4,5}_K_q8_K_generic; hbits says whether
// the block has Q5_K's qh.
func k456SpecGenericQ45(w, a []byte, nb int, q5 bool) float32 {
	bsz, qsOff := 144, 16
	if q5 {
		bsz, qsOff = 176, 48
	}
	var sums [8]float32
	var sumf float32
	for i := range nb {
		x, y := w[i*bsz:], a[i*292:]
		var aux8 [256]int8
		q4 := x[qsOff:]
		m := byte(1)
		for j := range 4 {
			for l := range 32 {
				aux8[64*j+l] = int8(q4[l] & 0xf)
				if q5 && x[16+l]&m != 0 {
					aux8[64*j+l] += 16
				}
			}
			m <<= 1
			for l := range 32 {
				aux8[64*j+32+l] = int8(q4[l] >> 4)
				if q5 && x[16+l]&m != 0 {
					aux8[64*j+32+l] += 16
				}
			}
			m <<= 1
			q4 = q4[32:]
		}
		ms := k456SpecUtmp(x[4:16])
		scales, mins := ms[0:8], ms[8:16]
		bsums := k456SpecI16(y[260:292])
		var sumi int32
		for j := range 16 {
			sumi += int32(bsums[j]) * int32(mins[j/2])
		}
		var aux32 [8]int32
		q8 := y[4:]
		for j := range 8 {
			scale := int32(scales[j])
			for g := range 4 {
				for l := range 8 {
					aux16 := int16(int8(q8[32*j+8*g+l])) * int16(aux8[32*j+8*g+l])
					aux32[l] += scale * int32(aux16)
				}
			}
		}
		d := FP16ToFP32(binary.LittleEndian.Uint16(x[0:])) * k456SpecF32(y)
		for l := range 8 {
			sums[l] = fmath.FMA32(d, float32(aux32[l]), sums[l])
		}
		dmin := FP16ToFP32(binary.LittleEndian.Uint16(x[2:])) * k456SpecF32(y)
		// vfnmadd231ss: a NaN operand passes through unnegated.
		switch {
		case sumf != sumf:
		case dmin != dmin:
			sumf = dmin
		default:
			sumf = fmath.FMA32(-dmin, float32(sumi), sumf)
		}
	}
	for l := range 8 {
		sumf += sums[l]
	}
	return sumf
}

func k456SpecGenericQ6(w, a []byte, nb int) float32 {
	var sums [8]float32
	for i := range nb {
		x, y := w[i*210:], a[i*292:]
		var aux8 [256]int8
		for n := range 2 {
			q4, qh := x[64*n:], x[128+32*n:]
			for l := range 32 {
				aux8[128*n+l] = int8(q4[l]&0xf|((qh[l]>>0)&3)<<4) - 32
				aux8[128*n+l+32] = int8(q4[l+32]&0xf|((qh[l]>>2)&3)<<4) - 32
				aux8[128*n+l+64] = int8(q4[l]>>4|((qh[l]>>4)&3)<<4) - 32
				aux8[128*n+l+96] = int8(q4[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
			}
		}
		var aux32 [8]int32
		q8 := y[4:]
		for j := range 16 {
			scale := int32(int8(x[192+j]))
			for g := range 2 {
				for l := range 8 {
					aux16 := int16(int8(q8[16*j+8*g+l])) * int16(aux8[16*j+8*g+l])
					aux32[l] += scale * int32(aux16)
				}
			}
		}
		d := FP16ToFP32(binary.LittleEndian.Uint16(x[208:])) * k456SpecF32(y)
		for l := range 8 {
			sums[l] = fmath.FMA32(d, float32(aux32[l]), sums[l])
		}
	}
	var sumf float32
	for l := range 8 {
		sumf += sums[l]
	}
	return sumf
}

// k456SpecGetScaleMinK4 is get_scale_min_k4 (ggml-quants.c).
func k456SpecGetScaleMinK4(j int, q []byte) (d, m int32) {
	if j < 4 {
		return int32(q[j] & 63), int32(q[j+4] & 63)
	}
	return int32(q[j+4]&0xf | (q[j-4]>>6)<<4), int32(q[j+4]>>4 | (q[j]>>6)<<4)
}

// k456SpecRepackQ4_K models one output of the repacked q4_K_8x8 kernels on the
// plain layout, element by element: per block and sub-block pair p the
// integers Σ sc·Σ q·a and Σ m·(bsum pair), folded with one FMA per block
// (gemv) or per pair (gemm).
func k456SpecRepackQ4_K(w, a []byte, nb int, perPair bool) float32 {
	var acc, accMin float32
	for i := range nb {
		x, y := w[i*144:], a[i*292:]
		bsums := k456SpecI16(y[260:292])
		var isum, imin [4]int32
		for p := range 4 {
			for h := range 2 {
				j := 2*p + h
				sc, m := k456SpecGetScaleMinK4(j, x[4:16])
				var dot int32
				for l := range 32 {
					q := x[16+32*p+l]
					if h == 1 {
						q >>= 4
					}
					dot += int32(q&0xf) * int32(int8(y[4+32*j+l]))
				}
				isum[p] += sc * dot
				imin[p] += m * int32(bsums[2*j]+bsums[2*j+1])
			}
		}
		dw := FP16ToFP32(binary.LittleEndian.Uint16(x[0:])) * k456SpecF32(y)
		dm := FP16ToFP32(binary.LittleEndian.Uint16(x[2:])) * k456SpecF32(y)
		if perPair {
			for p := range 4 {
				acc = fmath.FMA32(float32(isum[p]), dw, acc)
				accMin = fmath.FMA32(float32(imin[p]), dm, accMin)
			}
		} else {
			acc = fmath.FMA32(float32(isum[0]+isum[1]+isum[2]+isum[3]), dw, acc)
			accMin = fmath.FMA32(float32(imin[0]+imin[1]+imin[2]+imin[3]), dm, accMin)
		}
	}
	return acc - accMin
}
