#include "textflag.h"

// Plain-layout Q8_0×Q8_0 and Q4_0×Q8_0 dot products, the chains of the
// haswell ggml_vec_dot_q8_0_q8_0 / ggml_vec_dot_q4_0_q8_0 (arch/x86/quants.c,
// as compiled: see the doc of dotQ8_0Rows): per block d = dx*dy (vmulss of
// the two f16 scales widened), the int8 lane sums vpsignb/vpmaddubsw/
// vpmaddwd(ones)/vcvtdq2ps, acc = vfmadd231ps(d, sums, acc), then
// hsum_float_8 (extract high half, hi+lo, movhlps add, movshdup add_ss).
// Four rows are interleaved per activation block (each row its own chain),
// then single rows.

// DSCALE(w, tx, ty): ty = f16(w[0:2]) * dy (X13) in all 8 lanes.
#define DSCALE(w, tx, ty) \
	MOVWLZX w, AX \
	VMOVD AX, tx \
	VCVTPH2PS tx, tx \
	VMULSS X13, tx, tx \
	VBROADCASTSS tx, ty

// DSCALEY(w, tx, ty): as DSCALE with the product taken dy*dx (the operand
// order of ggml_vec_dot_q4_0_q8_0 as compiled; it picks which NaN survives
// when both scales are NaN).
#define DSCALEY(w, tx, ty) \
	MOVWLZX w, AX \
	VMOVD AX, tx \
	VCVTPH2PS tx, tx \
	VMULSS tx, X13, tx \
	VBROADCASTSS tx, ty

// LANES(x, s): x = the eight int32 lane sums of x·qy (Y14) as floats
// (mul_sum_i8_pairs_float), s scratch.
#define LANES(x, s) \
	VPSIGNB x, Y14, s \
	VPSIGNB x, x, x \
	VPMADDUBSW s, x, x \
	VPMADDWD x, Y15, x \
	VCVTDQ2PS x, x

// Q4VALUES(m, x, xx, s, sx): x (low half xx) = the 32 values nibble-8 of
// the 16 bytes at m (element i < 16 from the low nibble of byte i, i+16
// from its high nibble), s scratch (low half sx).
#define Q4VALUES(m, x, xx, s, sx) \
	VMOVDQU m, sx \
	VPSRLW $4, sx, xx \
	VINSERTI128 $1, xx, s, x \
	VPAND Y12, x, x \
	VPADDB Y11, x, x

// HSUM(acc, accx, t, u, dst): hsum_float_8 of acc (accx: its low half)
// stored at dst.
#define HSUM(acc, accx, t, u, dst) \
	VEXTRACTF128 $1, acc, t \
	VADDPS accx, t, t \
	VMOVHLPS t, t, u \
	VADDPS u, t, t \
	VMOVSHDUP t, u \
	VADDSS u, t, t \
	VMOVSS t, dst


// func dotQ8_0AVX2(w *byte, rb, rows int, a *byte, nb int, out *float32)
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ rb+8(FP), DX
	MOVQ rows+16(FP), CX
	MOVQ a+24(FP), DI
	MOVQ nb+32(FP), R9
	MOVQ out+40(FP), R10
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	LEAQ (DX)(DX*2), R8

dotQ8_0AVX2_rows4:
	CMPQ CX, $4
	JLT  dotQ8_0AVX2_rows1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ R9, R13
	TESTQ R13, R13
	JZ   dotQ8_0AVX2_sum4

dotQ8_0AVX2_loop4:
	MOVWLZX (R12), AX
	VMOVD AX, X13
	VCVTPH2PS X13, X13
	VMOVDQU 2(R12), Y14
	DSCALE((R11), X4, Y4)
	VMOVDQU 2(R11), Y5
	LANES(Y5, Y6)
	VFMADD231PS Y5, Y4, Y0
	DSCALE((R11)(DX*1), X7, Y7)
	VMOVDQU 2(R11)(DX*1), Y8
	LANES(Y8, Y9)
	VFMADD231PS Y8, Y7, Y1
	DSCALE((R11)(DX*2), X10, Y10)
	VMOVDQU 2(R11)(DX*2), Y11
	LANES(Y11, Y12)
	VFMADD231PS Y11, Y10, Y2
	DSCALE((R11)(R8*1), X4, Y4)
	VMOVDQU 2(R11)(R8*1), Y5
	LANES(Y5, Y6)
	VFMADD231PS Y5, Y4, Y3
	ADDQ $34, R12
	ADDQ $34, R11
	DECQ R13
	JNZ  dotQ8_0AVX2_loop4

dotQ8_0AVX2_sum4:
	HSUM(Y0, X0, X4, X5, 0(R10))
	HSUM(Y1, X1, X4, X5, 4(R10))
	HSUM(Y2, X2, X4, X5, 8(R10))
	HSUM(Y3, X3, X4, X5, 12(R10))
	ADDQ $16, R10
	LEAQ (SI)(DX*4), SI
	SUBQ $4, CX
	JMP  dotQ8_0AVX2_rows4

dotQ8_0AVX2_rows1:
	TESTQ CX, CX
	JZ   dotQ8_0AVX2_done
	VXORPS Y0, Y0, Y0
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ R9, R13
	TESTQ R13, R13
	JZ   dotQ8_0AVX2_sum1

dotQ8_0AVX2_loop1:
	MOVWLZX (R12), AX
	VMOVD AX, X13
	VCVTPH2PS X13, X13
	VMOVDQU 2(R12), Y14
	DSCALE((R11), X4, Y4)
	VMOVDQU 2(R11), Y5
	LANES(Y5, Y6)
	VFMADD231PS Y5, Y4, Y0
	ADDQ $34, R12
	ADDQ $34, R11
	DECQ R13
	JNZ  dotQ8_0AVX2_loop1

dotQ8_0AVX2_sum1:
	HSUM(Y0, X0, X4, X5, 0(R10))
	ADDQ $4, R10
	ADDQ DX, SI
	DECQ CX
	JMP  dotQ8_0AVX2_rows1

dotQ8_0AVX2_done:
	VZEROUPPER
	RET

// func dotQ4_0AVX2(w *byte, rb, rows int, a *byte, nb int, out *float32)
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ rb+8(FP), DX
	MOVQ rows+16(FP), CX
	MOVQ a+24(FP), DI
	MOVQ nb+32(FP), R9
	MOVQ out+40(FP), R10
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0xf8f8f8f8, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	LEAQ (DX)(DX*2), R8

dotQ4_0AVX2_rows4:
	CMPQ CX, $4
	JLT  dotQ4_0AVX2_rows1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ R9, R13
	TESTQ R13, R13
	JZ   dotQ4_0AVX2_sum4

dotQ4_0AVX2_loop4:
	MOVWLZX (R12), AX
	VMOVD AX, X13
	VCVTPH2PS X13, X13
	VMOVDQU 2(R12), Y14
	DSCALEY((R11), X4, Y4)
	Q4VALUES(2(R11), Y5, X5, Y6, X6)
	LANES(Y5, Y6)
	VFMADD231PS Y5, Y4, Y0
	DSCALEY((R11)(DX*1), X7, Y7)
	Q4VALUES(2(R11)(DX*1), Y8, X8, Y9, X9)
	LANES(Y8, Y9)
	VFMADD231PS Y8, Y7, Y1
	DSCALEY((R11)(DX*2), X4, Y4)
	Q4VALUES(2(R11)(DX*2), Y5, X5, Y6, X6)
	LANES(Y5, Y6)
	VFMADD231PS Y5, Y4, Y2
	DSCALEY((R11)(R8*1), X7, Y7)
	Q4VALUES(2(R11)(R8*1), Y8, X8, Y9, X9)
	LANES(Y8, Y9)
	VFMADD231PS Y8, Y7, Y3
	ADDQ $34, R12
	ADDQ $18, R11
	DECQ R13
	JNZ  dotQ4_0AVX2_loop4

dotQ4_0AVX2_sum4:
	HSUM(Y0, X0, X4, X5, 0(R10))
	HSUM(Y1, X1, X4, X5, 4(R10))
	HSUM(Y2, X2, X4, X5, 8(R10))
	HSUM(Y3, X3, X4, X5, 12(R10))
	ADDQ $16, R10
	LEAQ (SI)(DX*4), SI
	SUBQ $4, CX
	JMP  dotQ4_0AVX2_rows4

dotQ4_0AVX2_rows1:
	TESTQ CX, CX
	JZ   dotQ4_0AVX2_done
	VXORPS Y0, Y0, Y0
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ R9, R13
	TESTQ R13, R13
	JZ   dotQ4_0AVX2_sum1

dotQ4_0AVX2_loop1:
	MOVWLZX (R12), AX
	VMOVD AX, X13
	VCVTPH2PS X13, X13
	VMOVDQU 2(R12), Y14
	DSCALEY((R11), X4, Y4)
	Q4VALUES(2(R11), Y5, X5, Y6, X6)
	LANES(Y5, Y6)
	VFMADD231PS Y5, Y4, Y0
	ADDQ $34, R12
	ADDQ $18, R11
	DECQ R13
	JNZ  dotQ4_0AVX2_loop1

dotQ4_0AVX2_sum1:
	HSUM(Y0, X0, X4, X5, 0(R10))
	ADDQ $4, R10
	ADDQ DX, SI
	DECQ CX
	JMP  dotQ4_0AVX2_rows1

dotQ4_0AVX2_done:
	VZEROUPPER
	RET
