#include "textflag.h"

// The Q1_0 lookup-table tile at AVX2 (see tile_q1_amd64.s for the tables
// and the arithmetic: the same tables, the same chain per lane and row,
// blk = P_0 + P_1 + P_2 + P_3 in that order, acc_j = fma(d, blk, acc_j),
// then hsum_float_8). A ymm holds eight rows, so a 16-row group runs in two
// halves (rows 0-7, then 8-15), each with its eight lane accumulators in
// Y0..Y7. vpermps at AVX2 reads three index bits and eight entries: a
// product P[n] is the blend (vblendvps, by bit 3 of n moved to the sign
// bit) of the lookups in the table's low and high eight entries. The
// rows' nibble 2m is the low nibble of their words loaded m bytes further
// on, nibble 2m+1 the same words shifted right by 4.

// func tileQ1_0LAVX2(codes, scales *byte, nb int, lut *float32, acc *float32, first int, out *float32, pfc, pfs *byte)
//
// tileQ1_0LAVX512's contract at AVX2: nb blocks of one packed group (codes
// and scales at that block; the loads read up to 3 bytes past the last
// code section, which in a packed group are its scales) against the tables
// at lut; the accumulators (acc, 128 floats, lane j of row r at 16j+r)
// start at zero when first != 0, else at acc; with out nil they are stored
// back to acc, else the sixteen rows' hsum_float_8 is stored at out. pfc
// and pfs: code and scale bytes to prefetch into L2, 256 and 32 a block
// (during the first half).
TEXT ·tileQ1_0LAVX2(SB), NOSPLIT, $0-72
	XORQ R12, R12          // 32*half: byte offset of the half in each vector
	XORQ R13, R13          // 16*half: in the scales
half:
	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ lut+24(FP), AX
	MOVQ acc+32(FP), DX
	MOVQ pfc+56(FP), R10
	MOVQ pfs+64(FP), R11
	ADDQ R12, DX           // lane j of the half's rows at DX + 64j
	MOVQ first+40(FP), R9
	TESTQ R9, R9
	JNZ   zero
	VMOVUPS 0(DX), Y0
	VMOVUPS 64(DX), Y1
	VMOVUPS 128(DX), Y2
	VMOVUPS 192(DX), Y3
	VMOVUPS 256(DX), Y4
	VMOVUPS 320(DX), Y5
	VMOVUPS 384(DX), Y6
	VMOVUPS 448(DX), Y7
	JMP     block
zero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
block:
	TESTQ R12, R12
	JNZ   nopf
	PREFETCHT1 0(R10)
	PREFETCHT1 64(R10)
	PREFETCHT1 128(R10)
	PREFETCHT1 192(R10)
	PREFETCHT1 (R11)
nopf:
	VCVTPH2PS (DI)(R13*1), Y8
	VMOVDQU     0(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     0(AX), Y9, Y11
	VPERMPS     32(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     64(AX), Y10, Y11
	VPERMPS     96(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y14
	VMOVDQU     64(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     512(AX), Y9, Y11
	VPERMPS     544(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     576(AX), Y10, Y11
	VPERMPS     608(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VMOVDQU     128(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     1024(AX), Y9, Y11
	VPERMPS     1056(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     1088(AX), Y10, Y11
	VPERMPS     1120(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VMOVDQU     192(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     1536(AX), Y9, Y11
	VPERMPS     1568(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     1600(AX), Y10, Y11
	VPERMPS     1632(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VFMADD231PS Y13, Y8, Y0
	VFMADD231PS Y14, Y8, Y1
	VMOVDQU     1(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     128(AX), Y9, Y11
	VPERMPS     160(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     192(AX), Y10, Y11
	VPERMPS     224(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y14
	VMOVDQU     65(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     640(AX), Y9, Y11
	VPERMPS     672(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     704(AX), Y10, Y11
	VPERMPS     736(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VMOVDQU     129(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     1152(AX), Y9, Y11
	VPERMPS     1184(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     1216(AX), Y10, Y11
	VPERMPS     1248(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VMOVDQU     193(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     1664(AX), Y9, Y11
	VPERMPS     1696(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     1728(AX), Y10, Y11
	VPERMPS     1760(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VFMADD231PS Y13, Y8, Y2
	VFMADD231PS Y14, Y8, Y3
	VMOVDQU     2(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     256(AX), Y9, Y11
	VPERMPS     288(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     320(AX), Y10, Y11
	VPERMPS     352(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y14
	VMOVDQU     66(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     768(AX), Y9, Y11
	VPERMPS     800(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     832(AX), Y10, Y11
	VPERMPS     864(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VMOVDQU     130(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     1280(AX), Y9, Y11
	VPERMPS     1312(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     1344(AX), Y10, Y11
	VPERMPS     1376(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VMOVDQU     194(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     1792(AX), Y9, Y11
	VPERMPS     1824(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     1856(AX), Y10, Y11
	VPERMPS     1888(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VFMADD231PS Y13, Y8, Y4
	VFMADD231PS Y14, Y8, Y5
	VMOVDQU     3(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     384(AX), Y9, Y11
	VPERMPS     416(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     448(AX), Y10, Y11
	VPERMPS     480(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y14
	VMOVDQU     67(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     896(AX), Y9, Y11
	VPERMPS     928(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     960(AX), Y10, Y11
	VPERMPS     992(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VMOVDQU     131(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     1408(AX), Y9, Y11
	VPERMPS     1440(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     1472(AX), Y10, Y11
	VPERMPS     1504(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VMOVDQU     195(SI)(R12*1), Y9
	VPSLLD      $28, Y9, Y10
	VPERMPS     1920(AX), Y9, Y11
	VPERMPS     1952(AX), Y9, Y12
	VBLENDVPS   Y10, Y12, Y11, Y11
	VADDPS      Y11, Y13, Y13
	VPSRLD      $4, Y9, Y10
	VPSLLD      $24, Y9, Y9
	VPERMPS     1984(AX), Y10, Y11
	VPERMPS     2016(AX), Y10, Y12
	VBLENDVPS   Y9, Y12, Y11, Y11
	VADDPS      Y11, Y14, Y14
	VFMADD231PS Y13, Y8, Y6
	VFMADD231PS Y14, Y8, Y7
	ADDQ $256, SI
	ADDQ $32, DI
	ADDQ $2048, AX
	ADDQ $256, R10
	ADDQ $32, R11
	DECQ R8
	JNZ  block

	MOVQ  out+48(FP), BX
	TESTQ BX, BX
	JNZ   fin
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 64(DX)
	VMOVUPS Y2, 128(DX)
	VMOVUPS Y3, 192(DX)
	VMOVUPS Y4, 256(DX)
	VMOVUPS Y5, 320(DX)
	VMOVUPS Y6, 384(DX)
	VMOVUPS Y7, 448(DX)
	JMP     next
fin:
	// hsum_float_8: (a0+a4 + a2+a6) + (a1+a5 + a3+a7).
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	VMOVUPS Y0, (BX)(R12*1)
next:
	ADDQ $32, R12
	ADDQ $16, R13
	CMPQ R12, $64
	JB   half
	VZEROUPPER
	RET

// The tables at AVX2 (q1LUTAVX512's, in the same layout): lane j's
// sixteen products of one sub-block as two ymm, entries 0-7 then 8-15;
// q1blend0/1 select, in dword n of each half, byte e of q where bit e of n
// (n = 0..7, 8..15) is set, else of its negation.
DATA q1blend0<>+0(SB)/8, $0x000000ff00000000
DATA q1blend0<>+8(SB)/8, $0x0000ffff0000ff00
DATA q1blend0<>+16(SB)/8, $0x00ff00ff00ff0000
DATA q1blend0<>+24(SB)/8, $0x00ffffff00ffff00
GLOBL q1blend0<>(SB), RODATA|NOPTR, $32
DATA q1blend1<>+0(SB)/8, $0xff0000ffff000000
DATA q1blend1<>+8(SB)/8, $0xff00ffffff00ff00
DATA q1blend1<>+16(SB)/8, $0xffff00ffffff0000
DATA q1blend1<>+24(SB)/8, $0xffffffffffffff00
GLOBL q1blend1<>(SB), RODATA|NOPTR, $32

#define LUTLANE2(qoff, toff) \
	VPBROADCASTD qoff(AX), Y0 \
	VPBROADCASTD qoff(AX)(R11*1), Y1 \
	VPBLENDVB    Y4, Y0, Y1, Y2 \
	VPMADDUBSW   Y2, Y6, Y2 \
	VPMADDWD     Y7, Y2, Y2 \
	VCVTDQ2PS    Y2, Y2 \
	VMULPS       Y3, Y2, Y2 \
	VMOVUPS      Y2, toff(DI) \
	VPBLENDVB    Y5, Y0, Y1, Y2 \
	VPMADDUBSW   Y2, Y6, Y2 \
	VPMADDWD     Y7, Y2, Y2 \
	VCVTDQ2PS    Y2, Y2 \
	VMULPS       Y3, Y2, Y2 \
	VMOVUPS      Y2, toff+32(DI)

// func q1LUTAVX2(qs *byte, nqsOff int, dy *float32, nsub int, lut *float32)
//
// q1LUTAVX512 at AVX2: the tables of nsub sub-blocks, activations at qs
// (their int8 negations nqsOff bytes further), scales at dy, 128 floats
// per sub-block at lut. Lane sums by vpmaddubsw (ones as the unsigned
// operand: at most 2*128 in int16) and vpmaddwd with ones.
TEXT ·q1LUTAVX2(SB), NOSPLIT, $0-40
	MOVQ qs+0(FP), AX
	MOVQ nqsOff+8(FP), R11
	MOVQ dy+16(FP), CX
	MOVQ nsub+24(FP), R8
	MOVQ lut+32(FP), DI
	VMOVDQU q1blend0<>(SB), Y4
	VMOVDQU q1blend1<>(SB), Y5
	VPBROADCASTD avx2ones8q1<>(SB), Y6
	VPBROADCASTD avx2ones16q1<>(SB), Y7
lsub:
	VBROADCASTSS (CX), Y3
	LUTLANE2(0, 0)
	LUTLANE2(4, 64)
	LUTLANE2(8, 128)
	LUTLANE2(12, 192)
	LUTLANE2(16, 256)
	LUTLANE2(20, 320)
	LUTLANE2(24, 384)
	LUTLANE2(28, 448)
	ADDQ $32, AX
	ADDQ $4, CX
	ADDQ $512, DI
	DECQ R8
	JNZ  lsub
	VZEROUPPER
	RET

DATA avx2ones16q1<>+0(SB)/4, $0x00010001
GLOBL avx2ones16q1<>(SB), RODATA|NOPTR, $4
DATA avx2ones8q1<>+0(SB)/4, $0x01010101
GLOBL avx2ones8q1<>(SB), RODATA|NOPTR, $4
