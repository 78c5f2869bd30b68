#include "textflag.h"

// swiglu's tile steps at the SIMD levels (silu.go): IEEE negation, addition,
// division and multiplication lane by lane, so the same bits as the Go loops
// (negTileGo, siluMulTileGo).

DATA silusign<>+0(SB)/4, $0x80000000
GLOBL silusign<>(SB), RODATA|NOPTR, $4

DATA siluone<>+0(SB)/4, $0x3f800000
GLOBL siluone<>(SB), RODATA|NOPTR, $4

// func negTileAVX2(e, x *float32)
//
// e[i] = -x[i] (the sign bit flipped) for the 64 values of a tile.
TEXT ·negTileAVX2(SB), NOSPLIT, $0-16
	MOVQ e+0(FP), DI
	MOVQ x+8(FP), SI
	VBROADCASTSS silusign<>(SB), Y15
	MOVQ $4, CX
neg:
	VXORPS 0(SI), Y15, Y0
	VXORPS 32(SI), Y15, Y1
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  neg
	VZEROUPPER
	RET

// func siluMulTileAVX2(y, x, e, gv *float32)
//
// y[i] = (x[i] / (1 + e[i])) * gv[i] for the 64 values of a tile; y may be x.
TEXT ·siluMulTileAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ e+16(FP), DX
	MOVQ gv+24(FP), BX
	VBROADCASTSS siluone<>(SB), Y15
	MOVQ $4, CX
silu:
	VADDPS  0(DX), Y15, Y0
	VADDPS  32(DX), Y15, Y1
	VMOVUPS 0(SI), Y2
	VMOVUPS 32(SI), Y3
	VDIVPS  Y0, Y2, Y2
	VDIVPS  Y1, Y3, Y3
	VMULPS  0(BX), Y2, Y2
	VMULPS  32(BX), Y3, Y3
	VMOVUPS Y2, 0(DI)
	VMOVUPS Y3, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, BX
	ADDQ $64, DI
	DECQ CX
	JNZ  silu
	VZEROUPPER
	RET
