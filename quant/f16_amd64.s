#include "textflag.h"

// func vecDotF16AVX2(x, y *uint16, n int) float32
//
// The vector part of ggml_vec_dot_f16 (haswell): n is a multiple of 32 (>=
// 32); four 8-lane accumulators sum[j] = fma(x, y, sum[j]) over chunks of
// 32 (values widened by vcvtph2ps), then GGML_F32x8_REDUCE: (s0+s2)+(s1+s3)
// lane-wise, high half plus low half, two vhaddps.
TEXT ·vecDotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $5, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
f16loop:
	VCVTPH2PS 0(SI), Y4
	VCVTPH2PS 0(DI), Y5
	VFMADD231PS Y5, Y4, Y0
	VCVTPH2PS 16(SI), Y6
	VCVTPH2PS 16(DI), Y7
	VFMADD231PS Y7, Y6, Y1
	VCVTPH2PS 32(SI), Y8
	VCVTPH2PS 32(DI), Y9
	VFMADD231PS Y9, Y8, Y2
	VCVTPH2PS 48(SI), Y10
	VCVTPH2PS 48(DI), Y11
	VFMADD231PS Y11, Y10, Y3
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  f16loop
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func fp32ToFP16F16C(x *float32, dst *uint16, n int)
//
// dst[i] = vcvtps2ph $0 (round to nearest even; F16C) of x[i] for i < n, n a
// positive multiple of 8: ggml_cpu_fp32_to_fp16's vector loop (haswell).
TEXT ·fp32ToFP16F16C(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
h16loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       h16loop
	VZEROUPPER
	RET
