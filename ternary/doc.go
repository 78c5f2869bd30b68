// Package ternary turns float (or quantized) weights into ternary ones: ggml's TQ2_0, TQ1_0 and Q2_0 encoders,
// BitNet b1.58's absmean encoder, PTQTP trit-planes (W ≈ Σₖ αₖ·Tₖ, K = 1..3 planes per matrix, data-free), their
// GGUF persistence with the loader's plane detection, and the streaming exporter behind `bankml quantize`.
//
// # Design record
//
// What it does.
//   - Encoders: EncodeTQ2_0, EncodeTQ1_0 and EncodeQ2_0 are the reference's quantize_row_tq2_0_ref,
//     quantize_row_tq1_0_ref and quantize_row_q2_0_ref (ggml-quants.c of llama.cpp v0.5.0), byte for byte, NaN and
//     ±inf included (TestEncodersMatchTheReference); the arithmetic is package quant's ports of them.
//     EncodeAbsmeanTQ2_0 is BitNet b1.58's round-clip against one per-tensor absmean scale (arXiv:2402.17764, as
//     Fucina's ternaryAbsmeanScale and quantizeRowTQ2_0ScaledInto), stored in every block, so the result is plain
//     TQ2_0.
//   - PTQTP (arXiv:2509.16989 as Fucina implements it in src/ptqtp.zig): every group of a row is solved by
//     SolveGroup (sign start, integer-Gram ridge regression with λ escalation, exhaustive topology search in the
//     pinned candidate order, convergence on ‖Δα‖); a PlaneSet then takes f16(|α|) and searches once more against
//     the rounded scales, so the stored trits are optimal for the scales inference multiplies by, and packs each
//     plane as a complete tensor of TQ2_0 (groups of 256) or Q2_0 (groups of 64) blocks. MatrixStats are measured
//     on that served reconstruction.
//   - Files (Fucina's src/ptqtp_gguf.zig, format version 1): a matrix "<name>" becomes "<name>.ptqtp0..K-1" in
//     its place, with the key fucina.ptqtp.version = u32 1; LoadPlanes is the model loader's detection of them
//     (package model binds them as a Linear of planes). Unplane writes a K=1 file as the ordinary file mainline
//     llama.cpp runs (each plane under its base name): the reference's counterpart in the loader's oracle.
//   - PlanExport and Export (Fucina's tools/export_gguf.zig --ptqtp mode, and the same for the ggml encoders):
//     every tensor planned from the header, then streamed one after another through gguf.Writer, each converted
//     tensor decoded in chunks of rows from any type package quant reads, the source pages released once read.
//
// Deliberate differences from Fucina.
//   - Groups of 64 stored as Q2_0 planes (GroupSize 64): bankml's extension, so that models with rows of 64
//     (stories260K) convert and serve through the Q2_0 kernels, each plane still a tensor llama.cpp dequantizes.
//     The solver is the same; Q2_0's block puts d first. Fucina reads only TQ2_0 planes (PlaneTypeMismatch), so
//     such files are bankml-only; they carry the same version key, and the guard says so.
//   - The topology search walks the group's weights in ascending order against the distinct candidate values,
//     takes a weight between two guard bands straight to the nearest value's first candidate, and compares the
//     exact float32 squares of the neighbours otherwise: the same answer as Fucina's exhaustive strictly-less
//     search in pinned order, for every weight (the argument is in levelSet.bands; TestSortedSearchEqualsExhaustive
//     checks it against the exhaustive search, which stays as nearestExhaustive and serves non-finite scales).
//     The scale step forms Sᵀw without branches and the Gram entries from the count of each candidate tuple:
//     the same float64 sums in the same weight order and the same integers.
//   - AbsmeanScale averages the finite weights only and is at most 65504 (Fucina's mean of a tensor holding an
//     inf is inf, and every block's d with it).
//   - LoadPlanes refuses ".ptqtp1" or ".ptqtp2" without the planes before it (Fucina ignores planes when
//     ".ptqtp0" is missing).
//   - The exporter decodes about 16 MiB of rows at a time instead of whole tensors, reads every type package quant
//     decodes (Q1_0, Q2_K, Q3_K and the ternary types too), sets general.file_type (llama_ftype of the blocks
//     written: 36 TQ1_0, 37 TQ2_0, 41 Q2_0) and general.quantization_version, and refuses nothing for non-finite
//     weights (it counts them). Not in this package yet: 3-D expert stacks, the tied fit (tie_scales) and the
//     folded tq2_0_fx4 format.
//   - EncodeTQ2_0 and EncodeTQ1_0 store a NaN block scale as the software conversion's 0x7e00, as the reference's
//     _ref quantizers do (quant.QuantizeTQ*_0Ref convert d with ggml's software GGML_FP32_TO_FP16).
//
// Numerics and determinism. SolveGroup does Fucina's float64 and float32 arithmetic in its operation order, with
// every product wrapped in a conversion so that Go fuses no multiply-add. A group's planes are a pure function of
// its weights and the options; PlaneSet.QuantizeRows shares rows between the workers of a parallel.Pool and
// Stats reduces the rows' diagnostics in row order, so planes and stats are the same bits for any pool size and
// any split of the rows into chunks (TestPlanesDoNotDependOnThreadsOrChunks), and Export writes the same bytes for
// any pool (TestExportIsDeterministicAndIdempotent). Non-finite weights never reach an integer conversion
// unchecked: the ggml encoders do what the reference does (see each), PTQTP gives them trit 0 in every plane and
// leaves them out of Sᵀw and of the error.
package ternary
