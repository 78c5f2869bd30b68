#include "textflag.h"
#include "tile_amd64.h"

// Packed Q1_0 tiles at AVX-512 (see pack.go; tileQ1_0Go is the element-wise
// statement of the same arithmetic). Sixteen rows in the sixteen dword
// lanes; per block and lane j, L_k the reference's lane sum of sub-block k,
// blk = float(L0)*dy0, blk = fma(float(Lk), dyk, blk), acc_j = fma(d, blk,
// acc_j); the row's result is hsum_float_8 over j, by lookup tables.

DATA q1ones<>+0(SB)/4, $0x01010101
GLOBL q1ones<>(SB), RODATA|NOPTR, $4

// The four sub-blocks' code words of lanes 2m and 2m+1, loaded m bytes
// further (Z8-Z11: lane 2m's nibble indices), and shifted right by 4 (Z13,
// Z14, Z15, Z28: lane 2m+1's), for LUTQUAD and LUTDUO.
#define LUTWORDS(m) \
	VMOVDQU32 (m)(SI), Z8 \
	VMOVDQU32 (64+m)(SI), Z9 \
	VMOVDQU32 (128+m)(SI), Z10 \
	VMOVDQU32 (192+m)(SI), Z11 \
	VPSRLD    $4, Z8, Z13 \
	VPSRLD    $4, Z9, Z14 \
	VPSRLD    $4, Z10, Z15 \
	VPSRLD    $4, Z11, Z28

// Lanes 2m and 2m+1 of a block for four columns (tileQ1_0I4AVX512's float
// chain, for the blocks it cannot take in integers): the
// four sub-blocks' words loaded m bytes further and shifted once, then per
// column LUTPAIR's lookups and sums, the columns interleaved op by op
// (column c's tables at AX, BX, CX, DX; its two lanes' accumulators in
// Z(2c), Z(2c+1); d in Z12).
#define LUTQUAD(m, lo, hi) \
	LUTWORDS(m) \
	VPERMPS (lo)(AX), Z8, Z16 \
	VPERMPS (hi)(AX), Z13, Z17 \
	VPERMPS (lo)(BX), Z8, Z18 \
	VPERMPS (hi)(BX), Z13, Z19 \
	VPERMPS (lo)(CX), Z8, Z20 \
	VPERMPS (hi)(CX), Z13, Z21 \
	VPERMPS (lo)(DX), Z8, Z22 \
	VPERMPS (hi)(DX), Z13, Z23 \
	VPERMPS (lo+512)(AX), Z9, Z24 \
	VADDPS Z24, Z16, Z16 \
	VPERMPS (hi+512)(AX), Z14, Z25 \
	VADDPS Z25, Z17, Z17 \
	VPERMPS (lo+512)(BX), Z9, Z26 \
	VADDPS Z26, Z18, Z18 \
	VPERMPS (hi+512)(BX), Z14, Z27 \
	VADDPS Z27, Z19, Z19 \
	VPERMPS (lo+512)(CX), Z9, Z29 \
	VADDPS Z29, Z20, Z20 \
	VPERMPS (hi+512)(CX), Z14, Z30 \
	VADDPS Z30, Z21, Z21 \
	VPERMPS (lo+512)(DX), Z9, Z31 \
	VADDPS Z31, Z22, Z22 \
	VPERMPS (hi+512)(DX), Z14, Z24 \
	VADDPS Z24, Z23, Z23 \
	VPERMPS (lo+1024)(AX), Z10, Z25 \
	VADDPS Z25, Z16, Z16 \
	VPERMPS (hi+1024)(AX), Z15, Z26 \
	VADDPS Z26, Z17, Z17 \
	VPERMPS (lo+1024)(BX), Z10, Z27 \
	VADDPS Z27, Z18, Z18 \
	VPERMPS (hi+1024)(BX), Z15, Z29 \
	VADDPS Z29, Z19, Z19 \
	VPERMPS (lo+1024)(CX), Z10, Z30 \
	VADDPS Z30, Z20, Z20 \
	VPERMPS (hi+1024)(CX), Z15, Z31 \
	VADDPS Z31, Z21, Z21 \
	VPERMPS (lo+1024)(DX), Z10, Z24 \
	VADDPS Z24, Z22, Z22 \
	VPERMPS (hi+1024)(DX), Z15, Z25 \
	VADDPS Z25, Z23, Z23 \
	VPERMPS (lo+1536)(AX), Z11, Z26 \
	VADDPS Z26, Z16, Z16 \
	VPERMPS (hi+1536)(AX), Z28, Z27 \
	VADDPS Z27, Z17, Z17 \
	VPERMPS (lo+1536)(BX), Z11, Z29 \
	VADDPS Z29, Z18, Z18 \
	VPERMPS (hi+1536)(BX), Z28, Z30 \
	VADDPS Z30, Z19, Z19 \
	VPERMPS (lo+1536)(CX), Z11, Z31 \
	VADDPS Z31, Z20, Z20 \
	VPERMPS (hi+1536)(CX), Z28, Z24 \
	VADDPS Z24, Z21, Z21 \
	VPERMPS (lo+1536)(DX), Z11, Z25 \
	VADDPS Z25, Z22, Z22 \
	VPERMPS (hi+1536)(DX), Z28, Z26 \
	VADDPS Z26, Z23, Z23 \
	VFMADD231PS Z16, Z12, Z0 \
	VFMADD231PS Z17, Z12, Z1 \
	VFMADD231PS Z18, Z12, Z2 \
	VFMADD231PS Z19, Z12, Z3 \
	VFMADD231PS Z20, Z12, Z4 \
	VFMADD231PS Z21, Z12, Z5 \
	VFMADD231PS Z22, Z12, Z6 \
	VFMADD231PS Z23, Z12, Z7

// Lanes lo/64 and hi/64 of four columns (tileQ1_0I4AVX512): their eight
// accumulators loaded from acc (R9; column c at 512c bytes), or zeroed
// when first != 0; the walk's cursors set to the call's first block.
#define LUTQUADSTART(lo, hi, zero, start) \
	MOVQ  first+48(FP), R13 \
	TESTQ R13, R13 \
	JNZ   zero \
	VMOVUPS (512*0+lo)(R9), Z0 \
	VMOVUPS (512*0+hi)(R9), Z1 \
	VMOVUPS (512*1+lo)(R9), Z2 \
	VMOVUPS (512*1+hi)(R9), Z3 \
	VMOVUPS (512*2+lo)(R9), Z4 \
	VMOVUPS (512*2+hi)(R9), Z5 \
	VMOVUPS (512*3+lo)(R9), Z6 \
	VMOVUPS (512*3+hi)(R9), Z7 \
	JMP   start \
zero: \
	ACC8ZERO(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7) \
start: \
	MOVQ codes+0(FP), SI \
	MOVQ scales+8(FP), DI \
	MOVQ nb+16(FP), R8 \
	MOVQ lut+24(FP), AX \
	LEAQ (AX)(R12*1), BX \
	LEAQ (BX)(R12*1), CX \
	LEAQ (CX)(R12*1), DX

// The next block (flags from DECQ R8).
#define LUTQUADNEXT \
	ADDQ $256, SI \
	ADDQ $32, DI \
	ADDQ $2048, AX \
	ADDQ $2048, BX \
	ADDQ $2048, CX \
	ADDQ $2048, DX \
	DECQ R8

#define LUTQUADSTORE(lo, hi) \
	VMOVUPS Z0, (512*0+lo)(R9) \
	VMOVUPS Z1, (512*0+hi)(R9) \
	VMOVUPS Z2, (512*1+lo)(R9) \
	VMOVUPS Z3, (512*1+hi)(R9) \
	VMOVUPS Z4, (512*2+lo)(R9) \
	VMOVUPS Z5, (512*2+hi)(R9) \
	VMOVUPS Z6, (512*3+lo)(R9) \
	VMOVUPS Z7, (512*3+hi)(R9)

// The eight lane accumulators a0..a7 (lane j of a tile's 16 rows) loaded
// from, zeroed, or stored to the 512 bytes at off(r), and their
// hsum_float_8, (a0+a4 + a2+a6) + (a1+a5 + a3+a7), left in a0.
#define ACC8LOAD(off, r, a0, a1, a2, a3, a4, a5, a6, a7) \
	VMOVUPS off+0(r), a0 \
	VMOVUPS off+64(r), a1 \
	VMOVUPS off+128(r), a2 \
	VMOVUPS off+192(r), a3 \
	VMOVUPS off+256(r), a4 \
	VMOVUPS off+320(r), a5 \
	VMOVUPS off+384(r), a6 \
	VMOVUPS off+448(r), a7

#define ACC8ZERO(a0, a1, a2, a3, a4, a5, a6, a7) \
	VPXORD a0, a0, a0 \
	VPXORD a1, a1, a1 \
	VPXORD a2, a2, a2 \
	VPXORD a3, a3, a3 \
	VPXORD a4, a4, a4 \
	VPXORD a5, a5, a5 \
	VPXORD a6, a6, a6 \
	VPXORD a7, a7, a7

#define ACC8STORE(off, r, a0, a1, a2, a3, a4, a5, a6, a7) \
	VMOVUPS a0, off+0(r) \
	VMOVUPS a1, off+64(r) \
	VMOVUPS a2, off+128(r) \
	VMOVUPS a3, off+192(r) \
	VMOVUPS a4, off+256(r) \
	VMOVUPS a5, off+320(r) \
	VMOVUPS a6, off+384(r) \
	VMOVUPS a7, off+448(r)

#define HSUM8(a0, a1, a2, a3, a4, a5, a6, a7) \
	VADDPS a4, a0, a0 \
	VADDPS a5, a1, a1 \
	VADDPS a6, a2, a2 \
	VADDPS a7, a3, a3 \
	VADDPS a2, a0, a0 \
	VADDPS a3, a1, a1 \
	VADDPS a1, a0, a0

// The tile by lookup tables. For one activation column, q1LUTAVX512
// stores per Q8_0 sub-block i and lane j the sixteen products
// P[n] = float(L(n))*dy_i, L(n) the reference's lane sum of activations
// 32i+4j..+3 under weight bits n (bit e set: q, clear: -q with int8 wrap),
// one zmm at lut+(8i+j)*64 (2 KB per Q1_0 block). |L| <= 512 and dy an f16
// value make the product exact, so the reference's
// blk = fma(float(L_k), dy_k, blk) is blk + P exactly rounded once, and its
// first blk = float(L_0)*dy_0 is P itself: tileQ1_0LAVX512 forms, per
// block, lane j and sixteen rows, blk = P_0 + P_1 + P_2 + P_3 in that order
// (each P one vpermps of the table by the rows' nibbles j, vpermps reading
// the low four bits of each index: the words loaded j/2 bytes further, and
// for odd j shifted right by 4), then acc_j = fma(d, blk, acc_j) and the
// hsum_float_8 over j.

DATA q1nib<>+0(SB)/8, $0xfedcba9876543210
GLOBL q1nib<>(SB), RODATA|NOPTR, $8

// Lane j's sixteen lane sums of one sub-block into t (int32): the
// activation dword at qoff(AX) and its negation (R11 bytes further)
// blended by q1nib (K1), summed by vpdpbusd with ones (Z30).
#define LUTSUMS(qoff, t) \
	VPBROADCASTD qoff(AX), Z18 \
	VPBROADCASTD qoff(AX)(R11*1), Z17 \
	VPBLENDMB    Z18, Z17, K1, Z19 \
	VPXORD       t, t, t \
	VPDPBUSD     Z19, Z30, t

// Lane j's sixteen products of one sub-block: LUTSUMS converted and
// multiplied by dy (Z29), stored at toff(DI).
#define LUTLANE(qoff, toff, t) \
	LUTSUMS(qoff, t) \
	VCVTDQ2PS    t, t \
	VMULPS       Z29, t, t \
	VMOVUPS      t, toff(DI)

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
	LUTLANE(0, 0, Z20)
	LUTLANE(4, 64, Z21)
	LUTLANE(8, 128, Z22)
	LUTLANE(12, 192, Z23)
	LUTLANE(16, 256, Z20)
	LUTLANE(20, 320, Z21)
	LUTLANE(24, 384, Z22)
	LUTLANE(28, 448, Z23)
	ADDQ $32, AX
	ADDQ $4, CX
	ADDQ $512, DI
	DECQ R8
	JNZ  lsub
	VZEROUPPER
	RET

// Lanes 2m and 2m+1 of a block: the four sub-blocks' words loaded m bytes
// further (the dword of row r then starts at its byte m: its low nibble is
// lane 2m's index, its second nibble, after VPSRLD $4, lane 2m+1's), tables
// at AX + 64(2m) (lo) and AX + 64(2m+1) (hi), + 512k for sub-block k.
#define LUTPAIR(m, lo, hi, acc0, acc1) \
	VMOVDQU32   (m)(SI), Z8 \
	VMOVDQU32   (64+m)(SI), Z9 \
	VMOVDQU32   (128+m)(SI), Z10 \
	VMOVDQU32   (192+m)(SI), Z11 \
	VPERMPS     (lo)(AX), Z8, Z16 \
	VPSRLD      $4, Z8, Z24 \
	VPERMPS     (hi)(AX), Z24, Z18 \
	VPERMPS     (lo+512)(AX), Z9, Z17 \
	VADDPS      Z17, Z16, Z16 \
	VPSRLD      $4, Z9, Z25 \
	VPERMPS     (hi+512)(AX), Z25, Z19 \
	VADDPS      Z19, Z18, Z18 \
	VPERMPS     (lo+1024)(AX), Z10, Z17 \
	VADDPS      Z17, Z16, Z16 \
	VPSRLD      $4, Z10, Z26 \
	VPERMPS     (hi+1024)(AX), Z26, Z19 \
	VADDPS      Z19, Z18, Z18 \
	VPERMPS     (lo+1536)(AX), Z11, Z17 \
	VADDPS      Z17, Z16, Z16 \
	VPSRLD      $4, Z11, Z27 \
	VPERMPS     (hi+1536)(AX), Z27, Z19 \
	VADDPS      Z19, Z18, Z18 \
	VFMADD231PS Z16, Z12, acc0 \
	VFMADD231PS Z18, Z12, acc1

// The tile prefetches into L2, per block, 256 code bytes at pfc and 32
// scale bytes at pfs (both advancing a block at a time): the caller points
// them at what a later call reads (tileQ1_0LUTGroups: the segment
// q1PrefetchVisits visits ahead), which the hardware prefetchers alone do
// not fetch in time.

// func tileQ1_0LAVX512(codes, scales *byte, nb int, lut *float32, acc *float32, first int, out *float32, pfc, pfs *byte)
//
// nb blocks of one packed group (codes and scales at that block; LUTPAIR
// reads up to 3 bytes past the last code section, which in a packed group
// are its scales) against
// the column whose tables for those blocks (q1LUTAVX512) start at lut. The
// eight lane accumulators (acc, 128 floats, lane j at 64j bytes) start at
// zero when first != 0, else at acc; with out nil they are stored back to
// acc, else their hsum_float_8, the sixteen rows' results, is stored at
// out. A row's blocks may so run in several calls (Work.MatMul runs a few
// blocks of many groups at a time, their tables staying in L1).
TEXT ·tileQ1_0LAVX512(SB), NOSPLIT, $0-72
	MOVQ pfc+56(FP), R10
	MOVQ pfs+64(FP), R11
	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ lut+24(FP), AX
	MOVQ acc+32(FP), DX
	MOVQ first+40(FP), R9
	TESTQ R9, R9
	JNZ   lzero
	ACC8LOAD(0, DX, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	JMP     lblock
lzero:
	ACC8ZERO(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
lblock:
	PFQ1NEXT(R10, R11)
	VCVTPH2PS (DI), Z12
	LUTPAIR(0, 0, 64, Z0, Z1)
	LUTPAIR(1, 128, 192, Z2, Z3)
	LUTPAIR(2, 256, 320, Z4, Z5)
	LUTPAIR(3, 384, 448, Z6, Z7)
	ADDQ $256, SI
	ADDQ $32, DI
	ADDQ $2048, AX
	DECQ R8
	JNZ  lblock

	MOVQ  out+48(FP), BX
	TESTQ BX, BX
	JNZ   lfin
	ACC8STORE(0, DX, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VZEROUPPER
	RET

lfin:
	// hsum_float_8: (a0+a4 + a2+a6) + (a1+a5 + a3+a7).
	HSUM8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VMOVUPS Z0, (BX)
	VZEROUPPER
	RET

// func prefetchL2(p *byte, n int)
//
// PREFETCHT1 of every 64-byte line of the n bytes at p (n > 0): a claim's
// first segments, which no earlier visit prefetched (tileQ1_0LUTGroups).
TEXT ·prefetchL2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ (SI)(CX*1), CX
lpf:
	PREFETCHT1 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JB   lpf
	RET

// The integer form of the four-column tile (tileQ1_0I4AVX512). Where a
// column's block passes q1IntScales, every partial sum of the reference's
// blk chain is exact, so blk = S * 2^e with S = Σ_k L_k m_k in integers
// (q1_0.go): per lane, two vpermw of int16 tables (sub-blocks 0 and 1 in
// one, 2 and 3 in the other: q1ILUTAVX512), one vpmaddwd and one vpdpwssd
// by the block's (m_0, m_1) and (m_2, m_3), vcvtdq2ps, and the reference's
// acc = fma(d, blk, acc) as fma(d * 2^e, float(S), acc): the same product.

DATA q1i4pair<>+0(SB)/8, $0x0022000200200000
DATA q1i4pair<>+8(SB)/8, $0x0026000600240004
DATA q1i4pair<>+16(SB)/8, $0x002a000a00280008
DATA q1i4pair<>+24(SB)/8, $0x002e000e002c000c
DATA q1i4pair<>+32(SB)/8, $0x0032001200300010
DATA q1i4pair<>+40(SB)/8, $0x0036001600340014
DATA q1i4pair<>+48(SB)/8, $0x003a001a00380018
DATA q1i4pair<>+56(SB)/8, $0x003e001e003c001c
GLOBL q1i4pair<>(SB), RODATA|NOPTR, $64

DATA q1i4nib<>+0(SB)/4, $0x000f000f
GLOBL q1i4nib<>(SB), RODATA|NOPTR, $4

DATA q1i4hi<>+0(SB)/4, $0x00100000
GLOBL q1i4hi<>(SB), RODATA|NOPTR, $4

DATA q1i4pairhi<>+0(SB)/8, $0x0023000300210001
DATA q1i4pairhi<>+8(SB)/8, $0x0027000700250005
DATA q1i4pairhi<>+16(SB)/8, $0x002b000b00290009
DATA q1i4pairhi<>+24(SB)/8, $0x002f000f002d000d
DATA q1i4pairhi<>+32(SB)/8, $0x0033001300310011
DATA q1i4pairhi<>+40(SB)/8, $0x0037001700350015
DATA q1i4pairhi<>+48(SB)/8, $0x003b001b00390019
DATA q1i4pairhi<>+56(SB)/8, $0x003f001f003d001d
GLOBL q1i4pairhi<>(SB), RODATA|NOPTR, $64

// Lanes 2m and 2m+1's vpermw indices of a block: the four sub-blocks'
// words (aligned loads), each row's 16 bits of sub-block 0 (2) that hold
// the pass's nibbles beside those of sub-block 1 (3) (vpermt2w by Z29:
// q1i4pair, the low halves, for m = 0, 1; q1i4pairhi, the high halves,
// for m = 2, 3), shifted right per word by sa (lane 2m: 0 or 8) and sb
// (lane 2m+1: sa+4); then of each word the low four bits (Z30), and 16
// added to the second (Z31: the upper table). Z8 and Z10 (lane 2m,
// sub-blocks 0-1 and 2-3), Z13 and Z15 (lane 2m+1). Q1IWORDS0 is sa = 0.
#define Q1IWORDSLOAD \
	VMOVDQU32  (SI), Z8 \
	VMOVDQU32  64(SI), Z9 \
	VMOVDQU32  128(SI), Z10 \
	VMOVDQU32  192(SI), Z11 \
	VPERMT2W   Z9, Z29, Z8 \
	VPERMT2W   Z11, Z29, Z10

#define Q1IWORDSFIX \
	VPTERNLOGD $0xea, Z31, Z30, Z8 \
	VPTERNLOGD $0xea, Z31, Z30, Z13 \
	VPTERNLOGD $0xea, Z31, Z30, Z10 \
	VPTERNLOGD $0xea, Z31, Z30, Z15

#define Q1IWORDS0 \
	Q1IWORDSLOAD \
	VPSRLW     $4, Z8, Z13 \
	VPSRLW     $4, Z10, Z15 \
	Q1IWORDSFIX

#define Q1IWORDS8 \
	Q1IWORDSLOAD \
	VPSRLW     $12, Z8, Z13 \
	VPSRLW     $12, Z10, Z15 \
	VPSRLW     $8, Z8, Z8 \
	VPSRLW     $8, Z10, Z10 \
	Q1IWORDSFIX

// Q1IWORDS' constants: the pass's pair indices (pair) in Z29, q1i4nib in
// Z30, q1i4hi in Z31 (LUTQUAD's temporaries: loaded again after a block in
// the float chain).
#define Q1ICONSTS(pair) \
	VMOVDQU64    pair<>(SB), Z29 \
	VPBROADCASTD q1i4nib<>(SB), Z30 \
	VPBROADCASTD q1i4hi<>(SB), Z31

// One column's two lanes of a block in the integer form: tables at
// t+ta (lane 2m) and t+tb (lane 2m+1) from R12 (+64: sub-blocks 2-3), the
// column's (m_0, m_1), (m_2, m_3) at mo(R13), its rows' d * 2^e at do(R14),
// accumulators a and b.
#define Q1ICOL(t, ta, tb, mo, do, a, b, l0, l1, l2, l3, m0, m1, d) \
	VPBROADCASTD (mo)(R13), m0 \
	VPBROADCASTD (mo+4)(R13), m1 \
	VMOVUPS      (do)(R14), d \
	VPERMW       (t+ta)(R12), Z8, l0 \
	VPERMW       (t+ta+64)(R12), Z10, l1 \
	VPERMW       (t+tb)(R12), Z13, l2 \
	VPERMW       (t+tb+64)(R12), Z15, l3 \
	VPMADDWD     m0, l0, l0 \
	VPMADDWD     m0, l2, l2 \
	VPDPWSSD     m1, l1, l0 \
	VPDPWSSD     m1, l3, l2 \
	VCVTDQ2PS    l0, l0 \
	VCVTDQ2PS    l2, l2 \
	VFMADD231PS  l0, d, a \
	VFMADD231PS  l2, d, b

// The head of a pass's block loop (Q1IPASS, Q1IPASS2): the pointers to
// the batch's integer tables, operands and d * 2^e, the constants; per
// block (label blk) to flt when the block's flag is clear, else its index
// words and the first two columns in the integer form.
#define Q1IBLOCK(words, pair, lo, blk, flt) \
	MOVQ ilut+88(FP), R12 \
	MOVQ meta+96(FP), R13 \
	MOVQ dsc+104(FP), R14 \
	Q1ICONSTS(pair) \
blk: \
	CMPB 12(R13), $0 \
	JEQ  flt \
	words \
	Q1ICOL(0, 2*lo, 2*lo+128, 0, 0, Z0, Z1, Z9, Z11, Z14, Z16, Z17, Z18, Z19) \
	Q1ICOL(1024, 2*lo, 2*lo+128, 16, 64, Z2, Z3, Z20, Z21, Z22, Z23, Z24, Z25, Z26)

// One pass of tileQ1_0I4AVX512 over the call's blocks for lanes 2m and
// 2m+1 (accumulators at lo, hi of acc, tables at ta = 2lo, tb = 2lo+128):
// per block the integer form where the block's flag (12(R13)) is set, else
// LUTQUAD's float chain on the float tables.
#define Q1IPASS(m, words, pair, lo, hi, zero, start, blk, flt, next) \
	MOVQ lutStride+32(FP), R12 \
	LUTQUADSTART(lo, hi, zero, start) \
	Q1IBLOCK(words, pair, lo, blk, flt) \
	Q1ICOL(2048, 2*lo, 2*lo+128, 32, 128, Z4, Z5, Z9, Z11, Z14, Z16, Z17, Z18, Z19) \
	Q1ICOL(3072, 2*lo, 2*lo+128, 48, 192, Z6, Z7, Z20, Z21, Z22, Z23, Z24, Z25, Z26) \
	JMP  next \
flt: \
	VCVTPH2PS (DI), Z12 \
	LUTQUAD(m, lo, hi) \
	Q1ICONSTS(pair) \
next: \
	ADDQ $4096, R12 \
	ADDQ $64, R13 \
	ADDQ $256, R14 \
	LUTQUADNEXT \
	JNZ  blk \
	LUTQUADSTORE(lo, hi)

// Sub-block k's lookups of lanes 2m, 2m+1 for two columns added to the
// sums s0..s3 (LUTDUO).
#define LUTDUOADD(lo, hi, wa, wb, t0, t1, t2, t3, s0, s1, s2, s3) \
	VPERMPS (lo)(AX), wa, t0 \
	VPERMPS (hi)(AX), wb, t1 \
	VPERMPS (lo)(BX), wa, t2 \
	VPERMPS (hi)(BX), wb, t3 \
	VADDPS  t0, s0, s0 \
	VADDPS  t1, s1, s1 \
	VADDPS  t2, s2, s2 \
	VADDPS  t3, s3, s3

// LUTQUAD for two columns (tables at AX, BX; accumulators Z0, Z1 and Z2,
// Z3; d in Z12): tileQ1_0I2AVX512's float chain.
#define LUTDUO(m, lo, hi) \
	LUTWORDS(m) \
	VPERMPS (lo)(AX), Z8, Z16 \
	VPERMPS (hi)(AX), Z13, Z17 \
	VPERMPS (lo)(BX), Z8, Z18 \
	VPERMPS (hi)(BX), Z13, Z19 \
	LUTDUOADD(lo+512, hi+512, Z9, Z14, Z20, Z21, Z22, Z23, Z16, Z17, Z18, Z19) \
	LUTDUOADD(lo+1024, hi+1024, Z10, Z15, Z24, Z25, Z26, Z27, Z16, Z17, Z18, Z19) \
	LUTDUOADD(lo+1536, hi+1536, Z11, Z28, Z20, Z21, Z22, Z23, Z16, Z17, Z18, Z19) \
	VFMADD231PS Z16, Z12, Z0 \
	VFMADD231PS Z17, Z12, Z1 \
	VFMADD231PS Z18, Z12, Z2 \
	VFMADD231PS Z19, Z12, Z3

// One pass of tileQ1_0I2AVX512 (Q1IPASS for two columns).
#define Q1IPASS2(m, words, pair, lo, hi, zero, start, blk, flt, next) \
	MOVQ  first+48(FP), R13 \
	TESTQ R13, R13 \
	JNZ   zero \
	VMOVUPS (lo)(R9), Z0 \
	VMOVUPS (hi)(R9), Z1 \
	VMOVUPS (512+lo)(R9), Z2 \
	VMOVUPS (512+hi)(R9), Z3 \
	JMP   start \
zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
start: \
	MOVQ codes+0(FP), SI \
	MOVQ scales+8(FP), DI \
	MOVQ nb+16(FP), R8 \
	MOVQ lut+24(FP), AX \
	MOVQ lutStride+32(FP), BX \
	ADDQ AX, BX \
	Q1IBLOCK(words, pair, lo, blk, flt) \
	JMP  next \
flt: \
	VCVTPH2PS (DI), Z12 \
	LUTDUO(m, lo, hi) \
	Q1ICONSTS(pair) \
next: \
	ADDQ $2048, R12 \
	ADDQ $32, R13 \
	ADDQ $128, R14 \
	ADDQ $256, SI \
	ADDQ $32, DI \
	ADDQ $2048, AX \
	ADDQ $2048, BX \
	DECQ R8 \
	JNZ  blk \
	VMOVUPS Z0, (lo)(R9) \
	VMOVUPS Z1, (hi)(R9) \
	VMOVUPS Z2, (512+lo)(R9) \
	VMOVUPS Z3, (512+hi)(R9)

// func tileQ1_0I4AVX512(codes, scales *byte, nb int, lut *float32, lutStride int, acc *float32, first int, out *float32, outStride int, pfc, pfs *byte, ilut *int16, meta *uint32, dsc *float32)
//
// tileQ1_0LAVX512 for four columns (its bits per column): column c's float
// tables lutStride bytes after column c-1's, the accumulators of column c
// at acc+512c, its sums at out+c*outStride bytes; a call's blocks run lane
// pair by lane pair, each block whose flag is set (meta, 64 bytes a block: per column
// c at 16c the words (m_0 | m_1<<16), (m_2 | m_3<<16) and the float 2^e of
// q1IntScales, and at 12 the flag: every column's block passed) in the
// integer form, its int16 tables at ilut (4 KiB a block, column c at
// 1024c: q1ILUTAVX512). dsc is scratch for 64 floats a block.
TEXT ·tileQ1_0I4AVX512(SB), NOSPLIT, $0-112
	MOVQ pfc+72(FP), R10
	MOVQ pfs+80(FP), R11
	MOVQ acc+40(FP), R9
	// Each block's and column's d * 2^e (exact: a power of two times an
	// f16 value) at dsc, and the prefetches of the blocks a later call reads.
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ meta+96(FP), R13
	MOVQ dsc+104(FP), R14
i4pro:
	PFQ1NEXT(R10, R11)
	VCVTPH2PS   (DI), Z12
	VMULPS.BCST 8(R13), Z12, Z16
	VMULPS.BCST 24(R13), Z12, Z17
	VMULPS.BCST 40(R13), Z12, Z18
	VMULPS.BCST 56(R13), Z12, Z19
	VMOVUPS     Z16, (R14)
	VMOVUPS     Z17, 64(R14)
	VMOVUPS     Z18, 128(R14)
	VMOVUPS     Z19, 192(R14)
	ADDQ        $32, DI
	ADDQ        $64, R13
	ADDQ        $256, R14
	DECQ        R8
	JNZ         i4pro

	Q1IPASS(0, Q1IWORDS0, q1i4pair, 0, 64, i4z0, i4s0, i4b0, i4f0, i4n0)
	Q1IPASS(1, Q1IWORDS8, q1i4pair, 128, 192, i4z1, i4s1, i4b1, i4f1, i4n1)
	Q1IPASS(2, Q1IWORDS0, q1i4pairhi, 256, 320, i4z2, i4s2, i4b2, i4f2, i4n2)
	Q1IPASS(3, Q1IWORDS8, q1i4pairhi, 384, 448, i4z3, i4s3, i4b3, i4f3, i4n3)

	MOVQ  out+56(FP), AX
	TESTQ AX, AX
	JZ    i4done
	MOVQ  outStride+64(FP), BX
	HSUM8AT(R9, AX)
	ADDQ  $512, R9
	ADDQ  BX, AX
	HSUM8AT(R9, AX)
	ADDQ  $512, R9
	ADDQ  BX, AX
	HSUM8AT(R9, AX)
	ADDQ  $512, R9
	ADDQ  BX, AX
	HSUM8AT(R9, AX)
i4done:
	VZEROUPPER
	RET

// Lane j's sixteen int16 lane sums of one sub-block (LUTLANE's sums,
// stored by vpmovdw) at toff(DI).
#define ILUTLANE(qoff, toff, t) \
	LUTSUMS(qoff, t) \
	VPMOVDW t, toff(DI)

// Sub-block kk of a block: its activations at qoff, its tables' half at
// toff = 32kk (lane j at toff + 128j: sub-blocks 0 and 1 share lane j's
// 64 bytes at 128j, 2 and 3 those at 128j + 64).
#define ILUTSUB(qoff, toff) \
	ILUTLANE(qoff+0, toff+0, Z20) \
	ILUTLANE(qoff+4, toff+128, Z21) \
	ILUTLANE(qoff+8, toff+256, Z22) \
	ILUTLANE(qoff+12, toff+384, Z23) \
	ILUTLANE(qoff+16, toff+512, Z20) \
	ILUTLANE(qoff+20, toff+640, Z21) \
	ILUTLANE(qoff+24, toff+768, Z22) \
	ILUTLANE(qoff+28, toff+896, Z23)

// func q1ILUTAVX512(qs *byte, nqsOff int, nblk int, ilut *int16, stride int)
//
// The int16 tables of nblk Q1_0 blocks of one column (activations at qs,
// their int8 negations nqsOff bytes further): per block 1 KiB at ilut,
// the next block's stride bytes further (q8Act.ilut's layout: a batch's
// columns' tables side by side per block). Lane j of sub-blocks 2p and
// 2p+1: 32 words at 128j + 64p, entry n of sub-block 2p at word n, of 2p+1
// at 16+n.
TEXT ·q1ILUTAVX512(SB), NOSPLIT, $0-40
	MOVQ qs+0(FP), AX
	MOVQ nqsOff+8(FP), R11
	MOVQ nblk+16(FP), R8
	MOVQ ilut+24(FP), DI
	MOVQ stride+32(FP), R9
	VPBROADCASTD q1ones<>(SB), Z30
	KMOVQ q1nib<>(SB), K1
iblk:
	ILUTSUB(0, 0)
	ILUTSUB(32, 32)
	ILUTSUB(64, 64)
	ILUTSUB(96, 96)
	ADDQ $128, AX
	ADDQ R9, DI
	DECQ R8
	JNZ  iblk
	VZEROUPPER
	RET

// Lanes a and b (= a+1) of one column in the integer form
// (tileQ1_0I1AVX512) from their vpermw indices: a01, a23 (lane a,
// sub-blocks 0-1 and 2-3), b01, b23 (lane b); the tables at ta and tb of
// R12, (m_0, m_1) in Z25, (m_2, m_3) in Z26, the rows' d * 2^e in Z27,
// accumulators x and y.
#define I1LOOKUP(a01, a23, b01, b23, ta, tb, x, y) \
	VPERMW      (ta)(R12), a01, Z17 \
	VPERMW      (ta+64)(R12), a23, Z18 \
	VPERMW      (tb)(R12), b01, Z19 \
	VPERMW      (tb+64)(R12), b23, Z22 \
	VPMADDWD    Z25, Z17, Z17 \
	VPMADDWD    Z25, Z19, Z19 \
	VPDPWSSD    Z26, Z18, Z17 \
	VPDPWSSD    Z26, Z22, Z19 \
	VCVTDQ2PS   Z17, Z17 \
	VCVTDQ2PS   Z19, Z19 \
	VFMADD231PS Z17, Z27, x \
	VFMADD231PS Z19, Z27, y

// I1LOOKUP with the indices from the paired words p01 (sub-blocks 0-1) and
// p23 (2-3), shifted per word by sa (lane a) and sb (lane b), masked to
// their nibbles and the upper table's 16 added (Z30, Z31).
#define I1LANES(p01, p23, sa, sb, ta, tb, x, y) \
	VPSRLW      $sa, p01, Z13 \
	VPSRLW      $sb, p01, Z14 \
	VPSRLW      $sa, p23, Z15 \
	VPSRLW      $sb, p23, Z16 \
	VPTERNLOGD  $0xea, Z31, Z30, Z13 \
	VPTERNLOGD  $0xea, Z31, Z30, Z14 \
	VPTERNLOGD  $0xea, Z31, Z30, Z15 \
	VPTERNLOGD  $0xea, Z31, Z30, Z16 \
	I1LOOKUP(Z13, Z15, Z14, Z16, ta, tb, x, y)

// I1LANES at sa = 0, sb = 4 (lanes 0-1, 4-5), taking p01 and p23 in place
// for lane a's indices: after the lane pair at sa = 8 of the same words.
#define I1LANES0(p01, p23, ta, tb, x, y) \
	VPSRLW      $4, p01, Z14 \
	VPSRLW      $4, p23, Z16 \
	VPTERNLOGD  $0xea, Z31, Z30, p01 \
	VPTERNLOGD  $0xea, Z31, Z30, Z14 \
	VPTERNLOGD  $0xea, Z31, Z30, p23 \
	VPTERNLOGD  $0xea, Z31, Z30, Z16 \
	I1LOOKUP(p01, p23, Z14, Z16, ta, tb, x, y)

// func tileQ1_0I1AVX512(codes, scales *byte, nb int, lut *float32, acc *float32, first int, out *float32, pfc, pfs *byte, ilut *int16, meta *uint32)
//
// tileQ1_0LAVX512 (the same arguments and bits) with each block whose flag
// is set (meta, 16 bytes a block: the column's q1IntScales words and at 12
// the flag) in the integer form, its int16 tables at ilut (1 KiB a block).
// A block's code words are loaded once (aligned); vpermt2w pairs their low
// halves (lanes 0-3) and high halves (lanes 4-7) of sub-blocks 0 and 1, and
// of 2 and 3.
TEXT ·tileQ1_0I1AVX512(SB), NOSPLIT, $0-88
	MOVQ pfc+56(FP), R10
	MOVQ pfs+64(FP), R11
	MOVQ codes+0(FP), SI
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ lut+24(FP), AX
	MOVQ acc+32(FP), DX
	MOVQ ilut+72(FP), R12
	MOVQ meta+80(FP), R13
	MOVQ first+40(FP), R9
	TESTQ R9, R9
	JNZ   i1zero
	ACC8LOAD(0, DX, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	JMP   i1consts
i1zero:
	ACC8ZERO(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
i1consts:
	VMOVDQU64    q1i4pair<>(SB), Z29
	VMOVDQU64    q1i4pairhi<>(SB), Z28
	VPBROADCASTD q1i4nib<>(SB), Z30
	VPBROADCASTD q1i4hi<>(SB), Z31
i1blk:
	PFQ1NEXT(R10, R11)
	VCVTPH2PS (DI), Z12
	CMPB      12(R13), $0
	JEQ       i1flt
	VMULPS.BCST  8(R13), Z12, Z27
	VPBROADCASTD 0(R13), Z25
	VPBROADCASTD 4(R13), Z26
	VMOVDQU32    (SI), Z8
	VMOVDQU32    64(SI), Z9
	VMOVDQU32    128(SI), Z10
	VMOVDQU32    192(SI), Z11
	VMOVDQA64    Z8, Z20
	VMOVDQA64    Z10, Z21
	VPERMT2W     Z9, Z29, Z20
	VPERMT2W     Z9, Z28, Z8
	VPERMT2W     Z11, Z29, Z21
	VPERMT2W     Z11, Z28, Z10
	I1LANES(Z20, Z21, 8, 12, 256, 384, Z2, Z3)
	I1LANES0(Z20, Z21, 0, 128, Z0, Z1)
	I1LANES(Z8, Z10, 8, 12, 768, 896, Z6, Z7)
	I1LANES0(Z8, Z10, 512, 640, Z4, Z5)
	JMP          i1next
i1flt:
	LUTPAIR(0, 0, 64, Z0, Z1)
	LUTPAIR(1, 128, 192, Z2, Z3)
	LUTPAIR(2, 256, 320, Z4, Z5)
	LUTPAIR(3, 384, 448, Z6, Z7)
i1next:
	ADDQ $256, SI
	ADDQ $32, DI
	ADDQ $2048, AX
	ADDQ $1024, R12
	ADDQ $16, R13
	DECQ R8
	JNZ  i1blk

	MOVQ  out+48(FP), BX
	TESTQ BX, BX
	JNZ   i1fin
	ACC8STORE(0, DX, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VZEROUPPER
	RET

i1fin:
	HSUM8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VMOVUPS Z0, (BX)
	VZEROUPPER
	RET

// func tileQ1_0I2AVX512(codes, scales *byte, nb int, lut *float32, lutStride int, acc *float32, first int, out *float32, outStride int, pfc, pfs *byte, ilut *int16, meta *uint32, dsc *float32)
//
// tileQ1_0I4AVX512 for two columns (the same layout of its arguments;
// ilut and meta with two columns a block, dsc scratch for 32 floats a
// block; LUTDUO the float chain): tileQ1_0LAVX512's bits per column.
TEXT ·tileQ1_0I2AVX512(SB), NOSPLIT, $0-112
	MOVQ pfc+72(FP), R10
	MOVQ pfs+80(FP), R11
	MOVQ acc+40(FP), R9
	MOVQ scales+8(FP), DI
	MOVQ nb+16(FP), R8
	MOVQ meta+96(FP), R13
	MOVQ dsc+104(FP), R14
i2pro:
	PFQ1NEXT(R10, R11)
	VCVTPH2PS   (DI), Z12
	VMULPS.BCST 8(R13), Z12, Z16
	VMULPS.BCST 24(R13), Z12, Z17
	VMOVUPS     Z16, (R14)
	VMOVUPS     Z17, 64(R14)
	ADDQ        $32, DI
	ADDQ        $32, R13
	ADDQ        $128, R14
	DECQ        R8
	JNZ         i2pro

	Q1IPASS2(0, Q1IWORDS0, q1i4pair, 0, 64, i2z0, i2s0, i2b0, i2f0, i2n0)
	Q1IPASS2(1, Q1IWORDS8, q1i4pair, 128, 192, i2z1, i2s1, i2b1, i2f1, i2n1)
	Q1IPASS2(2, Q1IWORDS0, q1i4pairhi, 256, 320, i2z2, i2s2, i2b2, i2f2, i2n2)
	Q1IPASS2(3, Q1IWORDS8, q1i4pairhi, 384, 448, i2z3, i2s3, i2b3, i2f3, i2n3)

	MOVQ  out+56(FP), AX
	TESTQ AX, AX
	JZ    i2done
	MOVQ  outStride+64(FP), BX
	HSUM8AT(R9, AX)
	ADDQ  $512, R9
	ADDQ  BX, AX
	HSUM8AT(R9, AX)
i2done:
	VZEROUPPER
	RET
