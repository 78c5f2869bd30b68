#include "textflag.h"

// func ropeNeoxAVX2(x, cache *float32, half int)
//
// Rope.rotateGo's NEOX loop on eight pairs at a time (half a positive
// multiple of 8): pair i is (x[i], x[i+half]) with cos and sin at cache[2i]
// and cache[2i+1] (deinterleaved by vshufps and vpermpd), x[i] = x0*cos -
// round(x1*sin) (vfmsub231ps: one rounding) and x[i+half] = x0*sin +
// round(x1*cos) (vfmadd231ps), as rotate_pairs compiles in the haswell build.
TEXT ·ropeNeoxAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ cache+8(FP), DX
	MOVQ half+16(FP), CX
	LEAQ (SI)(CX*4), DI
	SHRQ $3, CX
rloop:
	VMOVUPS     (DX), Y0
	VMOVUPS     32(DX), Y1
	VSHUFPS     $0x88, Y1, Y0, Y2
	VPERMPD     $0xd8, Y2, Y2
	VSHUFPS     $0xdd, Y1, Y0, Y3
	VPERMPD     $0xd8, Y3, Y3
	VMOVUPS     (SI), Y4
	VMOVUPS     (DI), Y5
	VMULPS      Y3, Y5, Y6
	VFMSUB231PS Y2, Y4, Y6
	VMULPS      Y2, Y5, Y7
	VFMADD231PS Y3, Y4, Y7
	VMOVUPS     Y6, (SI)
	VMOVUPS     Y7, (DI)
	ADDQ        $64, DX
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         rloop
	VZEROUPPER
	RET
