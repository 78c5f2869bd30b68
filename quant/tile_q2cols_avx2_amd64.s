#include "textflag.h"
#include "tile_amd64.h"

// The AVX2 Q2_0 tile over several activation columns: each block's code
// planes are unpacked once (eight at a time, in Y0-Y7) and multiplied by
// every column's activations, so that the columns of a batch share the
// unpacking; per column the integer sums, their order and the float chain
// are tileQ2_0AVX2's (tile_avx2_amd64.s), instruction for instruction.

DATA q2cmask3<>+0(SB)/4, $0x03030303
GLOBL q2cmask3<>(SB), RODATA|NOPTR, $4
DATA q2cones16<>+0(SB)/4, $0x00010001
GLOBL q2cones16<>(SB), RODATA|NOPTR, $4

// Eight code planes of the 32-byte vectors at off0 and off1 (each plane
// (v >> 2n) & 3, n = 0..3) into Y0-Y7.
#define Q2PLANES(off0, off1) \
	VMOVDQU off0(SI)(R12*1), Y0 \
	VPSRLW  $2, Y0, Y1 \
	VPSRLW  $4, Y0, Y2 \
	VPSRLW  $6, Y0, Y3 \
	VPAND   Y13, Y0, Y0 \
	VPAND   Y13, Y1, Y1 \
	VPAND   Y13, Y2, Y2 \
	VPAND   Y13, Y3, Y3 \
	VMOVDQU off1(SI)(R12*1), Y4 \
	VPSRLW  $2, Y4, Y5 \
	VPSRLW  $4, Y4, Y6 \
	VPSRLW  $6, Y4, Y7 \
	VPAND   Y13, Y4, Y4 \
	VPAND   Y13, Y5, Y5 \
	VPAND   Y13, Y6, Y6 \
	VPAND   Y13, Y7, Y7

// One column's int16 sum of planes Y0-Y7 against its activations at AX+a
// (eight dwords, one per plane) into Y8, then vpmaddwd with ones into int32.
#define Q2SUM(a) \
	VPBROADCASTD a+0(AX), Y10 \
	VPMADDUBSW Y10, Y0, Y8 \
	VPBROADCASTD a+4(AX), Y10 \
	VPMADDUBSW Y10, Y1, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD a+8(AX), Y10 \
	VPMADDUBSW Y10, Y2, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD a+12(AX), Y10 \
	VPMADDUBSW Y10, Y3, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD a+16(AX), Y10 \
	VPMADDUBSW Y10, Y4, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD a+20(AX), Y10 \
	VPMADDUBSW Y10, Y5, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD a+24(AX), Y10 \
	VPMADDUBSW Y10, Y6, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPBROADCASTD a+28(AX), Y10 \
	VPMADDUBSW Y10, Y7, Y9 \
	VPADDW Y9, Y8, Y8 \
	VPMADDWD Y12, Y8, Y8

// func tileQ2_0AVX2Cols(codes, scales *byte, nb int, qs *byte, dy *float32, nsum *int32, k int, nc int, out *float32)
//
// out[16c+r] for c < nc (1 <= nc <= 16), r < 16, as tileQ2_0AVX2 gives
// column c; column c's activations start at qs+c*k, dy+c*k/32, nsum+c*k/32.
// nb >= 1. The first half block's scaled sums of every column wait in the
// frame (512 bytes) while the second half's planes are unpacked.
TEXT ·tileQ2_0AVX2Cols(SB), 0, $512-72
	VPBROADCASTD q2cmask3<>(SB), Y13
	VPBROADCASTD q2cones16<>(SB), Y12
	MOVQ k+48(FP), BX
	SHRQ $3, BX            // column stride of dy and nsum in bytes: k/32*4
	XORQ R12, R12          // 32*half: byte offset of the half in each vector and in out's rows
	XORQ R13, R13          // 16*half: in the scales
half:
	// Zero the columns' accumulators of this half (sumf lives in out).
	MOVQ out+64(FP), DX
	MOVQ nc+56(FP), R14
	VXORPS Y15, Y15, Y15
zero:
	VMOVUPS Y15, (DX)(R12*1)
	ADDQ $64, DX
	DECQ R14
	JNZ  zero

	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ qs+24(FP), R9
	MOVQ dy+32(FP), R10
	MOVQ nsum+40(FP), R11
	SUBQ R10, R11          // nsum - dy: both advance alike
block:
	PF288(2048, SI)
	VCVTPH2PS (DI)(R13*1), Y14

	// First half block (planes 0-7): float(isum0)*dy0 per column, to the frame.
	Q2PLANES(0, 64)
	MOVQ R9, AX            // column 0's activations at this block
	MOVQ R10, CX           // its dy (nsum at CX+R11)
	XORQ DX, DX            // frame offset of the column
	MOVQ nc+56(FP), R14
cols0:
	Q2SUM(0)
	VPBROADCASTD 0(CX)(R11*1), Y10
	VPADDD Y10, Y8, Y8
	VCVTDQ2PS Y8, Y8
	VBROADCASTSS 0(CX), Y10
	VMULPS Y10, Y8, Y8
	VMOVUPS Y8, (SP)(DX*1)
	ADDQ k+48(FP), AX
	ADDQ BX, CX
	ADDQ $32, DX
	DECQ R14
	JNZ  cols0

	// Second half block (planes 8-15): s = fma(float(isum1), dy1, first), then
	// sumf = fma(s, d, sumf).
	Q2PLANES(128, 192)
	MOVQ R9, AX
	MOVQ R10, CX
	XORQ DX, DX
	MOVQ out+64(FP), DI
	ADDQ R12, DI           // this half of column 0's outputs
	MOVQ nc+56(FP), R14
cols1:
	Q2SUM(32)
	VPBROADCASTD 4(CX)(R11*1), Y10
	VPADDD Y10, Y8, Y8
	VCVTDQ2PS Y8, Y8
	VMOVUPS (SP)(DX*1), Y9
	VBROADCASTSS 4(CX), Y10
	VFMADD231PS Y10, Y8, Y9
	VMOVUPS (DI), Y11
	VFMADD231PS Y14, Y9, Y11
	VMOVUPS Y11, (DI)
	ADDQ k+48(FP), AX
	ADDQ BX, CX
	ADDQ $32, DX
	ADDQ $64, DI
	DECQ R14
	JNZ  cols1

	MOVQ scales+8(FP), DI  // DI was out's cursor: back to the scales of the next block
	MOVQ nb+16(FP), DX
	SUBQ R8, DX
	INCQ DX
	IMUL3Q $Q2BLOCK, DX, DX // a block's codes and scales
	ADDQ DX, DI
	ADDQ $Q2BLOCK, SI
	ADDQ $64, R9
	ADDQ $8, R10
	DECQ R8
	JNZ  block

	ADDQ $32, R12
	ADDQ $16, R13
	CMPQ R12, $64
	JNE  half
	VZEROUPPER
	RET
