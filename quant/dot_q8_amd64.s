#include "textflag.h"

// Plain-layout Q8_0×Q8_0 and Q4_0×Q8_0 dot products, the chains of the
// haswell ggml_vec_dot_q8_0_q8_0 / ggml_vec_dot_q4_0_q8_0 (arch/x86/quants.c,
// as compiled: see the doc of dotQ8_0Rows): per block d = dx*dy (vmulss of
// the two f16 scales widened), the int8 lane sums vpsignb/vpmaddubsw/
// vpmaddwd(ones)/vcvtdq2ps, acc = vfmadd231ps(d, sums, acc), then
// hsum_float_8 (extract high half, hi+lo, movhlps add, movshdup add_ss).
// Four rows are interleaved per activation block (each row its own chain),
// then single rows. Both kernels are DOTROWS with the type's scale and value
// macros.

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



// Q8VALUES(m, x, xx, s, sx): x = the 32 int8 values at m.
#define Q8VALUES(m, x, xx, s, sx) \
	VMOVDQU m, x

// ROW(scale, values, w, qs, d, dx, x, xx, s, sx, acc): one weight block at w
// (its qs at qs) into acc.
#define ROW(scale, values, w, qs, d, dx, x, xx, s, sx, acc) \
	scale(w, dx, d) \
	values(qs, x, xx, s, sx) \
	LANES(x, s) \
	VFMADD231PS x, d, acc

// DOTROWS(scale, values, wbs, rows4, loop4, sum4, rows1, loop1, sum1, done)
// is the body of func(w *byte, rb, rows int, a *byte, nb int, out *float32)
// for weight blocks of wbs bytes; the other arguments name its labels.
// Registers: SI row, DX rb, R8 3*rb, CX rows left, DI a, R9 nb, R10 out,
// R11/R12 weight/activation block, R13 blocks left; Y0-Y3 accumulators,
// Y13 dy, Y14 qy, Y15 ones (int16), Y11/Y12 Q4_0's constants.
#define DOTROWS(scale, values, wbs, rows4, loop4, sum4, rows1, loop1, sum1, done) \
	MOVQ w+0(FP), SI \
	MOVQ rb+8(FP), DX \
	MOVQ rows+16(FP), CX \
	MOVQ a+24(FP), DI \
	MOVQ nb+32(FP), R9 \
	MOVQ out+40(FP), R10 \
	MOVL $0x00010001, AX \
	VMOVD AX, X15 \
	VPBROADCASTD X15, Y15 \
	MOVL $0x0f0f0f0f, AX \
	VMOVD AX, X12 \
	VPBROADCASTD X12, Y12 \
	MOVL $0xf8f8f8f8, AX \
	VMOVD AX, X11 \
	VPBROADCASTD X11, Y11 \
	LEAQ (DX)(DX*2), R8 \
rows4: \
	CMPQ CX, $4 \
	JLT  rows1 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	MOVQ SI, R11 \
	MOVQ DI, R12 \
	MOVQ R9, R13 \
	TESTQ R13, R13 \
	JZ   sum4 \
loop4: \
	MOVWLZX (R12), AX \
	VMOVD AX, X13 \
	VCVTPH2PS X13, X13 \
	VMOVDQU 2(R12), Y14 \
	ROW(scale, values, (R11), 2(R11), Y4, X4, Y5, X5, Y6, X6, Y0) \
	ROW(scale, values, (R11)(DX*1), 2(R11)(DX*1), Y7, X7, Y8, X8, Y9, X9, Y1) \
	ROW(scale, values, (R11)(DX*2), 2(R11)(DX*2), Y4, X4, Y5, X5, Y6, X6, Y2) \
	ROW(scale, values, (R11)(R8*1), 2(R11)(R8*1), Y7, X7, Y8, X8, Y9, X9, Y3) \
	ADDQ $34, R12 \
	ADDQ $wbs, R11 \
	DECQ R13 \
	JNZ  loop4 \
sum4: \
	HSUM(Y0, X0, X4, X5, 0(R10)) \
	HSUM(Y1, X1, X4, X5, 4(R10)) \
	HSUM(Y2, X2, X4, X5, 8(R10)) \
	HSUM(Y3, X3, X4, X5, 12(R10)) \
	ADDQ $16, R10 \
	LEAQ (SI)(DX*4), SI \
	SUBQ $4, CX \
	JMP  rows4 \
rows1: \
	TESTQ CX, CX \
	JZ   done \
	VXORPS Y0, Y0, Y0 \
	MOVQ SI, R11 \
	MOVQ DI, R12 \
	MOVQ R9, R13 \
	TESTQ R13, R13 \
	JZ   sum1 \
loop1: \
	MOVWLZX (R12), AX \
	VMOVD AX, X13 \
	VCVTPH2PS X13, X13 \
	VMOVDQU 2(R12), Y14 \
	ROW(scale, values, (R11), 2(R11), Y4, X4, Y5, X5, Y6, X6, Y0) \
	ADDQ $34, R12 \
	ADDQ $wbs, R11 \
	DECQ R13 \
	JNZ  loop1 \
sum1: \
	HSUM(Y0, X0, X4, X5, 0(R10)) \
	ADDQ $4, R10 \
	ADDQ DX, SI \
	DECQ CX \
	JMP  rows1 \
done: \
	VZEROUPPER \
	RET

// func dotQ8_0AVX2(w *byte, rb, rows int, a *byte, nb int, out *float32)
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-48
	DOTROWS(DSCALE, Q8VALUES, 34, q8rows4, q8loop4, q8sum4, q8rows1, q8loop1, q8sum1, q8done)

// func dotQ4_0AVX2(w *byte, rb, rows int, a *byte, nb int, out *float32)
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $0-48
	DOTROWS(DSCALEY, Q4VALUES, 18, q4rows4, q4loop4, q4sum4, q4rows1, q4loop1, q4sum1, q4done)
