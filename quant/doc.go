// Package quant holds ggml's block formats and the dot products the
// reference's compiled CPU code (the haswell variant: AVX2, FMA, F16C) runs on
// them, reproduced bit for bit in portable Go.
//
// Design record
//
//   - What: f16 and bf16 conversion; per format (F32, F16, BF16, Q8_0, Q4_0,
//     Q4_1, Q5_0, Q5_1, Q1_0, Q2_0, TQ1_0, TQ2_0, Q2_K … Q6_K; one file per
//     family) the row dequantizer (ggml's to_float), the reference quantizer
//     (quantize_row_*_ref) where ggml has one, the activation quantizers
//     (Q8_0, Q8_1, Q8_K), and every dot product the reference's mul_mat can
//     take for that format, with the *_generic scalar order beside it where
//     the library exports one: ggml_vec_dot_* (one activation column, or shapes
//     llamafile's sgemm refuses), llamafile's tinyBLAS per-output chain (two or
//     more columns), and the repacked q4_0_8x8 gemv/gemm chain. MatMul picks the
//     path exactly as ggml_compute_forward_mul_mat does.
//   - Follows: ggml/src/ggml-cpu (vec.cpp, arch/x86/quants.c,
//     arch/x86/repack.cpp, llamafile/sgemm.cpp) of llama.cpp v0.5.0, and the
//     FMA contractions GCC emitted in libggml-cpu-haswell.so (read with objdump).
//   - Deliberate differences: integer sums are formed in any order (they are
//     exact); the float chain per output — lane layout, fused multiply-adds,
//     horizontal-sum order — is the reference's. Rows are not physically
//     repacked: the repacked kernels' arithmetic is reproduced on ggml's plain
//     block layout.
//   - Determinism: every output element is a pure function of its weight row
//     and activation column, so results are identical for any thread count:
//     MatMul shares rows between the workers of a parallel.Pool, and
//     TestMatMulIndependentOfWorkers checks 1, 2, 3 and 8 workers.
package quant
