#include "textflag.h"

// Activation quantizers writing the prepared layouts (act.go) directly.

DATA actsign<>+0(SB)/4, $0x80000000
GLOBL actsign<>(SB), RODATA|NOPTR, $4
DATA act127<>+0(SB)/4, $0x42fe0000 // 127.0f
GLOBL act127<>(SB), RODATA|NOPTR, $4
DATA actm127<>+0(SB)/4, $0xc2fe0000 // -127.0f
GLOBL actm127<>(SB), RODATA|NOPTR, $4
DATA actone<>+0(SB)/4, $0x3f800000 // 1.0f
GLOBL actone<>(SB), RODATA|NOPTR, $4
DATA actmagic<>+0(SB)/4, $0x4b400000 // 12582912.0f
GLOBL actmagic<>(SB), RODATA|NOPTR, $4
DATA actmant<>+0(SB)/4, $0x007fffff
GLOBL actmant<>(SB), RODATA|NOPTR, $4
DATA acthalf<>+0(SB)/4, $0x00400000
GLOBL acthalf<>(SB), RODATA|NOPTR, $4
DATA actmax127<>+0(SB)/4, $127
GLOBL actmax127<>(SB), RODATA|NOPTR, $4
DATA actones8<>+0(SB)/4, $0x01010101
GLOBL actones8<>(SB), RODATA|NOPTR, $4
DATA actones16<>+0(SB)/4, $0x00010001
GLOBL actones16<>(SB), RODATA|NOPTR, $4
DATA actlow8<>+0(SB)/4, $0x000000ff
GLOBL actlow8<>(SB), RODATA|NOPTR, $4
DATA actperm<>+0(SB)/4, $0
DATA actperm<>+4(SB)/4, $4
DATA actperm<>+8(SB)/4, $1
DATA actperm<>+12(SB)/4, $5
DATA actperm<>+16(SB)/4, $2
DATA actperm<>+20(SB)/4, $6
DATA actperm<>+24(SB)/4, $3
DATA actperm<>+28(SB)/4, $7
GLOBL actperm<>(SB), RODATA|NOPTR, $32

// func quantQ8_0AVX2(x *float32, nb int, qs, nqs *byte, amax *float32, nsum *int32)
//
// quantize_row_q8_0 of the haswell variant, block by block, as compiled:
// |x| by vandnps, the vmaxps tree in the reference's operand order (a NaN
// survives where the compiled code keeps it), id = 127/amax (0 when amax is
// 0), vmulps, vroundps to nearest, vcvtps2dq, vpackssdw, vpacksswb,
// vpermd. It stores the q (qs), their int8 negation (nqs), -Σq (nsum) and
// amax itself (amax[i]; the caller derives d from it).
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qs+16(FP), DI
	MOVQ nqs+24(FP), R8
	MOVQ amax+32(FP), R9
	MOVQ nsum+40(FP), R10
	VBROADCASTSS actsign<>(SB), Y5
	VMOVSS act127<>(SB), X7
	VXORPS X6, X6, X6
	VMOVDQU actperm<>(SB), Y8
	VPBROADCASTD actones8<>(SB), Y9
	VPBROADCASTD actones16<>(SB), Y10
	VPXOR Y11, Y11, Y11
q8loop:
	VMOVUPS 0(SI), Y1
	VMOVUPS 32(SI), Y4
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDNPS Y4, Y5, Y12
	VANDNPS Y1, Y5, Y0
	VMAXPS  Y12, Y0, Y0
	VANDNPS Y2, Y5, Y12
	VMAXPS  Y12, Y0, Y0
	VANDNPS Y3, Y5, Y12
	VMAXPS  Y12, Y0, Y0
	VMOVAPS X0, X12
	VEXTRACTF128 $1, Y0, X0
	VMAXPS  X12, X0, X0
	VMOVHLPS X0, X0, X12
	VMAXPS  X12, X0, X0
	VMOVSHDUP X0, X12
	VMAXSS  X12, X0, X0
	VMOVSS  X0, (R9)
	// id = amax != 0 ? 127/amax : 0 (an unordered compare divides).
	VXORPS X12, X12, X12
	VUCOMISS X6, X0
	JP   q8div
	JE   q8id
q8div:
	VDIVSS X0, X7, X12
q8id:
	VBROADCASTSS X12, Y12
	VMULPS Y12, Y1, Y0
	VMULPS Y12, Y4, Y4
	VMULPS Y12, Y2, Y2
	VMULPS Y12, Y3, Y3
	VROUNDPS $0, Y0, Y0
	VCVTPS2DQ Y0, Y0
	VROUNDPS $0, Y4, Y4
	VCVTPS2DQ Y4, Y4
	VPACKSSDW Y4, Y0, Y0
	VROUNDPS $0, Y2, Y2
	VCVTPS2DQ Y2, Y2
	VROUNDPS $0, Y3, Y3
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y8, Y0
	VMOVDQU Y0, (DI)
	VPSUBB Y0, Y11, Y1
	VMOVDQU Y1, (R8)
	// nsum = Σ -q: maddubs(ones, -q) can saturate only for -(-128)... so sum q and negate.
	VPMADDUBSW Y0, Y9, Y1
	VPMADDWD Y10, Y1, Y1
	VEXTRACTI128 $1, Y1, X2
	VPADDD X2, X1, X1
	VPSHUFD $0x4e, X1, X2
	VPADDD X2, X1, X1
	VPSHUFD $0xb1, X1, X2
	VPADDD X2, X1, X1
	VMOVD X1, AX
	NEGL AX
	MOVL AX, (R10)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $4, R9
	ADDQ $4, R10
	DECQ CX
	JNZ  q8loop
	VZEROUPPER
	RET

// func quantQ8_KAVX2(x *float32, nb int, qs *byte, d *float32, nbs *int32) int
//
// quantize_row_q8_K_ref block by block: the first x of largest |x| (NaNs
// never compare greater), iscale = -127/max, q = min(127, nearest_int(iscale*x))
// with nearest_int's 1.5*2^23 trick, d = 1/iscale; an all-zero block stores
// d = 0 and q = 0. It stores the qs, d and the lane offsets
// nbs[8b+l] = -Σ q over 32l..32l+31 (the TQ2_0 kernel's bsums term).
TEXT ·quantQ8_KAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), R8
	MOVQ nbs+32(FP), R9
	VBROADCASTSS actsign<>(SB), Y15
	VBROADCASTSS actmagic<>(SB), Y14
	VPBROADCASTD actmant<>(SB), Y13
	VPBROADCASTD acthalf<>(SB), Y12
	VPBROADCASTD actmax127<>(SB), Y11
	VPBROADCASTD actones8<>(SB), Y10
	VPBROADCASTD actones16<>(SB), Y9
	VMOVDQU actperm<>(SB), Y8
	VPBROADCASTD actlow8<>(SB), Y7
kloop:
	// amax: running lane max of |x| skipping NaN (vmaxps(|x|, m) keeps m
	// when |x| is NaN; m is never NaN).
	VXORPS Y0, Y0, Y0
	XORQ AX, AX
kmax:
	VANDNPS (SI)(AX*1), Y15, Y1
	VMAXPS Y0, Y1, Y0
	ADDQ $32, AX
	CMPQ AX, $1024
	JNE  kmax
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0
	VXORPS X1, X1, X1
	VUCOMISS X1, X0
	JNE  knonzero
	// all zero (or only NaN/-0/+0): d = 0, q = 0, nbs = 0.
	MOVL $0, (R8)
	VPXOR Y1, Y1, Y1
	XORQ AX, AX
kzero:
	VMOVDQU Y1, (DI)(AX*1)
	ADDQ $32, AX
	CMPQ AX, $256
	JNE  kzero
	VMOVDQU Y1, (R9)
	JMP  knext
knonzero:
	// The first index whose |x| equals amax.
	VBROADCASTSS X0, Y0
	XORQ AX, AX
kfind:
	VANDNPS (SI)(AX*4), Y15, Y1
	VCMPPS $0, Y0, Y1, Y1
	VMOVMSKPS Y1, DX
	TESTL DX, DX
	JNZ  kfound
	ADDQ $8, AX
	JMP  kfind
kfound:
	TZCNTL DX, DX
	ADDQ DX, AX
	VMOVSS (SI)(AX*4), X1          // max
	VMOVSS actm127<>(SB), X2
	VDIVSS X1, X2, X2              // iscale = -127/max
	VMOVSS actone<>(SB), X3
	VDIVSS X2, X3, X3              // d = 1/iscale
	VMOVSS X3, (R8)
	VBROADCASTSS X2, Y2
	XORQ AX, AX                    // 32 values per round: lane l = AX/32
kq:
	VMULPS 0(SI)(AX*4), Y2, Y3
	VMULPS 32(SI)(AX*4), Y2, Y4
	VMULPS 64(SI)(AX*4), Y2, Y5
	VMULPS 96(SI)(AX*4), Y2, Y6
	VADDPS Y14, Y3, Y3
	VADDPS Y14, Y4, Y4
	VADDPS Y14, Y5, Y5
	VADDPS Y14, Y6, Y6
	VPAND Y13, Y3, Y3
	VPAND Y13, Y4, Y4
	VPAND Y13, Y5, Y5
	VPAND Y13, Y6, Y6
	VPSUBD Y12, Y3, Y3
	VPSUBD Y12, Y4, Y4
	VPSUBD Y12, Y5, Y5
	VPSUBD Y12, Y6, Y6
	VPMINSD Y11, Y3, Y3
	VPMINSD Y11, Y4, Y4
	VPMINSD Y11, Y5, Y5
	VPMINSD Y11, Y6, Y6
	// (int8_t) keeps the low byte (beyond -128 only when iscale overflowed).
	VPAND Y7, Y3, Y3
	VPAND Y7, Y4, Y4
	VPAND Y7, Y5, Y5
	VPAND Y7, Y6, Y6
	VPACKUSDW Y4, Y3, Y3
	VPACKUSDW Y6, Y5, Y5
	VPACKUSWB Y5, Y3, Y3
	VPERMD Y3, Y8, Y3
	VMOVDQU Y3, (DI)(AX*1)
	VPMADDUBSW Y3, Y10, Y3
	VPMADDWD Y9, Y3, Y3
	VEXTRACTI128 $1, Y3, X4
	VPADDD X4, X3, X3
	VPSHUFD $0x4e, X3, X4
	VPADDD X4, X3, X3
	VPSHUFD $0xb1, X3, X4
	VPADDD X4, X3, X3
	VMOVD X3, DX
	NEGL DX
	MOVQ AX, BX
	SHRQ $3, BX                    // AX/32*4
	MOVL DX, (R9)(BX*1)
	ADDQ $32, AX
	CMPQ AX, $256
	JNE  kq
knext:
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  kloop
	VZEROUPPER
	RET
