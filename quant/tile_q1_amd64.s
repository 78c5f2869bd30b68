#include "textflag.h"
#include "tile_amd64.h"

// Packed Q1_0 tiles at AVX-512 (see pack.go; tileQ1_0Go is the element-wise
// statement of the same arithmetic). Sixteen rows in the sixteen dword
// lanes; per block and lane j, L_k the reference's lane sum of sub-block k,
// blk = float(L0)*dy0, blk = fma(float(Lk), dyk, blk), acc_j = fma(d, blk,
// acc_j); the row's result is hsum_float_8 over j, by lookup tables.

DATA q1ones<>+0(SB)/4, $0x01010101
GLOBL q1ones<>(SB), RODATA|NOPTR, $4

// The tile by lookup tables. For one activation column, q1LUTAVX512
// stores per Q8_0 sub-block i and lane j the sixteen products
// P[n] = float(L(n))*dy_i, L(n) the reference's lane sum of activations
// 32i+4j..+3 under weight bits n (bit e set: q, clear: -q with int8 wrap),
// one zmm at lut+(8i+j)*64 (2 KB per Q1_0 block). |L| <= 512 and dy an f16
// value make the product exact, so the reference's
// blk = fma(float(L_k), dy_k, blk) is blk + P exactly rounded once, and its
// first blk = float(L_0)*dy_0 is P itself: tileQ1_0LAVX512 forms, per
// block, lane j and sixteen rows, blk = P_0 + P_1 + P_2 + P_3 in that order
// (each P one vpermps of the table by the rows' words shifted right by 4j,
// vpermps reading the low four bits of each index), then
// acc_j = fma(d, blk, acc_j) and the hsum_float_8 over j.

DATA q1nib<>+0(SB)/8, $0xfedcba9876543210
GLOBL q1nib<>(SB), RODATA|NOPTR, $8

// func q1LUTAVX512(qs *byte, nqsOff int, dy *float32, nsub int, lut *float32)
//
// The tables of nsub sub-blocks: activations at qs (their int8 negations
// nqsOff bytes further), scales at dy, 128 floats per sub-block at lut.
// Mask q1nib has bit 4n+e = bit e of n: dword n of the blend takes q where
// bit e of n is set.
TEXT ·q1LUTAVX512(SB), NOSPLIT, $0-40
	MOVQ qs+0(FP), AX
	MOVQ nqsOff+8(FP), R11
	MOVQ dy+16(FP), CX
	MOVQ nsub+24(FP), R8
	MOVQ lut+32(FP), DI
	VPBROADCASTD q1ones<>(SB), Z30
	KMOVQ q1nib<>(SB), K1
lsub:
	VBROADCASTSS (CX), Z29
	VPBROADCASTD 0(AX), Z18
	VPBROADCASTD 0(AX)(R11*1), Z17
	VPBLENDMB Z18, Z17, K1, Z19
	VPXORD Z20, Z20, Z20
	VPDPBUSD Z19, Z30, Z20
	VCVTDQ2PS Z20, Z20
	VMULPS Z29, Z20, Z20
	VMOVUPS Z20, 0(DI)
	VPBROADCASTD 4(AX), Z18
	VPBROADCASTD 4(AX)(R11*1), Z17
	VPBLENDMB Z18, Z17, K1, Z19
	VPXORD Z21, Z21, Z21
	VPDPBUSD Z19, Z30, Z21
	VCVTDQ2PS Z21, Z21
	VMULPS Z29, Z21, Z21
	VMOVUPS Z21, 64(DI)
	VPBROADCASTD 8(AX), Z18
	VPBROADCASTD 8(AX)(R11*1), Z17
	VPBLENDMB Z18, Z17, K1, Z19
	VPXORD Z22, Z22, Z22
	VPDPBUSD Z19, Z30, Z22
	VCVTDQ2PS Z22, Z22
	VMULPS Z29, Z22, Z22
	VMOVUPS Z22, 128(DI)
	VPBROADCASTD 12(AX), Z18
	VPBROADCASTD 12(AX)(R11*1), Z17
	VPBLENDMB Z18, Z17, K1, Z19
	VPXORD Z23, Z23, Z23
	VPDPBUSD Z19, Z30, Z23
	VCVTDQ2PS Z23, Z23
	VMULPS Z29, Z23, Z23
	VMOVUPS Z23, 192(DI)
	VPBROADCASTD 16(AX), Z18
	VPBROADCASTD 16(AX)(R11*1), Z17
	VPBLENDMB Z18, Z17, K1, Z19
	VPXORD Z20, Z20, Z20
	VPDPBUSD Z19, Z30, Z20
	VCVTDQ2PS Z20, Z20
	VMULPS Z29, Z20, Z20
	VMOVUPS Z20, 256(DI)
	VPBROADCASTD 20(AX), Z18
	VPBROADCASTD 20(AX)(R11*1), Z17
	VPBLENDMB Z18, Z17, K1, Z19
	VPXORD Z21, Z21, Z21
	VPDPBUSD Z19, Z30, Z21
	VCVTDQ2PS Z21, Z21
	VMULPS Z29, Z21, Z21
	VMOVUPS Z21, 320(DI)
	VPBROADCASTD 24(AX), Z18
	VPBROADCASTD 24(AX)(R11*1), Z17
	VPBLENDMB Z18, Z17, K1, Z19
	VPXORD Z22, Z22, Z22
	VPDPBUSD Z19, Z30, Z22
	VCVTDQ2PS Z22, Z22
	VMULPS Z29, Z22, Z22
	VMOVUPS Z22, 384(DI)
	VPBROADCASTD 28(AX), Z18
	VPBROADCASTD 28(AX)(R11*1), Z17
	VPBLENDMB Z18, Z17, K1, Z19
	VPXORD Z23, Z23, Z23
	VPDPBUSD Z19, Z30, Z23
	VCVTDQ2PS Z23, Z23
	VMULPS Z29, Z23, Z23
	VMOVUPS Z23, 448(DI)
	ADDQ $32, AX
	ADDQ $4, CX
	ADDQ $512, DI
	DECQ R8
	JNZ  lsub
	VZEROUPPER
	RET

// func tileQ1_0LAVX512(codes, scales *byte, nb int, lut *float32, out *float32)
//
// out[r] for the sixteen rows of one packed group against the column whose
// tables (q1LUTAVX512) start at lut.
TEXT ·tileQ1_0LAVX512(SB), NOSPLIT, $0-40
	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ lut+24(FP), AX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
lblock:
	VCVTPH2PS (DI), Z12
	VMOVDQU32 0(SI), Z8
	VMOVDQU32 64(SI), Z9
	VMOVDQU32 128(SI), Z10
	VMOVDQU32 192(SI), Z11
	VPERMPS 0(AX), Z8, Z16
	VPERMPS 512(AX), Z9, Z17
	VADDPS Z17, Z16, Z16
	VPERMPS 1024(AX), Z10, Z17
	VADDPS Z17, Z16, Z16
	VPERMPS 1536(AX), Z11, Z17
	VADDPS Z17, Z16, Z16
	VFMADD231PS Z16, Z12, Z0
	VPSRLD $4, Z8, Z25
	VPERMPS 64(AX), Z25, Z18
	VPSRLD $4, Z9, Z27
	VPERMPS 576(AX), Z27, Z19
	VADDPS Z19, Z18, Z18
	VPSRLD $4, Z10, Z29
	VPERMPS 1088(AX), Z29, Z19
	VADDPS Z19, Z18, Z18
	VPSRLD $4, Z11, Z31
	VPERMPS 1600(AX), Z31, Z19
	VADDPS Z19, Z18, Z18
	VFMADD231PS Z18, Z12, Z1
	VPSRLD $8, Z8, Z24
	VPERMPS 128(AX), Z24, Z20
	VPSRLD $8, Z9, Z26
	VPERMPS 640(AX), Z26, Z21
	VADDPS Z21, Z20, Z20
	VPSRLD $8, Z10, Z28
	VPERMPS 1152(AX), Z28, Z21
	VADDPS Z21, Z20, Z20
	VPSRLD $8, Z11, Z30
	VPERMPS 1664(AX), Z30, Z21
	VADDPS Z21, Z20, Z20
	VFMADD231PS Z20, Z12, Z2
	VPSRLD $12, Z8, Z25
	VPERMPS 192(AX), Z25, Z22
	VPSRLD $12, Z9, Z27
	VPERMPS 704(AX), Z27, Z23
	VADDPS Z23, Z22, Z22
	VPSRLD $12, Z10, Z29
	VPERMPS 1216(AX), Z29, Z23
	VADDPS Z23, Z22, Z22
	VPSRLD $12, Z11, Z31
	VPERMPS 1728(AX), Z31, Z23
	VADDPS Z23, Z22, Z22
	VFMADD231PS Z22, Z12, Z3
	VPSRLD $16, Z8, Z24
	VPERMPS 256(AX), Z24, Z16
	VPSRLD $16, Z9, Z26
	VPERMPS 768(AX), Z26, Z17
	VADDPS Z17, Z16, Z16
	VPSRLD $16, Z10, Z28
	VPERMPS 1280(AX), Z28, Z17
	VADDPS Z17, Z16, Z16
	VPSRLD $16, Z11, Z30
	VPERMPS 1792(AX), Z30, Z17
	VADDPS Z17, Z16, Z16
	VFMADD231PS Z16, Z12, Z4
	VPSRLD $20, Z8, Z25
	VPERMPS 320(AX), Z25, Z18
	VPSRLD $20, Z9, Z27
	VPERMPS 832(AX), Z27, Z19
	VADDPS Z19, Z18, Z18
	VPSRLD $20, Z10, Z29
	VPERMPS 1344(AX), Z29, Z19
	VADDPS Z19, Z18, Z18
	VPSRLD $20, Z11, Z31
	VPERMPS 1856(AX), Z31, Z19
	VADDPS Z19, Z18, Z18
	VFMADD231PS Z18, Z12, Z5
	VPSRLD $24, Z8, Z24
	VPERMPS 384(AX), Z24, Z20
	VPSRLD $24, Z9, Z26
	VPERMPS 896(AX), Z26, Z21
	VADDPS Z21, Z20, Z20
	VPSRLD $24, Z10, Z28
	VPERMPS 1408(AX), Z28, Z21
	VADDPS Z21, Z20, Z20
	VPSRLD $24, Z11, Z30
	VPERMPS 1920(AX), Z30, Z21
	VADDPS Z21, Z20, Z20
	VFMADD231PS Z20, Z12, Z6
	VPSRLD $28, Z8, Z25
	VPERMPS 448(AX), Z25, Z22
	VPSRLD $28, Z9, Z27
	VPERMPS 960(AX), Z27, Z23
	VADDPS Z23, Z22, Z22
	VPSRLD $28, Z10, Z29
	VPERMPS 1472(AX), Z29, Z23
	VADDPS Z23, Z22, Z22
	VPSRLD $28, Z11, Z31
	VPERMPS 1984(AX), Z31, Z23
	VADDPS Z23, Z22, Z22
	VFMADD231PS Z22, Z12, Z7
	ADDQ $256, SI
	ADDQ $32, DI
	ADDQ $2048, AX
	DECQ R8
	JNZ  lblock

	// hsum_float_8: (a0+a4 + a2+a6) + (a1+a5 + a3+a7).
	MOVQ out+32(FP), AX
	VADDPS Z4, Z0, Z0
	VADDPS Z5, Z1, Z1
	VADDPS Z6, Z2, Z2
	VADDPS Z7, Z3, Z3
	VADDPS Z2, Z0, Z0
	VADDPS Z3, Z1, Z1
	VADDPS Z1, Z0, Z0
	VMOVUPS Z0, (AX)
	VZEROUPPER
	RET

