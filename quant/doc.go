// Package quant holds ggml's block formats and the dot products the reference's compiled CPU code (the haswell
// variant: AVX2, FMA, F16C) runs on them, bit for bit in portable Go and, for the formats served fast, in assembly.
//
// # Design record
//
// What. f16/bf16 conversion; per format (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q1_0, Q2_0, TQ1_0, TQ2_0,
// Q2_K … Q6_K; one file per family) the row dequantizer, the reference quantizer (quantize_row_*_ref), the
// activation quantizers (Q8_0, Q8_1, Q8_K) and every dot product the reference's mul_mat can take:
// ggml_vec_dot_* (one column), llamafile's tinyBLAS per-output chain (two or more), the repacked q4_0_8x8 /
// q4_K_8x8 chains. Work.MatMul picks the path as ggml_compute_forward_mul_mat does. CPU levels (cpu.go):
// generic Go, AVX2 and AVX-512, chosen at run time or by BANKML_CPU; a level the CPU lacks is an error, never a
// fallback. Matrix.Repack lays Q1_0, Q2_0 and TQ2_0 rows out in groups of sixteen for the tile kernels
// (pack.go, act.go, tile_*.s; Q1_0 by lookup tables), each row still the reference's chain; a batch's columns
// share each weight pass (Q2_0 and TQ2_0 all at once, Q1_0 four at a time at AVX-512); F32/F16/BF16
// products of two or more columns run tinyBLAS's chain in tiny_amd64.s (4×3 tiles, each output its own lanes).
//
// Follows. ggml/src/ggml-cpu (vec.cpp, arch/x86/quants.c, arch/x86/repack.cpp, llamafile/sgemm.cpp) of llama.cpp
// v0.5.0 and the FMA contractions GCC emitted in libggml-cpu-haswell.so (read with objdump); BANKML_MATCH picks
// which of the reference's CPU variants to match (variant.go; docs/exactness.md, "CPU variants").
//
// Deliberate differences. Integer sums are formed in any order (they are exact); the float chain per output —
// lane layout, fused multiply-adds, horizontal-sum order — is the reference's, except that at AVX-512 a Q1_0
// block whose chain is exact (q1IntScales: every partial sum an integer times one power of two below 2^24) has
// it computed in integers, the same bits. The repacked Q4_0/Q4_K kernels'
// arithmetic runs on ggml's plain layout; bankml's sixteen-row layout has no counterpart in the reference.
//
// Determinism. Every output element is a pure function of its weight row and activation column: the same bits
// for any thread count and any level (TestMatMulIndependentOfWorkers). The path depends on the number of columns
// only for F32/F16/BF16 and repacked Q4_K; MatMulPlanesAs and MatMulSharedAs give each column the class of the
// product it stands for (ColClass, TestMatMulAsIsTheFreshColumn). The full record: docs/design.md, "Package quant".
package quant
