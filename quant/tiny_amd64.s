#include "textflag.h"

// tinyBLAS's AVX2 tiles (llamafile's tinyBLAS<8, __m256, __m256, TA, TB,
// float>::gemm as the haswell build compiled it): every output is its own
// 8-lane chain acc = vfmadd231ps(A[i][l:l+8], B[j][l:l+8], acc) over l in
// steps of 8 from acc = 0, then hsum: the high half added to the low half,
// then (t0+t2) + (t1+t3) (vmovhlps, vaddps, vmovshdup, vaddss). The tile
// only shares the loads between outputs; no output's arithmetic depends on
// its tile mates. Three element types, each widened exactly to float32:
// f32 (vmovups), f16 (vcvtph2ps, F16C) and bf16 (vpmovzxwd, vpslld $16).
//
// func tinyF16x4x3AVX2(a *uint16, lda int, b *uint16, ldb int, k int, c *float32, ldc int)
//
// c[j*ldc+i] for rows i < 4 of a (lda elements apart) and columns j < 3 of
// b (ldb elements apart), k a positive multiple of 8. The 1x1 kernels
// compute one output, returned.

#define LOADF32(addr, r) VMOVUPS addr, r
#define LOADF16(addr, r) VCVTPH2PS addr, r
#define LOADBF16(addr, r) VPMOVZXWD addr, r; VPSLLD $16, r, r

// HSUM leaves hsum(Yn) in the low lane of Xn, t and u scratch.
#define HSUM(Yn, Xn, Xt) \
	VEXTRACTF128 $1, Yn, Xt \
	VADDPS       Xn, Xt, Xn \
	VMOVHLPS     Xn, Xn, Xt \
	VADDPS       Xt, Xn, Xn \
	VMOVSHDUP    Xn, Xt     \
	VADDSS       Xt, Xn, Xn

// TILE4x3 is the 4-row, 3-column tile: LOAD the element loader, SH the
// log2 of the element size, STEP the bytes of 8 elements.
#define TILE4x3(LOAD, SH, STEP) \
	MOVQ a+0(FP), SI         \
	MOVQ lda+8(FP), R8       \
	SHLQ $SH, R8             \
	LEAQ (R8)(R8*2), R9      \
	MOVQ b+16(FP), DI        \
	MOVQ ldb+24(FP), R10     \
	SHLQ $SH, R10            \
	MOVQ k+32(FP), CX        \
	SHRQ $3, CX              \
	VXORPS Y0, Y0, Y0        \
	VXORPS Y1, Y1, Y1        \
	VXORPS Y2, Y2, Y2        \
	VXORPS Y3, Y3, Y3        \
	VXORPS Y4, Y4, Y4        \
	VXORPS Y5, Y5, Y5        \
	VXORPS Y6, Y6, Y6        \
	VXORPS Y7, Y7, Y7        \
	VXORPS Y8, Y8, Y8        \
	VXORPS Y9, Y9, Y9        \
	VXORPS Y10, Y10, Y10     \
	VXORPS Y11, Y11, Y11     \
loop4x3:                   \
	LOAD((DI), Y12)          \
	LOAD((DI)(R10*1), Y13)   \
	LOAD((DI)(R10*2), Y14)   \
	LOAD((SI), Y15)          \
	VFMADD231PS Y12, Y15, Y0 \
	VFMADD231PS Y13, Y15, Y1 \
	VFMADD231PS Y14, Y15, Y2 \
	LOAD((SI)(R8*1), Y15)    \
	VFMADD231PS Y12, Y15, Y3 \
	VFMADD231PS Y13, Y15, Y4 \
	VFMADD231PS Y14, Y15, Y5 \
	LOAD((SI)(R8*2), Y15)    \
	VFMADD231PS Y12, Y15, Y6 \
	VFMADD231PS Y13, Y15, Y7 \
	VFMADD231PS Y14, Y15, Y8 \
	LOAD((SI)(R9*1), Y15)    \
	VFMADD231PS Y12, Y15, Y9 \
	VFMADD231PS Y13, Y15, Y10 \
	VFMADD231PS Y14, Y15, Y11 \
	ADDQ $STEP, SI           \
	ADDQ $STEP, DI           \
	DECQ CX                  \
	JNZ  loop4x3             \
	MOVQ c+40(FP), DX        \
	MOVQ ldc+48(FP), R11     \
	SHLQ $2, R11             \
	HSUM(Y0, X0, X15)        \
	VMOVSS X0, 0(DX)         \
	HSUM(Y3, X3, X15)        \
	VMOVSS X3, 4(DX)         \
	HSUM(Y6, X6, X15)        \
	VMOVSS X6, 8(DX)         \
	HSUM(Y9, X9, X15)        \
	VMOVSS X9, 12(DX)        \
	ADDQ R11, DX             \
	HSUM(Y1, X1, X15)        \
	VMOVSS X1, 0(DX)         \
	HSUM(Y4, X4, X15)        \
	VMOVSS X4, 4(DX)         \
	HSUM(Y7, X7, X15)        \
	VMOVSS X7, 8(DX)         \
	HSUM(Y10, X10, X15)      \
	VMOVSS X10, 12(DX)       \
	ADDQ R11, DX             \
	HSUM(Y2, X2, X15)        \
	VMOVSS X2, 0(DX)         \
	HSUM(Y5, X5, X15)        \
	VMOVSS X5, 4(DX)         \
	HSUM(Y8, X8, X15)        \
	VMOVSS X8, 8(DX)         \
	HSUM(Y11, X11, X15)      \
	VMOVSS X11, 12(DX)       \
	VZEROUPPER               \
	RET

// DOT1 is one output: four rows' worth of independent work is not there,
// so the chain runs alone (its latency bounds it).
#define DOT1(LOAD, STEP) \
	MOVQ a+0(FP), SI      \
	MOVQ b+8(FP), DI      \
	MOVQ k+16(FP), CX     \
	SHRQ $3, CX           \
	VXORPS Y0, Y0, Y0     \
loop1:                  \
	LOAD((SI), Y1)        \
	LOAD((DI), Y2)        \
	VFMADD231PS Y2, Y1, Y0 \
	ADDQ $STEP, SI        \
	ADDQ $STEP, DI        \
	DECQ CX               \
	JNZ  loop1            \
	HSUM(Y0, X0, X1)      \
	VMOVSS X0, ret+24(FP) \
	VZEROUPPER            \
	RET

// func tinyF32x4x3AVX2(a *float32, lda int, b *float32, ldb int, k int, c *float32, ldc int)
TEXT ·tinyF32x4x3AVX2(SB), NOSPLIT, $0-56
	TILE4x3(LOADF32, 2, 32)

// func tinyF16x4x3AVX2(a *uint16, lda int, b *uint16, ldb int, k int, c *float32, ldc int)
TEXT ·tinyF16x4x3AVX2(SB), NOSPLIT, $0-56
	TILE4x3(LOADF16, 1, 16)

// func tinyBF16x4x3AVX2(a *uint16, lda int, b *uint16, ldb int, k int, c *float32, ldc int)
TEXT ·tinyBF16x4x3AVX2(SB), NOSPLIT, $0-56
	TILE4x3(LOADBF16, 1, 16)

// func tinyF32x1AVX2(a, b *float32, k int) float32
TEXT ·tinyF32x1AVX2(SB), NOSPLIT, $0-28
	DOT1(LOADF32, 32)

// func tinyF16x1AVX2(a, b *uint16, k int) float32
TEXT ·tinyF16x1AVX2(SB), NOSPLIT, $0-28
	DOT1(LOADF16, 16)

// func tinyBF16x1AVX2(a, b *uint16, k int) float32
TEXT ·tinyBF16x1AVX2(SB), NOSPLIT, $0-28
	DOT1(LOADBF16, 16)
