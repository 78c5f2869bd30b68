#include "textflag.h"

// ROUND16x4 rounds Y4-Y7 to f16 and back (vcvtps2ph $0, vcvtph2ps): the
// f16 accumulator's step, kept widened in registers.
#define ROUND16x4 \
	VCVTPS2PH $0, Y4, X4; \
	VCVTPS2PH $0, Y5, X5; \
	VCVTPS2PH $0, Y6, X6; \
	VCVTPS2PH $0, Y7, X7; \
	VCVTPH2PS X4, Y4; \
	VCVTPH2PS X5, Y5; \
	VCVTPH2PS X6, Y6; \
	VCVTPH2PS X7, Y7

// ROUND16x8 is ROUND16x4 for Z8-Z15.
#define ROUND16x8 \
	VCVTPS2PH $0, Z8, Y8; \
	VCVTPS2PH $0, Z9, Y9; \
	VCVTPS2PH $0, Z10, Y10; \
	VCVTPS2PH $0, Z11, Y11; \
	VCVTPS2PH $0, Z12, Y12; \
	VCVTPS2PH $0, Z13, Y13; \
	VCVTPS2PH $0, Z14, Y14; \
	VCVTPS2PH $0, Z15, Y15; \
	VCVTPH2PS Y8, Z8; \
	VCVTPH2PS Y9, Z9; \
	VCVTPH2PS Y10, Z10; \
	VCVTPH2PS Y11, Z11; \
	VCVTPH2PS Y12, Z12; \
	VCVTPH2PS Y13, Z13; \
	VCVTPH2PS Y14, Z14; \
	VCVTPH2PS Y15, Z15

// Flash attention's inner loops (see attn.go for the Go twins and the
// contract each kernel keeps). Every product-sum is one vfmadd231ps per
// lane, the same single rounding as fmath.FMA32; vcvtph2ps is exact and
// vcvtps2ph $0 rounds to nearest even as quant.FP32ToFP16 does for every
// value but NaN, which the f16 kernels never store (they stop first).

// func vAccF16AVX2(acc, v *uint16, stride int, vs, ms *float32, n int) int
//
// 32 lanes of one_chunk's f16 V accumulator over n cells: per cell i, when
// ms[i] != 1, acc = f16(acc*ms[i]); then acc = f16(fma(v, vs[i], acc)), v
// being cell i's 32 values at v + i*stride (elements). It stops before the
// first cell whose step makes a NaN, stores acc as it was before that cell
// and returns the cell's index (n when none did).
TEXT ·vAccF16AVX2(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ stride+16(FP), DX
	SHLQ $1, DX
	MOVQ vs+24(FP), R8
	MOVQ ms+32(FP), R9
	MOVQ n+40(FP), CX
	XORQ BX, BX
	VCVTPH2PS 0(DI), Y0
	VCVTPH2PS 16(DI), Y1
	VCVTPH2PS 32(DI), Y2
	VCVTPH2PS 48(DI), Y3
	MOVL $0x3f800000, AX
	VMOVD AX, X15
	TESTQ CX, CX
	JZ   avx2done

avx2cell:
	VMOVSS (R9)(BX*4), X8
	VUCOMISS X15, X8
	JNE  avx2rescale
	JPS  avx2rescale
	VMOVAPS Y0, Y4
	VMOVAPS Y1, Y5
	VMOVAPS Y2, Y6
	VMOVAPS Y3, Y7
	JMP  avx2mad

avx2rescale:
	VBROADCASTSS X8, Y8
	VMULPS Y8, Y0, Y4
	VMULPS Y8, Y1, Y5
	VMULPS Y8, Y2, Y6
	VMULPS Y8, Y3, Y7
	ROUND16x4

avx2mad:
	VBROADCASTSS (R8)(BX*4), Y8
	VCVTPH2PS 0(SI), Y9
	VCVTPH2PS 16(SI), Y10
	VCVTPH2PS 32(SI), Y11
	VCVTPH2PS 48(SI), Y12
	VFMADD231PS Y8, Y9, Y4
	VFMADD231PS Y8, Y10, Y5
	VFMADD231PS Y8, Y11, Y6
	VFMADD231PS Y8, Y12, Y7
	ROUND16x4
	VCMPPS $3, Y4, Y4, Y9
	VCMPPS $3, Y5, Y5, Y10
	VCMPPS $3, Y6, Y6, Y11
	VCMPPS $3, Y7, Y7, Y12
	VORPS  Y10, Y9, Y9
	VORPS  Y12, Y11, Y11
	VORPS  Y11, Y9, Y9
	VPTEST Y9, Y9
	JNZ    avx2done
	VMOVAPS Y4, Y0
	VMOVAPS Y5, Y1
	VMOVAPS Y6, Y2
	VMOVAPS Y7, Y3
	ADDQ DX, SI
	INCQ BX
	CMPQ BX, CX
	JLT  avx2cell

avx2done:
	VCVTPS2PH $0, Y0, 0(DI)
	VCVTPS2PH $0, Y1, 16(DI)
	VCVTPS2PH $0, Y2, 32(DI)
	VCVTPS2PH $0, Y3, 48(DI)
	MOVQ BX, ret+48(FP)
	VZEROUPPER
	RET

// func vAccF16AVX512(acc, v *uint16, stride int, vs, ms *float32, n int) int
//
// vAccF16AVX2 on 128 lanes (eight 16-lane chains).
TEXT ·vAccF16AVX512(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ stride+16(FP), DX
	SHLQ $1, DX
	MOVQ vs+24(FP), R8
	MOVQ ms+32(FP), R9
	MOVQ n+40(FP), CX
	XORQ BX, BX
	VCVTPH2PS 0(DI), Z0
	VCVTPH2PS 32(DI), Z1
	VCVTPH2PS 64(DI), Z2
	VCVTPH2PS 96(DI), Z3
	VCVTPH2PS 128(DI), Z4
	VCVTPH2PS 160(DI), Z5
	VCVTPH2PS 192(DI), Z6
	VCVTPH2PS 224(DI), Z7
	MOVL $0x3f800000, AX
	VMOVD AX, X31
	TESTQ CX, CX
	JZ   z16done

z16cell:
	VMOVSS (R9)(BX*4), X16
	VUCOMISS X31, X16
	JNE  z16rescale
	JPS  z16rescale
	VMOVAPS Z0, Z8
	VMOVAPS Z1, Z9
	VMOVAPS Z2, Z10
	VMOVAPS Z3, Z11
	VMOVAPS Z4, Z12
	VMOVAPS Z5, Z13
	VMOVAPS Z6, Z14
	VMOVAPS Z7, Z15
	JMP  z16mad

z16rescale:
	VBROADCASTSS X16, Z16
	VMULPS Z16, Z0, Z8
	VMULPS Z16, Z1, Z9
	VMULPS Z16, Z2, Z10
	VMULPS Z16, Z3, Z11
	VMULPS Z16, Z4, Z12
	VMULPS Z16, Z5, Z13
	VMULPS Z16, Z6, Z14
	VMULPS Z16, Z7, Z15
	ROUND16x8

z16mad:
	VBROADCASTSS (R8)(BX*4), Z16
	VCVTPH2PS 0(SI), Z17
	VCVTPH2PS 32(SI), Z18
	VCVTPH2PS 64(SI), Z19
	VCVTPH2PS 96(SI), Z20
	VCVTPH2PS 128(SI), Z21
	VCVTPH2PS 160(SI), Z22
	VCVTPH2PS 192(SI), Z23
	VCVTPH2PS 224(SI), Z24
	VFMADD231PS Z16, Z17, Z8
	VFMADD231PS Z16, Z18, Z9
	VFMADD231PS Z16, Z19, Z10
	VFMADD231PS Z16, Z20, Z11
	VFMADD231PS Z16, Z21, Z12
	VFMADD231PS Z16, Z22, Z13
	VFMADD231PS Z16, Z23, Z14
	VFMADD231PS Z16, Z24, Z15
	ROUND16x8
	VCMPPS $3, Z8, Z8, K1
	VCMPPS $3, Z9, Z9, K2
	VCMPPS $3, Z10, Z10, K3
	VCMPPS $3, Z11, Z11, K4
	KORW   K2, K1, K1
	KORW   K4, K3, K3
	VCMPPS $3, Z12, Z12, K2
	VCMPPS $3, Z13, Z13, K4
	KORW   K3, K1, K1
	KORW   K4, K2, K2
	VCMPPS $3, Z14, Z14, K3
	VCMPPS $3, Z15, Z15, K4
	KORW   K2, K1, K1
	KORW   K4, K3, K3
	KORTESTW K3, K1
	JNZ    z16done
	VMOVAPS Z8, Z0
	VMOVAPS Z9, Z1
	VMOVAPS Z10, Z2
	VMOVAPS Z11, Z3
	VMOVAPS Z12, Z4
	VMOVAPS Z13, Z5
	VMOVAPS Z14, Z6
	VMOVAPS Z15, Z7
	ADDQ DX, SI
	INCQ BX
	CMPQ BX, CX
	JLT  z16cell

z16done:
	VCVTPS2PH $0, Z0, 0(DI)
	VCVTPS2PH $0, Z1, 32(DI)
	VCVTPS2PH $0, Z2, 64(DI)
	VCVTPS2PH $0, Z3, 96(DI)
	VCVTPS2PH $0, Z4, 128(DI)
	VCVTPS2PH $0, Z5, 160(DI)
	VCVTPS2PH $0, Z6, 192(DI)
	VCVTPS2PH $0, Z7, 224(DI)
	MOVQ BX, ret+48(FP)
	VZEROUPPER
	RET

// func kqTileAVX2(kq, q, kt *float32, dk int)
//
// The tiled kernel's scores of one query row against a KV tile of 64 cells:
// kq[c] = the fused chain acc = fma(kt[d*64+c], q[d], acc) over d = 0..dk-1
// from acc = 0 (kt: the tile's K widened and transposed, dk×64). dk >= 1.
TEXT ·kqTileAVX2(SB), NOSPLIT, $0-32
	MOVQ kq+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ kt+16(FP), DX
	MOVQ dk+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

kqloop:
	VBROADCASTSS (SI), Y8
	VFMADD231PS 0(DX), Y8, Y0
	VFMADD231PS 32(DX), Y8, Y1
	VFMADD231PS 64(DX), Y8, Y2
	VFMADD231PS 96(DX), Y8, Y3
	VFMADD231PS 128(DX), Y8, Y4
	VFMADD231PS 160(DX), Y8, Y5
	VFMADD231PS 192(DX), Y8, Y6
	VFMADD231PS 224(DX), Y8, Y7
	ADDQ $4, SI
	ADDQ $256, DX
	DECQ CX
	JNZ  kqloop
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET

// func vkqTileAVX2(vkq, vw, kq *float32, dv int)
//
// The tiled kernel's VKQ update of one query row by a KV tile of 64 cells:
// for each d, vkq[d] = the fused chain acc = fma(vw[c*dv+d], kq[c], acc)
// over c = 0..63 from acc = vkq[d] (vw: the tile's V widened, 64×dv).
// dv is a multiple of 64.
TEXT ·vkqTileAVX2(SB), NOSPLIT, $0-32
	MOVQ vkq+0(FP), DI
	MOVQ vw+8(FP), SI
	MOVQ kq+16(FP), DX
	MOVQ dv+24(FP), R8
	MOVQ R8, R10
	SHRQ $6, R10
	SHLQ $2, R8

vkqblock:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ SI, R11
	MOVQ DX, R12
	MOVQ $64, R13

vkqcell:
	VBROADCASTSS (R12), Y8
	VFMADD231PS 0(R11), Y8, Y0
	VFMADD231PS 32(R11), Y8, Y1
	VFMADD231PS 64(R11), Y8, Y2
	VFMADD231PS 96(R11), Y8, Y3
	VFMADD231PS 128(R11), Y8, Y4
	VFMADD231PS 160(R11), Y8, Y5
	VFMADD231PS 192(R11), Y8, Y6
	VFMADD231PS 224(R11), Y8, Y7
	ADDQ $4, R12
	ADDQ R8, R11
	DECQ R13
	JNZ  vkqcell
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ $256, DI
	ADDQ $256, SI
	DECQ R10
	JNZ  vkqblock
	VZEROUPPER
	RET

// func widenF16AVX2(dst *float32, src *uint16, n int)
//
// dst[i] = f32(src[i]) for i < n (vcvtph2ps, exact); n is a multiple of 8,
// >= 8.
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX

widenloop:
	VCVTPH2PS 0(SI), Y0
	VMOVUPS Y0, 0(DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  widenloop
	VZEROUPPER
	RET

// ggml_v_expf's constants (vec.h, AVX2+FMA), as model's vExpf spells them.
DATA expc<>+0(SB)/4, $0x4b400000  // 0x1.8p23
DATA expc<>+4(SB)/4, $0x3fb8aa3b  // 0x1.715476p+0
DATA expc<>+8(SB)/4, $0x3f317200  // 0x1.62e4p-1
DATA expc<>+12(SB)/4, $0x35bfbe8e // 0x1.7f7d1cp-20
DATA expc<>+16(SB)/4, $0x3c072010 // 0x1.0e4020p-7
DATA expc<>+20(SB)/4, $0x3d2b9f17 // 0x1.573e2ep-5
DATA expc<>+24(SB)/4, $0x3e2aaf33 // 0x1.555e66p-3
DATA expc<>+28(SB)/4, $0x3efffedb // 0x1.fffdb6p-2
DATA expc<>+32(SB)/4, $0x3f7ffff6 // 0x1.ffffecp-1
DATA expc<>+36(SB)/4, $0x3f800000 // 1.0's bits
DATA expc<>+40(SB)/4, $0x7fffffff // |x|
DATA expc<>+44(SB)/4, $0x42fc0000 // 126
DATA expc<>+48(SB)/4, $0x43400000 // 192
DATA expc<>+52(SB)/4, $0x82000000
DATA expc<>+56(SB)/4, $0x7f000000
GLOBL expc<>(SB), RODATA|NOPTR, $60

// func vExpfTileAVX2(kq *float32, m float32)
//
// The tiled kernel's softmax exponentials: kq[i] = ggml_v_expf(kq[i]-m) for
// the 64 scores, in 8 vectors of 8 (a vector with any |n| > 126 takes the
// blend path in all its lanes), the lanes of model's vExpf.
TEXT ·vExpfTileAVX2(SB), NOSPLIT, $0-12
	MOVQ kq+0(FP), DI
	VBROADCASTSS m+8(FP), Y15
	VBROADCASTSS expc<>+0(SB), Y14
	VBROADCASTSS expc<>+4(SB), Y13
	MOVQ $8, CX

expgroup:
	VMOVUPS 0(DI), Y0
	VSUBPS  Y15, Y0, Y0          // x = kq - m
	VMOVAPS Y14, Y1
	VFMADD231PS Y13, Y0, Y1      // z = fma(x, log2e, r)
	VSUBPS  Y14, Y1, Y2          // n = z - r
	VMOVAPS Y0, Y3
	VBROADCASTSS expc<>+8(SB), Y10
	VFNMADD231PS Y10, Y2, Y3     // fma(-n, ln2 hi, x)
	VBROADCASTSS expc<>+12(SB), Y10
	VFNMADD231PS Y10, Y2, Y3     // b = fma(-n, ln2 lo, ...)
	VPSLLD  $23, Y1, Y4          // e
	VPBROADCASTD expc<>+36(SB), Y10
	VPADDD  Y10, Y4, Y5          // k
	VMULPS  Y3, Y3, Y6           // u = b*b
	VBROADCASTSS expc<>+20(SB), Y7
	VBROADCASTSS expc<>+16(SB), Y10
	VFMADD231PS Y10, Y3, Y7      // fma(c5, b, c4)
	VBROADCASTSS expc<>+28(SB), Y8
	VBROADCASTSS expc<>+24(SB), Y10
	VFMADD231PS Y10, Y3, Y8      // fma(c3, b, c2)
	VFMADD231PS Y7, Y6, Y8       // fma(., u, .)
	VBROADCASTSS expc<>+32(SB), Y9
	VMULPS  Y3, Y9, Y9           // c1*b
	VFMADD231PS Y8, Y6, Y9       // j
	VMOVAPS Y5, Y12
	VFMADD231PS Y9, Y5, Y12      // fma(j, k, k)
	VBROADCASTSS expc<>+40(SB), Y10
	VANDPS  Y10, Y2, Y10         // |n|
	VBROADCASTSS expc<>+44(SB), Y11
	VCMPPS  $0x1e, Y11, Y10, Y11 // |n| > 126 (ordered)
	VPTEST  Y11, Y11
	JNZ     explarge
	VMOVUPS Y12, 0(DI)
	JMP     expnext

explarge:
	VXORPS  Y7, Y7, Y7
	VCMPPS  $0x12, Y7, Y2, Y7    // n <= 0 (ordered)
	VBROADCASTSS expc<>+52(SB), Y8
	VANDPS  Y8, Y7, Y7           // g
	VPBROADCASTD expc<>+56(SB), Y8
	VPADDD  Y8, Y7, Y8           // s1 = g + 0x7f000000
	VPSUBD  Y7, Y4, Y4           // s2 = e - g
	VMOVAPS Y4, Y6
	VFMADD231PS Y9, Y4, Y6       // fma(s2, j, s2)
	VMULPS  Y8, Y6, Y6           // * s1
	VMULPS  Y8, Y8, Y8           // s1*s1
	VBLENDVPS Y11, Y6, Y12, Y12  // |n| > 126
	VBROADCASTSS expc<>+48(SB), Y7
	VCMPPS  $0x1e, Y7, Y10, Y7   // |n| > 192
	VBLENDVPS Y7, Y8, Y12, Y12
	VMOVUPS Y12, 0(DI)

expnext:
	ADDQ $32, DI
	DECQ CX
	JNZ  expgroup
	VZEROUPPER
	RET

// Q8_0 block at SI: y = float(q)*d into Y10-Y13 (lanes 0-7, 8-15, 16-23,
// 24-31), d broadcast in Y9 (dequantize_row_q8_0).
#define DEQ8_0 \
	VPMOVSXBD 2(SI), Y10 \
	VPMOVSXBD 10(SI), Y11 \
	VPMOVSXBD 18(SI), Y12 \
	VPMOVSXBD 26(SI), Y13 \
	VCVTDQ2PS Y10, Y10 \
	VCVTDQ2PS Y11, Y11 \
	VCVTDQ2PS Y12, Y12 \
	VCVTDQ2PS Y13, Y13

// Q4_0 block at SI: y = float((nibble) - 8)*d, lanes 0-15 from the low
// nibbles of qs[0..15], 16-31 from the high ones (dequantize_row_q4_0);
// Y14 holds 0x0f and Y7 8 in every dword.
#define DEQ4_0 \
	VPMOVZXBD 2(SI), Y10 \
	VPMOVZXBD 10(SI), Y11 \
	VPSRLD $4, Y10, Y12 \
	VPSRLD $4, Y11, Y13 \
	VPAND Y14, Y10, Y10 \
	VPAND Y14, Y11, Y11 \
	VPSUBD Y7, Y10, Y10 \
	VPSUBD Y7, Y11, Y11 \
	VPSUBD Y7, Y12, Y12 \
	VPSUBD Y7, Y13, Y13 \
	VCVTDQ2PS Y10, Y10 \
	VCVTDQ2PS Y11, Y11 \
	VCVTDQ2PS Y12, Y12 \
	VCVTDQ2PS Y13, Y13

// The body of vAccQAVX2 for one block type (arguments in DI, SI, DX, R8,
// R9, CX): 32 lanes (one block) of one_chunk's f32 V accumulator over n
// cells of a quantized V cache: per cell i, when ms[i] != 1, acc *= ms[i]
// (ggml_vec_scale_f32, one vmulps per lane); then y = the block at
// v + i*rb bytes widened by deq (to_float, each value one product) and
// acc = fma(y, vs[i], acc) (ggml_vec_mad_f32). The twin is vAccQuantGo.
#define VACCCELLS(deq, lcell, lrescale, lmad, ldone) \
	XORQ BX, BX \
	VMOVUPS 0(DI), Y0 \
	VMOVUPS 32(DI), Y1 \
	VMOVUPS 64(DI), Y2 \
	VMOVUPS 96(DI), Y3 \
	MOVL $0x3f800000, AX \
	VMOVD AX, X15 \
	TESTQ CX, CX \
	JZ   ldone \
lcell: \
	VMOVSS (R9)(BX*4), X8 \
	VUCOMISS X15, X8 \
	JNE  lrescale \
	JPS  lrescale \
	JMP  lmad \
lrescale: \
	VBROADCASTSS X8, Y8 \
	VMULPS Y8, Y0, Y0 \
	VMULPS Y8, Y1, Y1 \
	VMULPS Y8, Y2, Y2 \
	VMULPS Y8, Y3, Y3 \
lmad: \
	MOVWLZX 0(SI), AX \
	VMOVD   AX, X9 \
	VCVTPH2PS X9, X9 \
	VBROADCASTSS X9, Y9 \
	VBROADCASTSS (R8)(BX*4), Y8 \
	deq \
	VMULPS Y9, Y10, Y10 \
	VMULPS Y9, Y11, Y11 \
	VMULPS Y9, Y12, Y12 \
	VMULPS Y9, Y13, Y13 \
	VFMADD231PS Y8, Y10, Y0 \
	VFMADD231PS Y8, Y11, Y1 \
	VFMADD231PS Y8, Y12, Y2 \
	VFMADD231PS Y8, Y13, Y3 \
	ADDQ DX, SI \
	INCQ BX \
	CMPQ BX, CX \
	JB   lcell \
ldone: \
	VMOVUPS Y0, 0(DI) \
	VMOVUPS Y1, 32(DI) \
	VMOVUPS Y2, 64(DI) \
	VMOVUPS Y3, 96(DI) \
	VZEROUPPER

// func vAccQAVX2(acc *float32, v *byte, rb int, vs, ms *float32, n int, q4 int)
//
// VACCCELLS on a Q8_0 V cache (34-byte blocks), or on a Q4_0 one (18-byte
// blocks) when q4 != 0.
TEXT ·vAccQAVX2(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ rb+16(FP), DX
	MOVQ vs+24(FP), R8
	MOVQ ms+32(FP), R9
	MOVQ n+40(FP), CX
	MOVQ q4+48(FP), AX
	TESTQ AX, AX
	JNZ  q4
	VACCCELLS(DEQ8_0, q8cell, q8rescale, q8mad, q8done)
	RET

q4:
	MOVL $0x0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $8, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	VACCCELLS(DEQ4_0, q4cell, q4rescale, q4mad, q4done)
	RET
