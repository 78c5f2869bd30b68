#include "textflag.h"

// Packed Q1_0 tile (see pack.go; tileQ1_0Go is the element-wise statement of
// the same arithmetic). Sixteen rows in the sixteen dword lanes; for lane j
// of sub-block k the packed word is the vpblendmb mask choosing q (bit set)
// or -q (clear, int8 wrap as the reference's vpsubb) from the broadcast
// activation dword, vpdpbusd with ones sums the four bytes (the reference's
// vpmaddubsw/vpmaddwd lane), then blk = float(L0)*dy0,
// blk = fma(float(Lk), dyk, blk), acc_j = fma(d, blk, acc_j); the row's
// result is hsum_float_8 over j.

DATA q1ones<>+0(SB)/4, $0x01010101
GLOBL q1ones<>(SB), RODATA|NOPTR, $4

// One lane (k, j): L in Z20 as float.
#define Q1KJ(woff, qoff) \
	KMOVQ        woff(SI), K1 \
	VPBROADCASTD qoff(AX), Z18 \
	VPBROADCASTD qoff(AX)(R11*1), Z17 \
	VPBLENDMB    Z18, Z17, K1, Z19 \
	VPXORD       Z20, Z20, Z20 \
	VPDPBUSD     Z19, Z30, Z20 \
	VCVTDQ2PS    Z20, Z20

// func tileQ1_0AVX512(codes, scales *byte, nb int, qs *byte, nqsOff int, dy *float32, k int, nc int, acc *float32, out *float32)
//
// out[16c+r] for c < nc, r < 16; acc is scratch for nc*8*16 floats.
// Column c's activations: qs+c*k (and -q at nqsOff bytes further), dy+c*k/32.
TEXT ·tileQ1_0AVX512(SB), NOSPLIT, $0-80
	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ qs+24(FP), R9
	MOVQ nqsOff+32(FP), R11
	MOVQ dy+40(FP), R10
	MOVQ k+48(FP), BX
	MOVQ nc+56(FP), R13
	MOVQ acc+64(FP), DX
	MOVQ BX, CX
	SHRQ $3, CX            // dy column stride in bytes

	VPBROADCASTD q1ones<>(SB), Z30

	// Zero the accumulators.
	MOVQ DX, AX
	MOVQ R13, R12
	SHLQ $3, R12
	VPXORD Z29, Z29, Z29
zero:
	VMOVUPS Z29, (AX)
	ADDQ $64, AX
	DECQ R12
	JNZ  zero

block:
	VCVTPH2PS (DI), Z16
	MOVQ R9, AX            // qs of column 0 at this block
	MOVQ R10, R12          // dy
	MOVQ DX, R14           // acc
	MOVQ nc+56(FP), R13
col:

	Q1KJ(0, 0)
	VMULPS.BCST 0(R12), Z20, Z21
	Q1KJ(64, 32)
	VFMADD231PS.BCST 4(R12), Z20, Z21
	Q1KJ(128, 64)
	VFMADD231PS.BCST 8(R12), Z20, Z21
	Q1KJ(192, 96)
	VFMADD231PS.BCST 12(R12), Z20, Z21
	VMOVUPS 0(R14), Z22
	VFMADD231PS Z21, Z16, Z22
	VMOVUPS Z22, 0(R14)
	Q1KJ(8, 4)
	VMULPS.BCST 0(R12), Z20, Z21
	Q1KJ(72, 36)
	VFMADD231PS.BCST 4(R12), Z20, Z21
	Q1KJ(136, 68)
	VFMADD231PS.BCST 8(R12), Z20, Z21
	Q1KJ(200, 100)
	VFMADD231PS.BCST 12(R12), Z20, Z21
	VMOVUPS 64(R14), Z22
	VFMADD231PS Z21, Z16, Z22
	VMOVUPS Z22, 64(R14)
	Q1KJ(16, 8)
	VMULPS.BCST 0(R12), Z20, Z21
	Q1KJ(80, 40)
	VFMADD231PS.BCST 4(R12), Z20, Z21
	Q1KJ(144, 72)
	VFMADD231PS.BCST 8(R12), Z20, Z21
	Q1KJ(208, 104)
	VFMADD231PS.BCST 12(R12), Z20, Z21
	VMOVUPS 128(R14), Z22
	VFMADD231PS Z21, Z16, Z22
	VMOVUPS Z22, 128(R14)
	Q1KJ(24, 12)
	VMULPS.BCST 0(R12), Z20, Z21
	Q1KJ(88, 44)
	VFMADD231PS.BCST 4(R12), Z20, Z21
	Q1KJ(152, 76)
	VFMADD231PS.BCST 8(R12), Z20, Z21
	Q1KJ(216, 108)
	VFMADD231PS.BCST 12(R12), Z20, Z21
	VMOVUPS 192(R14), Z22
	VFMADD231PS Z21, Z16, Z22
	VMOVUPS Z22, 192(R14)
	Q1KJ(32, 16)
	VMULPS.BCST 0(R12), Z20, Z21
	Q1KJ(96, 48)
	VFMADD231PS.BCST 4(R12), Z20, Z21
	Q1KJ(160, 80)
	VFMADD231PS.BCST 8(R12), Z20, Z21
	Q1KJ(224, 112)
	VFMADD231PS.BCST 12(R12), Z20, Z21
	VMOVUPS 256(R14), Z22
	VFMADD231PS Z21, Z16, Z22
	VMOVUPS Z22, 256(R14)
	Q1KJ(40, 20)
	VMULPS.BCST 0(R12), Z20, Z21
	Q1KJ(104, 52)
	VFMADD231PS.BCST 4(R12), Z20, Z21
	Q1KJ(168, 84)
	VFMADD231PS.BCST 8(R12), Z20, Z21
	Q1KJ(232, 116)
	VFMADD231PS.BCST 12(R12), Z20, Z21
	VMOVUPS 320(R14), Z22
	VFMADD231PS Z21, Z16, Z22
	VMOVUPS Z22, 320(R14)
	Q1KJ(48, 24)
	VMULPS.BCST 0(R12), Z20, Z21
	Q1KJ(112, 56)
	VFMADD231PS.BCST 4(R12), Z20, Z21
	Q1KJ(176, 88)
	VFMADD231PS.BCST 8(R12), Z20, Z21
	Q1KJ(240, 120)
	VFMADD231PS.BCST 12(R12), Z20, Z21
	VMOVUPS 384(R14), Z22
	VFMADD231PS Z21, Z16, Z22
	VMOVUPS Z22, 384(R14)
	Q1KJ(56, 28)
	VMULPS.BCST 0(R12), Z20, Z21
	Q1KJ(120, 60)
	VFMADD231PS.BCST 4(R12), Z20, Z21
	Q1KJ(184, 92)
	VFMADD231PS.BCST 8(R12), Z20, Z21
	Q1KJ(248, 124)
	VFMADD231PS.BCST 12(R12), Z20, Z21
	VMOVUPS 448(R14), Z22
	VFMADD231PS Z21, Z16, Z22
	VMOVUPS Z22, 448(R14)
	ADDQ $512, R14
	ADDQ CX, R12
	ADDQ BX, AX
	DECQ R13
	JNZ  col

	ADDQ $256, SI
	ADDQ $32, DI
	ADDQ $128, R9
	ADDQ $16, R10
	DECQ R8
	JNZ  block

	// hsum_float_8 over the eight lane accumulators of each column.
	MOVQ out+72(FP), AX
	MOVQ DX, R14
	MOVQ nc+56(FP), R13
fin:
	VMOVUPS 0(R14), Z0
	VMOVUPS 64(R14), Z1
	VMOVUPS 128(R14), Z2
	VMOVUPS 192(R14), Z3
	VADDPS  256(R14), Z0, Z0
	VADDPS  320(R14), Z1, Z1
	VADDPS  384(R14), Z2, Z2
	VADDPS  448(R14), Z3, Z3
	VADDPS  Z2, Z0, Z0
	VADDPS  Z3, Z1, Z1
	VADDPS  Z1, Z0, Z0
	VMOVUPS Z0, (AX)
	ADDQ $64, AX
	ADDQ $512, R14
	DECQ R13
	JNZ  fin
	VZEROUPPER
	RET
