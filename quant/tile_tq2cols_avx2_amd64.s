#include "textflag.h"
#include "tile_amd64.h"

// The AVX2 TQ2_0 tile over several activation columns: each lane group's
// code planes are unpacked once (Y0-Y7) and multiplied by every column's
// activations, so that the columns of a batch share the unpacking; per
// column the integer sums, their order, the lane accumulators and the final
// hsum_float_8 are tileTQ2_0AVX2's (tile_avx2_amd64.s), instruction for
// instruction.

DATA tq2cmask3<>+0(SB)/4, $0x03030303
GLOBL tq2cmask3<>(SB), RODATA|NOPTR, $4
DATA tq2cones16<>+0(SB)/4, $0x00010001
GLOBL tq2cones16<>(SB), RODATA|NOPTR, $4

// Lane group j of the block: its eight code planes (the vectors at 64j and
// 512+64j, each (v >> 2n) & 3) into Y0-Y7, then for every column its int16
// sum against the activations at AX+4j+32p (plane p), vpmaddwd with ones,
// + its bsum at DX+4j, float, and acc_j = fma(sum, scale, acc_j) with the
// column's scale in the frame at CX and acc_j at 32j(DI)(CX*8).
#define TQ2GROUP(j4, j32, v0, v1, label) \
	VMOVDQU v0(SI)(R12*1), Y0 \
	VPSRLW  $2, Y0, Y1 \
	VPSRLW  $4, Y0, Y2 \
	VPSRLW  $6, Y0, Y3 \
	VPAND   Y13, Y0, Y0 \
	VPAND   Y13, Y1, Y1 \
	VPAND   Y13, Y2, Y2 \
	VPAND   Y13, Y3, Y3 \
	VMOVDQU v1(SI)(R12*1), Y4 \
	VPSRLW  $2, Y4, Y5 \
	VPSRLW  $4, Y4, Y6 \
	VPSRLW  $6, Y4, Y7 \
	VPAND   Y13, Y4, Y4 \
	VPAND   Y13, Y5, Y5 \
	VPAND   Y13, Y6, Y6 \
	VPAND   Y13, Y7, Y7 \
	MOVQ R9, AX \
	MOVQ R11, DX \
	XORQ CX, CX \
	MOVQ nc+56(FP), R14 \
label: \
	VPBROADCASTD j4(AX), Y10 \
	VPMADDUBSW Y10, Y0, Y8 \
	VPBROADCASTD j4+32(AX), Y10 \
	VPMADDUBSW Y10, Y1, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD j4+64(AX), Y10 \
	VPMADDUBSW Y10, Y2, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD j4+96(AX), Y10 \
	VPMADDUBSW Y10, Y3, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD j4+128(AX), Y10 \
	VPMADDUBSW Y10, Y4, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD j4+160(AX), Y10 \
	VPMADDUBSW Y10, Y5, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD j4+192(AX), Y10 \
	VPMADDUBSW Y10, Y6, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD j4+224(AX), Y10 \
	VPMADDUBSW Y10, Y7, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPMADDWD Y12, Y8, Y8 \
	VPBROADCASTD j4(DX), Y10 \
	VPADDD Y10, Y8, Y8 \
	VCVTDQ2PS Y8, Y8 \
	VMOVUPS j32(DI)(CX*8), Y9 \
	VFMADD231PS (SP)(CX*1), Y8, Y9 \
	VMOVUPS Y9, j32(DI)(CX*8) \
	ADDQ k+48(FP), AX \
	LEAQ (DX)(BX*8), DX \
	ADDQ $64, CX \
	DECQ R14 \
	JNZ  label

// func tileTQ2_0AVX2Cols(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, k int, nc int, acc *float32, out *float32)
//
// out[16c+r] for c < nc (1 <= nc <= 16), r < 16, as tileTQ2_0AVX2 gives
// column c; column c's activations start at qs+c*k, d+c*k/256,
// nbs+8*c*k/256; acc is scratch for 128*nc floats (the columns' lane
// accumulators: column c's at 512c bytes, a half's at 256 more, lane j at
// 32j). nb >= 1. The frame holds each column's scale d_w*d_c of the block
// (64 bytes a column).
TEXT ·tileTQ2_0AVX2Cols(SB), 0, $1024-80
	VPBROADCASTD tq2cmask3<>(SB), Y13
	VPBROADCASTD tq2cones16<>(SB), Y12
	MOVQ k+48(FP), BX
	SHRQ $6, BX            // column stride of d in bytes: k/256*4 (of nbs: 8 times that)
	XORQ R12, R12          // 32*half
	XORQ R13, R13          // 16*half
halft:
	// This half's accumulators: DI = acc + 8*R12 (256 bytes a half); zero them.
	MOVQ acc+64(FP), DI
	LEAQ (DI)(R12*8), DI
	MOVQ nc+56(FP), R14
	XORQ CX, CX
	VXORPS Y15, Y15, Y15
zerot:
	VMOVUPS Y15, 0(DI)(CX*8)
	VMOVUPS Y15, 32(DI)(CX*8)
	VMOVUPS Y15, 64(DI)(CX*8)
	VMOVUPS Y15, 96(DI)(CX*8)
	VMOVUPS Y15, 128(DI)(CX*8)
	VMOVUPS Y15, 160(DI)(CX*8)
	VMOVUPS Y15, 192(DI)(CX*8)
	VMOVUPS Y15, 224(DI)(CX*8)
	ADDQ $64, CX
	DECQ R14
	JNZ  zerot

	MOVQ codes+0(FP), SI
	MOVQ nb+16(FP), R8
	MOVQ qs+24(FP), R9
	MOVQ d+32(FP), R10
	MOVQ nbs+40(FP), R11
blockt:
	PF1088(2048, SI)
	// The block's scales: scales + TQ2BLOCK*(nb-R8).
	MOVQ nb+16(FP), AX
	SUBQ R8, AX
	IMUL3Q $TQ2BLOCK, AX, AX
	ADDQ scales+8(FP), AX
	VCVTPH2PS (AX)(R13*1), Y11
	// Each column's scale d_w*d_c, to the frame.
	MOVQ R10, DX
	XORQ CX, CX
	MOVQ nc+56(FP), R14
scalest:
	VBROADCASTSS (DX), Y10
	VMULPS Y10, Y11, Y10
	VMOVUPS Y10, (SP)(CX*1)
	ADDQ BX, DX
	ADDQ $64, CX
	DECQ R14
	JNZ  scalest

	TQ2GROUP(0, 0, 0, 512, colsj0)
	TQ2GROUP(4, 32, 64, 576, colsj1)
	TQ2GROUP(8, 64, 128, 640, colsj2)
	TQ2GROUP(12, 96, 192, 704, colsj3)
	TQ2GROUP(16, 128, 256, 768, colsj4)
	TQ2GROUP(20, 160, 320, 832, colsj5)
	TQ2GROUP(24, 192, 384, 896, colsj6)
	TQ2GROUP(28, 224, 448, 960, colsj7)

	ADDQ $TQ2BLOCK, SI
	ADDQ $256, R9
	ADDQ $4, R10
	ADDQ $32, R11
	DECQ R8
	JNZ  blockt

	// hsum_float_8 of each column's lane accumulators: (a0+a4 + a2+a6) + (a1+a5 + a3+a7).
	MOVQ out+72(FP), AX
	XORQ CX, CX
	MOVQ nc+56(FP), R14
sumt:
	VMOVUPS 0(DI)(CX*8), Y0
	VMOVUPS 32(DI)(CX*8), Y1
	VMOVUPS 64(DI)(CX*8), Y2
	VMOVUPS 96(DI)(CX*8), Y3
	VADDPS 128(DI)(CX*8), Y0, Y0
	VADDPS 160(DI)(CX*8), Y1, Y1
	VADDPS 192(DI)(CX*8), Y2, Y2
	VADDPS 224(DI)(CX*8), Y3, Y3
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	VMOVUPS Y0, (AX)(R12*1)
	ADDQ $64, AX
	ADDQ $64, CX
	DECQ R14
	JNZ  sumt

	ADDQ $32, R12
	ADDQ $16, R13
	CMPQ R12, $64
	JNE  halft
	VZEROUPPER
	RET
