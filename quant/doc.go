// Package quant holds ggml's block formats and the dot products the
// reference's compiled CPU code (the haswell variant: AVX2, FMA, F16C) runs on
// them, reproduced bit for bit in portable Go and, for the formats bankml
// serves fast, in amd64 assembly.
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
//     more columns), and the repacked q4_0_8x8 / q4_K_8x8 chains. Work.MatMul
//     picks the path exactly as ggml_compute_forward_mul_mat does.
//   - CPU levels (cpu.go): LevelGeneric (portable Go), LevelAVX2 (AVX2, FMA,
//     F16C, BMI2) and LevelAVX512 (plus AVX-512 F, BW, VL, VNNI), chosen at run
//     time with golang.org/x/sys/cpu or forced by BANKML_CPU; a level the CPU
//     lacks is an error (Level.Check, LevelFromEnv, NewWork), never a silent
//     fallback. Every level computes the same bits; the oracle tests run at
//     each level the machine has.
//   - CPU variants (variant.go): the reference ships fourteen x86 builds
//     (internal/cpuvariant); bankml matches the one BANKML_MATCH names
//     (ResolveMatch; auto: ggml's pick), and models haswell's chains (and
//     alderlake's, the same); docs/exactness.md, "CPU variants", has the
//     sweep of the others.
//   - Fast path (pack.go, act.go, tile_*.s): Matrix.Repack copies Q1_0, Q2_0
//     and TQ2_0 rows into groups of sixteen rows laid out so that one vector
//     lane is one row and each activation operand is one dword broadcast to
//     all lanes (vpdpbusd on AVX-512, vpmaddubsw/vpmaddwd on AVX2); the
//     activation columns are quantized once per matmul straight into the
//     layout the tiles read (q, -q, d as float, -Σq per block; Q8_K's bsums as
//     lane offsets). tile_generic.go states each tile element by element; the
//     plain kernels (VecDotQ1_0Q8_0 …) are the portable twins the generic
//     level runs. Q1_0 at AVX-512 and AVX2 runs by lookup tables: per activation
//     column (once per matmul, shared by every row) the sixteen exact
//     products float(L)*dy of each Q8_0 block's eight lanes, one zmm per
//     lane (q8Act.lut, 2 KB per Q1_0 block); per sixteen rows, block and
//     lane, four vpermps of those tables indexed by the rows' weight nibbles
//     (pack.go's Q1_0 layout: the rows' sub-block words, loaded j/2 bytes
//     further and for odd j shifted by 4) and three vaddps replace the
//     reference's lane sum, conversion and FMA chain with the same
//     roundings (the products being exact, fma(L, dy, blk) is blk + L*dy
//     rounded once). AVX2's vpermps reads eight entries: there a product is
//     the vblendvps of two lookups, eight rows per ymm, the group in two
//     halves. Each group runs 8 blocks at a time
//     (its accumulators carried over) while up to 16 groups take turns, so
//     that a chunk of tables is read from L1; a prompt's columns run in
//     passes of lutCols columns whose tables stay in L2 (768 KiB).
//     Plain Q8_0 and Q4_0 rows run dot_q8_amd64.s at the SIMD levels:
//     the haswell vec_dot chain as compiled, four rows per activation block
//     (Work.MatMul hands it a worker's whole row range). F32, F16 and BF16
//     products of two or more columns (tinyBLAS) run tiny_amd64.s there:
//     tiles of four rows by three columns, each output its own 8-lane FMA
//     chain and hsum as TinyDotF32/F16/BF16, over column panels that stay
//     in L2; an output that comes out NaN is recomputed by the twin.
//   - Follows: ggml/src/ggml-cpu (vec.cpp, arch/x86/quants.c,
//     arch/x86/repack.cpp, llamafile/sgemm.cpp) of llama.cpp v0.5.0, and the
//     FMA contractions GCC emitted in libggml-cpu-haswell.so (read with objdump).
//   - Deliberate differences: integer sums are formed in any order (they are
//     exact); the float chain per output — lane layout, fused multiply-adds,
//     horizontal-sum order — is the reference's. The reference's repacked
//     Q4_0/Q4_K kernels' arithmetic is reproduced on ggml's plain layout;
//     bankml's own packed layout (Repack) has no counterpart in the reference,
//     which runs Q1_0/Q2_0/TQ2_0 on the plain layout.
//   - Determinism: every output element is a pure function of its weight row
//     and activation column, so results are identical for any thread count and
//     any level: Work.MatMul hands chunks of rows to the workers of a
//     parallel.Pool (a packed matrix as one contiguous share per worker,
//     walked front to back, the rest taken from the back of the others'
//     shares: runShares), and TestMatMulIndependentOfWorkers and
//     TestMatMulPackedIndependentOfWorkers check 1, 2, 3 and 8 workers.
package quant
