// Macros shared by the amd64 tiles.

// hsum_float_8 over the eight lane accumulators at acc (8 zmm, lane j at
// 64j): (a0+a4 + a2+a6) + (a1+a5 + a3+a7), stored at dst.
#define HSUM8AT(acc, dst) \
	VMOVUPS 0(acc), Z0 \
	VMOVUPS 64(acc), Z1 \
	VMOVUPS 128(acc), Z2 \
	VMOVUPS 192(acc), Z3 \
	VADDPS  256(acc), Z0, Z0 \
	VADDPS  320(acc), Z1, Z1 \
	VADDPS  384(acc), Z2, Z2 \
	VADDPS  448(acc), Z3, Z3 \
	VADDPS  Z2, Z0, Z0 \
	VADDPS  Z3, Z1, Z1 \
	VADDPS  Z1, Z0, Z0 \
	VMOVUPS Z0, (dst)

// Prefetch into L2 the 256 (PF256) or 1024 (PF1024) bytes starting off
// bytes past r: a packed Q2_0 or TQ2_0 group's codes a few blocks ahead
// (the tiles walk a group's blocks in order; the hardware prefetchers do
// not run that far ahead).
#define PF256(off, r) \
	PREFETCHT1 off(r) \
	PREFETCHT1 off+64(r) \
	PREFETCHT1 off+128(r) \
	PREFETCHT1 off+192(r)

#define PF1024(off, r) \
	PF256(off, r) \
	PF256(off+256, r) \
	PF256(off+512, r) \
	PF256(off+768, r)

// One Q1_0 block's prefetch for the lookup-table tiles: the 256 code bytes
// at rc and the 32 scale bytes at rs, then both pointers on by a block.
#define PFQ1NEXT(rc, rs) \
	PF256(0, rc) \
	PREFETCHT1 (rs) \
	ADDQ $256, rc \
	ADDQ $32, rs

// The four 2-bit code planes ((v >> 2n) & 3, n = 0..3) of the 64 bytes at
// off(SI) into a, b, c, e; Z31 holds 0x03 in every byte (the AVX-512
// Q2_0 and TQ2_0 tiles).
#define PLANES2(off, a, b, c, e) \
	VMOVDQU64 off(SI), a \
	VPSRLD $2, a, b \
	VPSRLD $4, a, c \
	VPSRLD $6, a, e \
	VPANDD Z31, a, a \
	VPANDD Z31, b, b \
	VPANDD Z31, c, c \
	VPANDD Z31, e, e


// PF256T0 is PF256 into L1 (PREFETCHT0).
#define PF256T0(off, r) \
	PREFETCHT0 off(r) \
	PREFETCHT0 off+64(r) \
	PREFETCHT0 off+128(r) \
	PREFETCHT0 off+192(r)

// A packed Q2_0 block (256 code bytes, then the sixteen rows' 32 scale
// bytes) and a TQ2_0 one (1024, then 32 and 32 bytes of padding): the step
// of the tiles' block pointers (pack.go's packBlockBytes). PF288 and PF288T0
// prefetch five lines from the one holding r+off, so that one call per
// block, r advancing a block each time, reaches every line of the group;
// PF1088 a TQ2_0 block's seventeen.
#define Q2BLOCK 288
#define TQ2BLOCK 1088

#define PF288(off, r) \
	PF256(off, r) \
	PREFETCHT1 off+256(r)

#define PF288T0(off, r) \
	PF256T0(off, r) \
	PREFETCHT0 off+256(r)

#define PF1088(off, r) \
	PF1024(off, r) \
	PREFETCHT1 off+1024(r)

// PLANES2G is PLANES2 by GFNI: planes 1..3 of each byte by one affine bit
// map each (matrices at q2gfm<>: bits 2n, 2n+1 to bits 0, 1).
#define PLANES2G(off, a, b, c, e) \
	VMOVDQU64 off(SI), a \
	VGF2P8AFFINEQB.BCST $0, q2gfm<>+0(SB), a, b \
	VGF2P8AFFINEQB.BCST $0, q2gfm<>+8(SB), a, c \
	VGF2P8AFFINEQB.BCST $0, q2gfm<>+16(SB), a, e \
	VPANDD Z31, a, a
