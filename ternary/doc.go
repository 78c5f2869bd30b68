// Package ternary turns float (or quantized) weights into ternary ones: ggml's TQ2_0, TQ1_0 and Q2_0 encoders,
// BitNet b1.58's absmean encoder, PTQTP trit-planes (W ≈ Σₖ αₖ·Tₖ, K = 1..3, data-free), and `bankml quantize`.
//
// # Design record
//
// What. EncodeTQ2_0, EncodeTQ1_0 and EncodeQ2_0 are the reference's quantize_row_*_ref (ggml-quants.c), byte
// for byte, NaN and ±inf included; EncodeAbsmeanTQ2_0 is BitNet b1.58's round-clip against one per-tensor
// absmean scale, stored as plain TQ2_0. PTQTP: SolveGroup solves a group (sign start, integer-Gram ridge
// regression with λ escalation, topology search, convergence on ‖Δα‖); a PlaneSet rounds the scales to f16,
// searches once more against them and packs each plane as a TQ2_0 (groups of 256) or Q2_0 (groups of 64)
// tensor "<name>.ptqtp0..K-1" with fucina.ptqtp.version = 1; LoadPlanes is the loader's detection; Unplane
// writes a K=1 file mainline llama.cpp runs. PlanExport and Export stream every tensor through gguf.Writer.
//
// Follows. ggml-quants.c of llama.cpp v0.5.0 for the ggml encoders; PTQTP (arXiv:2509.16989) as Fucina
// implements it (src/ptqtp.zig, src/ptqtp_gguf.zig, tools/export_gguf.zig), in its operation order.
//
// Deliberate differences from Fucina. Groups of 64 as Q2_0 planes (bankml-only files, the guard says so); a
// sorted topology search that gives the exhaustive search's answer for every weight
// (TestSortedSearchEqualsExhaustive); AbsmeanScale over finite weights only, at most 65504; LoadPlanes refuses
// a later plane without the ones before it; the exporter decodes about 16 MiB of rows at a time from any type
// package quant reads and sets general.file_type. Not here yet: 3-D expert stacks, tied fits, tq2_0_fx4.
//
// Determinism. SolveGroup does Fucina's float64/float32 arithmetic with no fused multiply-add. Planes and stats
// are the same bits for any pool size and any split into chunks (TestPlanesDoNotDependOnThreadsOrChunks); Export
// writes the same bytes for any pool (TestExportIsDeterministicAndIdempotent). Non-finite weights never reach
// an integer conversion unchecked. The full record: docs/TERNARY.md, "Package ternary: its design record in
// full".
package ternary
