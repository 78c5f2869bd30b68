#include "textflag.h"
#include "tile_amd64.h"

// Packed TQ2_0 tile, one activation column (see pack.go; tileTQ2_0Go is the
// element-wise statement of the same arithmetic). Sixteen rows in the
// sixteen dword lanes; for the reference's lane l, L = -(bsums[2l] +
// bsums[2l+1]) + Σ code·y over both halves and all four code planes
// (vpdpbusd, one activation dword broadcast per plane), then
// acc_l = fma(float(L), y.d*x.d, acc_l); the row's result is hsum_float_8
// over l.

DATA tq2mask3<>+0(SB)/4, $0x03030303
GLOBL tq2mask3<>(SB), RODATA|NOPTR, $4

// Lane l of a block, one column: the lane's eight code planes (both
// halves) into Z0-Z7, L = -(bsums) + Σ code·y (vpdpbusd, one activation
// dword broadcast per plane) and acc = fma(float(L), y.d*x.d (Z16), acc).
#define TQ2LANE(l, acc) \
	PLANES2(64*l, Z0, Z1, Z2, Z3) \
	PLANES2(512+64*l, Z4, Z5, Z6, Z7) \
	VPBROADCASTD (4*l)(R11), Z20 \
	VPDPBUSD.BCST (4*l)(AX), Z0, Z20 \
	VPDPBUSD.BCST (4*l+32)(AX), Z1, Z20 \
	VPDPBUSD.BCST (4*l+64)(AX), Z2, Z20 \
	VPDPBUSD.BCST (4*l+96)(AX), Z3, Z20 \
	VPDPBUSD.BCST (4*l+128)(AX), Z4, Z20 \
	VPDPBUSD.BCST (4*l+160)(AX), Z5, Z20 \
	VPDPBUSD.BCST (4*l+192)(AX), Z6, Z20 \
	VPDPBUSD.BCST (4*l+224)(AX), Z7, Z20 \
	VCVTDQ2PS Z20, Z20 \
	VFMADD231PS Z16, Z20, acc

// Lanes l and l+1 of a block for every column (tileTQ2_0NAVX512): their
// sixteen code planes into Z0-Z15, then per column the two lanes' sums as
// two independent vpdpbusd chains and acc = fma(float(L), y.d*x.d, acc)
// in the column's scratch (y.d*x.d from the frame).
#define TQ2PAIR(l, label) \
	PLANES2(64*l, Z0, Z1, Z2, Z3) \
	PLANES2(512+64*l, Z4, Z5, Z6, Z7) \
	PLANES2(64*l+64, Z8, Z9, Z10, Z11) \
	PLANES2(512+64*l+64, Z12, Z13, Z14, Z15) \
	MOVQ R9, AX \
	MOVQ R11, R14 \
	MOVQ BX, CX \
	SHRQ $3, CX            /* column stride of nbs in bytes: k/32*4 */ \
	MOVQ acc+64(FP), DX \
	XORQ R12, R12 \
	MOVQ nc+56(FP), R13 \
label: \
	VPBROADCASTD (4*l)(R14), Z20 \
	VPBROADCASTD (4*l+4)(R14), Z21 \
	VPDPBUSD.BCST (4*l)(AX), Z0, Z20 \
	VPDPBUSD.BCST (4*l+4)(AX), Z8, Z21 \
	VPDPBUSD.BCST (4*l+32)(AX), Z1, Z20 \
	VPDPBUSD.BCST (4*l+36)(AX), Z9, Z21 \
	VPDPBUSD.BCST (4*l+64)(AX), Z2, Z20 \
	VPDPBUSD.BCST (4*l+68)(AX), Z10, Z21 \
	VPDPBUSD.BCST (4*l+96)(AX), Z3, Z20 \
	VPDPBUSD.BCST (4*l+100)(AX), Z11, Z21 \
	VPDPBUSD.BCST (4*l+128)(AX), Z4, Z20 \
	VPDPBUSD.BCST (4*l+132)(AX), Z12, Z21 \
	VPDPBUSD.BCST (4*l+160)(AX), Z5, Z20 \
	VPDPBUSD.BCST (4*l+164)(AX), Z13, Z21 \
	VPDPBUSD.BCST (4*l+192)(AX), Z6, Z20 \
	VPDPBUSD.BCST (4*l+196)(AX), Z14, Z21 \
	VPDPBUSD.BCST (4*l+224)(AX), Z7, Z20 \
	VPDPBUSD.BCST (4*l+228)(AX), Z15, Z21 \
	VCVTDQ2PS Z20, Z20 \
	VCVTDQ2PS Z21, Z21 \
	VMOVUPS (SP)(R12*1), Z22 \
	VMOVUPS (64*l)(DX), Z23 \
	VFMADD231PS Z22, Z20, Z23 \
	VMOVUPS Z23, (64*l)(DX) \
	VMOVUPS (64*l+64)(DX), Z24 \
	VFMADD231PS Z22, Z21, Z24 \
	VMOVUPS Z24, (64*l+64)(DX) \
	ADDQ BX, AX \
	ADDQ CX, R14 \
	ADDQ $512, DX \
	ADDQ $64, R12 \
	DECQ R13 \
	JNZ  label


// Step s of lanes l and l+1 for four columns (TQ2PAIR4): plane s of lane l
// (activation dword 4l+32s) and of lane l+1 (4l+4+32s), column by column.
#define TQ2STEP4(l, s, p, q) \
	VPDPBUSD.BCST (4*l+32*s)(R9), p, Z17 \
	VPDPBUSD.BCST (4*l+32*s)(AX), p, Z18 \
	VPDPBUSD.BCST (4*l+32*s)(R12), p, Z19 \
	VPDPBUSD.BCST (4*l+32*s)(R14), p, Z20 \
	VPDPBUSD.BCST (4*l+4+32*s)(R9), q, Z21 \
	VPDPBUSD.BCST (4*l+4+32*s)(AX), q, Z22 \
	VPDPBUSD.BCST (4*l+4+32*s)(R12), q, Z23 \
	VPDPBUSD.BCST (4*l+4+32*s)(R14), q, Z24

// acc = fma(y.d*x.d, float(L), acc) for the lane accumulator at off(DX):
// the reference's fma(float(L), y.d*x.d, acc), its product commuted.
#define TQ2ACC4(off, dd, t) \
	VCVTDQ2PS t, t \
	VFMADD213PS off(DX), dd, t \
	VMOVUPS t, off(DX)

// Lanes l and l+1 of a block for four columns (tileTQ2_0AVX512Col4): the
// sixteen code planes decoded once, the columns' eight vpdpbusd chains
// (column c's qs at R9, AX, R12, R14, its -bsums at R11, CX, R13, R15)
// interleaved op by op, then each lane's accumulator in acc (column c at
// 512c bytes, y.d*x.d in Z25+c).
#define TQ2PAIR4(l) \
	PLANES2(64*l, Z0, Z1, Z2, Z3) \
	PLANES2(512+64*l, Z4, Z5, Z6, Z7) \
	PLANES2(64*l+64, Z8, Z9, Z10, Z11) \
	PLANES2(512+64*l+64, Z12, Z13, Z14, Z15) \
	VPBROADCASTD (4*l)(R11), Z17 \
	VPBROADCASTD (4*l)(CX), Z18 \
	VPBROADCASTD (4*l)(R13), Z19 \
	VPBROADCASTD (4*l)(R15), Z20 \
	VPBROADCASTD (4*l+4)(R11), Z21 \
	VPBROADCASTD (4*l+4)(CX), Z22 \
	VPBROADCASTD (4*l+4)(R13), Z23 \
	VPBROADCASTD (4*l+4)(R15), Z24 \
	TQ2STEP4(l, 0, Z0, Z8) \
	TQ2STEP4(l, 1, Z1, Z9) \
	TQ2STEP4(l, 2, Z2, Z10) \
	TQ2STEP4(l, 3, Z3, Z11) \
	TQ2STEP4(l, 4, Z4, Z12) \
	TQ2STEP4(l, 5, Z5, Z13) \
	TQ2STEP4(l, 6, Z6, Z14) \
	TQ2STEP4(l, 7, Z7, Z15) \
	TQ2ACC4(64*l, Z25, Z17) \
	TQ2ACC4(512+64*l, Z26, Z18) \
	TQ2ACC4(1024+64*l, Z27, Z19) \
	TQ2ACC4(1536+64*l, Z28, Z20) \
	TQ2ACC4(64*l+64, Z25, Z21) \
	TQ2ACC4(512+64*l+64, Z26, Z22) \
	TQ2ACC4(1024+64*l+64, Z27, Z23) \
	TQ2ACC4(1536+64*l+64, Z28, Z24)

// func tileTQ2_0AVX512(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, out *float32)
TEXT ·tileTQ2_0AVX512(SB), NOSPLIT, $0-56
	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ qs+24(FP), AX
	MOVQ d+32(FP), R10
	MOVQ nbs+40(FP), R11

	VPBROADCASTD tq2mask3<>(SB), Z31
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

block:
	PF1088(2048, SI)
	VCVTPH2PS (DI), Z16
	VMULPS.BCST (R10), Z16, Z16   // y.d*x.d per row

	TQ2LANE(0, Z8)
	TQ2LANE(1, Z9)
	TQ2LANE(2, Z10)
	TQ2LANE(3, Z11)
	TQ2LANE(4, Z12)
	TQ2LANE(5, Z13)
	TQ2LANE(6, Z14)
	TQ2LANE(7, Z15)
	ADDQ $TQ2BLOCK, SI
	ADDQ $TQ2BLOCK, DI
	ADDQ $256, AX
	ADDQ $4, R10
	ADDQ $32, R11
	DECQ R8
	JNZ  block

	// hsum_float_8 over the eight lanes.
	VADDPS Z12, Z8, Z8
	VADDPS Z13, Z9, Z9
	VADDPS Z14, Z10, Z10
	VADDPS Z15, Z11, Z11
	VADDPS Z10, Z8, Z8
	VADDPS Z11, Z9, Z9
	VADDPS Z9, Z8, Z8
	MOVQ out+48(FP), AX
	VMOVUPS Z8, (AX)
	VZEROUPPER
	RET

// func tileTQ2_0NAVX512(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, k int, nc int, acc *float32, out *float32)
//
// The multi-column TQ2_0 tile: per block, two lanes at a time, the sixteen
// code planes of lanes l and l+1 (two halves, four planes each) are decoded
// once and shared by all nc columns (1 <= nc <= 16); per column the
// arithmetic is tileTQ2_0AVX512's: L = -(bsums) + Σ code·y by vpdpbusd (the
// two lanes' sums two independent chains), acc_l = fma(float(L), y.d*x.d,
// acc_l), y.d*x.d formed once per block and column (in the frame). Column
// c's activations: qs+c*k, d+c*k/256, nbs+c*k/32; acc is scratch for
// nc*128 floats.
TEXT ·tileTQ2_0NAVX512(SB), 0, $1024-80
	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ qs+24(FP), R9
	MOVQ d+32(FP), R10
	MOVQ nbs+40(FP), R11
	MOVQ k+48(FP), BX
	VPBROADCASTD tq2mask3<>(SB), Z31

	MOVQ acc+64(FP), DX
	MOVQ nc+56(FP), R13
	SHLQ $3, R13
	VPXORD Z29, Z29, Z29
nzero:
	VMOVUPS Z29, (DX)
	ADDQ $64, DX
	DECQ R13
	JNZ  nzero

nblock:
	PF1088(2048, SI)
	VCVTPH2PS (DI), Z16
	// y.d*x.d per row, per column, into the frame.
	MOVQ R10, AX
	MOVQ BX, CX
	SHRQ $6, CX            // column stride of d in bytes: k/256*4
	XORQ R12, R12
	MOVQ nc+56(FP), R13
ndd:
	VMULPS.BCST (AX), Z16, Z17
	VMOVUPS Z17, (SP)(R12*1)
	ADDQ CX, AX
	ADDQ $64, R12
	DECQ R13
	JNZ  ndd

	TQ2PAIR(0, npair0)
	TQ2PAIR(2, npair2)
	TQ2PAIR(4, npair4)
	TQ2PAIR(6, npair6)

	ADDQ $TQ2BLOCK, SI
	ADDQ $TQ2BLOCK, DI
	ADDQ $256, R9
	ADDQ $4, R10
	ADDQ $32, R11
	DECQ R8
	JNZ  nblock

	MOVQ out+72(FP), AX
	MOVQ acc+64(FP), R14
	MOVQ nc+56(FP), R13
nfin:
	HSUM8AT(R14, AX)
	ADDQ $64, AX
	ADDQ $512, R14
	DECQ R13
	JNZ  nfin
	VZEROUPPER
	RET


// func tileTQ2_0AVX512Col4(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, k int, acc *float32, out *float32)
//
// tileTQ2_0NAVX512 at exactly four columns, the same arithmetic op by op:
// y.d*x.d of each column in a register, and the four columns' instructions
// interleaved so that their eight vpdpbusd chains (eight deep) sit side by
// side in the scheduler (as tileQ2_0AVX512Col4). acc: scratch for 512
// floats; out: 64.
TEXT ·tileTQ2_0AVX512Col4(SB), NOSPLIT, $0-72
	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ qs+24(FP), R9
	MOVQ d+32(FP), R10
	MOVQ nbs+40(FP), R11
	MOVQ k+48(FP), BX
	MOVQ acc+56(FP), DX
	VPBROADCASTD tq2mask3<>(SB), Z31

	MOVQ DX, AX
	MOVQ $32, CX
	VPXORD Z29, Z29, Z29
c4zero:
	VMOVUPS Z29, (AX)
	ADDQ $64, AX
	DECQ CX
	JNZ  c4zero

c4block:
	PF1088(2048, SI)
	VCVTPH2PS (DI), Z16
	// y.d*x.d per row and column (column stride of d: k/256 floats).
	MOVQ BX, R15
	SHRQ $6, R15
	VMULPS.BCST (R10), Z16, Z25
	LEAQ (R10)(R15*1), AX
	VMULPS.BCST (AX), Z16, Z26
	LEAQ (AX)(R15*1), AX
	VMULPS.BCST (AX), Z16, Z27
	LEAQ (AX)(R15*1), AX
	VMULPS.BCST (AX), Z16, Z28
	// The columns' qs (stride k bytes) and -bsums (stride k/32 int32s).
	LEAQ (R9)(BX*1), AX
	LEAQ (AX)(BX*1), R12
	LEAQ (R12)(BX*1), R14
	MOVQ BX, R15
	SHRQ $3, R15
	LEAQ (R11)(R15*1), CX
	LEAQ (CX)(R15*1), R13
	LEAQ (R13)(R15*1), R15

	TQ2PAIR4(0)
	TQ2PAIR4(2)
	TQ2PAIR4(4)
	TQ2PAIR4(6)

	ADDQ $TQ2BLOCK, SI
	ADDQ $TQ2BLOCK, DI
	ADDQ $256, R9
	ADDQ $4, R10
	ADDQ $32, R11
	DECQ R8
	JNZ  c4block

	MOVQ out+64(FP), AX
	HSUM8AT(DX, AX)
	ADDQ $512, DX
	ADDQ $64, AX
	HSUM8AT(DX, AX)
	ADDQ $512, DX
	ADDQ $64, AX
	HSUM8AT(DX, AX)
	ADDQ $512, DX
	ADDQ $64, AX
	HSUM8AT(DX, AX)
	VZEROUPPER
	RET
