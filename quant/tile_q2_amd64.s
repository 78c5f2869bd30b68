#include "textflag.h"
#include "tile_amd64.h"

// Packed Q2_0 tiles (see pack.go, tile_generic.go: tileQ2_0Go is the
// element-wise statement of the same arithmetic). Per packed block, sixteen
// rows in the sixteen dword lanes: isum_s = -Σq_s + Σ code·q (vpdpbusd, one
// activation dword broadcast per code plane), then the haswell chain
// s = fma(float(isum1), dy1, float(isum0)*dy0), sumf = fma(s, d, sumf).

DATA q2mask3<>+0(SB)/4, $0x03030303
GLOBL q2mask3<>(SB), RODATA|NOPTR, $4

DATA q2gfm<>+0(SB)/8, $0x0408000000000000
DATA q2gfm<>+8(SB)/8, $0x1020000000000000
DATA q2gfm<>+16(SB)/8, $0x4080000000000000
GLOBL q2gfm<>(SB), RODATA|NOPTR, $24

// A block's sixteen code planes into Z0-Z15 (vector v = 2s+g, plane n =
// (v >> 2n) & 3): by GFNI when the flag at gfni is non-zero, else by shifts
// and masks; shifts and planes are the function's labels for the two ways.
#define Q2PLANES16(gfni, shifts, planes) \
	CMPQ gfni, $0 \
	JEQ  shifts \
	PLANES2G(0, Z0, Z1, Z2, Z3) \
	PLANES2G(64, Z4, Z5, Z6, Z7) \
	PLANES2G(128, Z8, Z9, Z10, Z11) \
	PLANES2G(192, Z12, Z13, Z14, Z15) \
	JMP  planes \
shifts: \
	PLANES2(0, Z0, Z1, Z2, Z3) \
	PLANES2(64, Z4, Z5, Z6, Z7) \
	PLANES2(128, Z8, Z9, Z10, Z11) \
	PLANES2(192, Z12, Z13, Z14, Z15) \
planes:

// Step i of the four columns' eight chains (tileQ2_0AVX512Col4): the
// vpdpbusd of plane i (sub-block 0) and plane 8+i (sub-block 1) per column.
#define Q2STEP4(i, p0, p1) \
	VPDPBUSD.BCST (4*i)(R9), p0, Z20 \
	VPDPBUSD.BCST (4*i)(AX), p0, Z17 \
	VPDPBUSD.BCST (4*i)(R14), p0, Z19 \
	VPDPBUSD.BCST (4*i)(R12), p0, Z27 \
	VPDPBUSD.BCST (32+4*i)(R9), p1, Z21 \
	VPDPBUSD.BCST (32+4*i)(AX), p1, Z18 \
	VPDPBUSD.BCST (32+4*i)(R14), p1, Z22 \
	VPDPBUSD.BCST (32+4*i)(R12), p1, Z28

// func tileQ2_0AVX512(codes, scales *byte, nb int, qs *byte, dy *float32, nsum *int32, k int, nc int, out *float32, gfni int)
//
// out[16c+r] for c < nc, r < 16. Column c's activations start at qs+c*k,
// dy+c*k/32, nsum+c*k/32. nb >= 1, nc >= 1. With gfni != 0 (the CPU has
// GFNI) the code planes are decoded by one affine bit map each (PLANES2G),
// otherwise by shifts and masks (PLANES2): the same planes.
TEXT ·tileQ2_0AVX512(SB), NOSPLIT, $0-80
	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ qs+24(FP), R9
	MOVQ dy+32(FP), R10
	MOVQ nsum+40(FP), R11
	MOVQ k+48(FP), R12
	MOVQ nc+56(FP), R13
	MOVQ out+64(FP), DX

	VPBROADCASTD q2mask3<>(SB), Z31

	// Zero the nc accumulators (sumf lives in out).
	MOVQ DX, AX
	MOVQ R13, CX
	VPXORD Z30, Z30, Z30
zero:
	VMOVUPS Z30, (AX)
	ADDQ $64, AX
	DECQ CX
	JNZ  zero

	MOVQ R12, BX
	SHRQ $3, BX            // column stride of dy and nsum in bytes: k/32*4
	SUBQ R10, R11          // nsum - dy: both advance alike

block:
	PF288T0(2048, SI)
	Q2PLANES16(gfni+72(FP), shifts, planes)
	VCVTPH2PS (DI), Z16    // the sixteen rows' d

	MOVQ R9, AX            // qs of column 0 at this block
	MOVQ R10, CX           // dy (nsum at CX+R11)
	MOVQ DX, R12           // sumf
	MOVQ R13, R14          // columns left
	CMPQ R13, $1
	JNE  coln
col:
	VPBROADCASTD 0(CX)(R11*1), Z20
	VPBROADCASTD 4(CX)(R11*1), Z21
	VPDPBUSD.BCST 0(AX), Z0, Z20
	VPDPBUSD.BCST 4(AX), Z1, Z20
	VPDPBUSD.BCST 8(AX), Z2, Z20
	VPDPBUSD.BCST 12(AX), Z3, Z20
	// Each sub-block's sum in two chains of four (Z20+Z17, Z21+Z18): integer
	// sums, exact in any order, and half the dependency depth.
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPDPBUSD.BCST 16(AX), Z4, Z17
	VPDPBUSD.BCST 20(AX), Z5, Z17
	VPDPBUSD.BCST 24(AX), Z6, Z17
	VPDPBUSD.BCST 28(AX), Z7, Z17
	VPDPBUSD.BCST 32(AX), Z8, Z21
	VPDPBUSD.BCST 36(AX), Z9, Z21
	VPDPBUSD.BCST 40(AX), Z10, Z21
	VPDPBUSD.BCST 44(AX), Z11, Z21
	VPDPBUSD.BCST 48(AX), Z12, Z18
	VPDPBUSD.BCST 52(AX), Z13, Z18
	VPDPBUSD.BCST 56(AX), Z14, Z18
	VPDPBUSD.BCST 60(AX), Z15, Z18
	VPADDD Z17, Z20, Z20
	VPADDD Z18, Z21, Z21
	VCVTDQ2PS Z20, Z20
	VCVTDQ2PS Z21, Z21
	VMULPS.BCST 0(CX), Z20, Z20
	VFMADD231PS.BCST 4(CX), Z21, Z20
	VMOVUPS (R12), Z22
	VFMADD231PS Z16, Z20, Z22
	VMOVUPS Z22, (R12)
	ADDQ $64, R12
	ADDQ BX, CX
	LEAQ (AX)(BX*8), AX    // + k bytes
	DECQ R14
	JNZ  col
	JMP  next

	// Two or more columns: each sub-block's sum in one chain of eight (the
	// other columns' chains fill the latency), no adds to join them.
coln:
	VPBROADCASTD 0(CX)(R11*1), Z20
	VPBROADCASTD 4(CX)(R11*1), Z21
	VPDPBUSD.BCST 0(AX), Z0, Z20
	VPDPBUSD.BCST 32(AX), Z8, Z21
	VPDPBUSD.BCST 4(AX), Z1, Z20
	VPDPBUSD.BCST 36(AX), Z9, Z21
	VPDPBUSD.BCST 8(AX), Z2, Z20
	VPDPBUSD.BCST 40(AX), Z10, Z21
	VPDPBUSD.BCST 12(AX), Z3, Z20
	VPDPBUSD.BCST 44(AX), Z11, Z21
	VPDPBUSD.BCST 16(AX), Z4, Z20
	VPDPBUSD.BCST 48(AX), Z12, Z21
	VPDPBUSD.BCST 20(AX), Z5, Z20
	VPDPBUSD.BCST 52(AX), Z13, Z21
	VPDPBUSD.BCST 24(AX), Z6, Z20
	VPDPBUSD.BCST 56(AX), Z14, Z21
	VPDPBUSD.BCST 28(AX), Z7, Z20
	VPDPBUSD.BCST 60(AX), Z15, Z21
	VCVTDQ2PS Z20, Z20
	VCVTDQ2PS Z21, Z21
	VMULPS.BCST 0(CX), Z20, Z20
	VFMADD231PS.BCST 4(CX), Z21, Z20
	VMOVUPS (R12), Z22
	VFMADD231PS Z16, Z20, Z22
	VMOVUPS Z22, (R12)
	ADDQ $64, R12
	ADDQ BX, CX
	LEAQ (AX)(BX*8), AX    // + k bytes
	DECQ R14
	JNZ  coln

next:
	ADDQ $Q2BLOCK, SI
	ADDQ $Q2BLOCK, DI
	ADDQ $64, R9
	ADDQ $8, R10
	DECQ R8
	JNZ  block
	VZEROUPPER
	RET

// func tileQ2_0AVX512Col4(codes, scales *byte, nb int, qs *byte, dy *float32, nsum *int32, k int, out *float32, gfni int)
//
// tileQ2_0AVX512 at exactly four columns (the batch of four streams), the
// same arithmetic op by op: the columns' sumf stay in registers (Z23..Z26,
// stored after the last block), and the four columns' instructions come
// interleaved, so that their eight vpdpbusd chains (eight deep, latency
// ~5 each) sit side by side in the scheduler instead of one column's two
// filling it while the others wait behind them. Column c's qs, dy at R9,
// R10 (c = 0), AX, CX (1), R14, R15 (2), R12, R13 (3); nsum at dy+R11.
TEXT ·tileQ2_0AVX512Col4(SB), NOSPLIT, $0-72
	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ qs+24(FP), R9
	MOVQ dy+32(FP), R10
	MOVQ nsum+40(FP), R11
	MOVQ k+48(FP), DX

	VPBROADCASTD q2mask3<>(SB), Z31
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	MOVQ DX, BX
	SHRQ $3, BX            // column stride of dy and nsum in bytes: k/32*4
	SUBQ R10, R11          // nsum - dy: both advance alike

block4:
	PF288T0(2048, SI)
	Q2PLANES16(gfni+64(FP), shifts4, planes4)
	VCVTPH2PS (DI), Z16    // the sixteen rows' d

	LEAQ (R9)(DX*1), AX
	LEAQ (R10)(BX*1), CX
	LEAQ (AX)(DX*1), R14
	LEAQ (CX)(BX*1), R15
	LEAQ (R14)(DX*1), R12
	LEAQ (R15)(BX*1), R13
	VPBROADCASTD 0(R10)(R11*1), Z20
	VPBROADCASTD 0(CX)(R11*1), Z17
	VPBROADCASTD 0(R15)(R11*1), Z19
	VPBROADCASTD 0(R13)(R11*1), Z27
	VPBROADCASTD 4(R10)(R11*1), Z21
	VPBROADCASTD 4(CX)(R11*1), Z18
	VPBROADCASTD 4(R15)(R11*1), Z22
	VPBROADCASTD 4(R13)(R11*1), Z28
	Q2STEP4(0, Z0, Z8)
	Q2STEP4(1, Z1, Z9)
	Q2STEP4(2, Z2, Z10)
	Q2STEP4(3, Z3, Z11)
	Q2STEP4(4, Z4, Z12)
	Q2STEP4(5, Z5, Z13)
	Q2STEP4(6, Z6, Z14)
	Q2STEP4(7, Z7, Z15)
	VCVTDQ2PS Z20, Z20
	VCVTDQ2PS Z17, Z17
	VCVTDQ2PS Z19, Z19
	VCVTDQ2PS Z27, Z27
	VCVTDQ2PS Z21, Z21
	VCVTDQ2PS Z18, Z18
	VCVTDQ2PS Z22, Z22
	VCVTDQ2PS Z28, Z28
	VMULPS.BCST 0(R10), Z20, Z20
	VMULPS.BCST 0(CX), Z17, Z17
	VMULPS.BCST 0(R15), Z19, Z19
	VMULPS.BCST 0(R13), Z27, Z27
	VFMADD231PS.BCST 4(R10), Z21, Z20
	VFMADD231PS.BCST 4(CX), Z18, Z17
	VFMADD231PS.BCST 4(R15), Z22, Z19
	VFMADD231PS.BCST 4(R13), Z28, Z27
	VFMADD231PS Z16, Z20, Z23
	VFMADD231PS Z16, Z17, Z24
	VFMADD231PS Z16, Z19, Z25
	VFMADD231PS Z16, Z27, Z26

	ADDQ $Q2BLOCK, SI
	ADDQ $Q2BLOCK, DI
	ADDQ $64, R9
	ADDQ $8, R10
	DECQ R8
	JNZ  block4
	MOVQ out+56(FP), DX
	VMOVUPS Z23, (DX)
	VMOVUPS Z24, 64(DX)
	VMOVUPS Z25, 128(DX)
	VMOVUPS Z26, 192(DX)
	VZEROUPPER
	RET
