#include "textflag.h"

// Plain-layout Q1_0 row kernel (AVX-512), for matrices that were not
// Repack'ed: ggml_vec_dot_q1_0_q8_0's chain on one row of ggml's own blocks,
// two Q8_0 sub-blocks per zmm. Per block: for the pairs (0,1) and (2,3) the
// 64 sign bits are the vpblendmb mask choosing q or -q, vpdpbusd with ones
// gives [lanes of sub k | lanes of sub k+1], times [dy_k x8 | dy_k+1 x8]
// (exact products); blk = ((p0 + p1) + p2) + p3 per lane, acc = fma(d, blk,
// acc); the result is hsum_float_8(acc).

DATA pq1ones<>+0(SB)/4, $0x01010101
GLOBL pq1ones<>(SB), RODATA|NOPTR, $4

// func dotQ1_0PlainAVX512(w *byte, nb int, qs *byte, nqsOff int, dy8 *float32) float32
//
// dy8 holds, per Q8_0 sub-block, its d repeated 8 times.
TEXT ·dotQ1_0PlainAVX512(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qs+16(FP), AX
	MOVQ nqsOff+24(FP), R11
	MOVQ dy8+32(FP), DX
	VPBROADCASTD pq1ones<>(SB), Z30
	VXORPS Y15, Y15, Y15
ploop:
	KMOVQ 2(SI), K1
	KMOVQ 10(SI), K2
	VMOVDQU8 0(AX)(R11*1), Z0
	VMOVDQU8 64(AX)(R11*1), Z1
	VPBLENDMB 0(AX), Z0, K1, Z0
	VPBLENDMB 64(AX), Z1, K2, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPDPBUSD Z0, Z30, Z2
	VPDPBUSD Z1, Z30, Z3
	VCVTDQ2PS Z2, Z2
	VCVTDQ2PS Z3, Z3
	VMULPS 0(DX), Z2, Z2
	VMULPS 64(DX), Z3, Z3
	VEXTRACTF32X8 $1, Z2, Y4
	VADDPS Y4, Y2, Y4           // p0 + p1
	VADDPS Y3, Y4, Y4           // + p2
	VEXTRACTF32X8 $1, Z3, Y5
	VADDPS Y5, Y4, Y4           // + p3
	VPBROADCASTW 0(SI), X6
	VCVTPH2PS X6, Y6
	VFMADD231PS Y4, Y6, Y15     // acc = fma(d, blk, acc)
	ADDQ $18, SI
	ADDQ $128, AX
	ADDQ $128, DX
	DECQ CX
	JNZ  ploop
	// hsum_float_8: (v4+v0, v5+v1, v6+v2, v7+v3), then (t0+t2) + (t1+t3).
	VEXTRACTF128 $1, Y15, X0
	VADDPS X15, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET
