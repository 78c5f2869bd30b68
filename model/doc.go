// Package model runs the forward pass of a GGUF language model exactly as the reference (llama.cpp v0.5.0's CPU
// backend, haswell variant) computes it: logits and embeddings equal bit for bit.
//
// # Design record
//
// What. An architecture registry keyed by general.architecture (llama, qwen3, qwen2, gemma3, phi3, bitnet, bert;
// anything else refused by name): each architecture is one file (arch_*.go) binding its tensors and writing its
// block with the shared ops of a pass (pass.go: norms, Q/K/V, RoPE with YaRN/LongRoPE, grouped-query attention
// over a KV cache (f16, or q8_0/q4_0 per K and V with llama.cpp's Walsh-Hadamard rotation: kvcache.go) with the
// reference's three flash-attention kernels, SwiGLU/GeGLU/GELU, pooling). A
// projection is a Linear: one tensor in any format package quant multiplies, or PTQTP trit-planes (ptqtp.go). A
// Context holds one sequence (KV cache, cached tokens, each cell's class, the prefix rules); a Runner evaluates
// several contexts' rows in one forward pass (Runner.Decode over Spans), each row with its fresh micro-batch's
// arithmetic.
//
// Follows. src/models/*.cpp and src/llama-graph.cpp for the graphs, src/llama-model.cpp and
// src/llama-context.cpp for the hyperparameters, ggml-cpu's ops.cpp and vec.cpp for the ops (with the FMA
// contractions GCC emitted in the haswell build), tools/server for the slot's context size and prefix rules.
// Prompts run in micro-batches of 512; on the last layer only the output rows go through the feed-forward.
//
// Deliberate differences. The tiled attention kernel groups rows by KV head, not in Q tiles; at the SIMD levels
// Q1_0/Q2_0/TQ2_0 projections are packed into quant's sixteen-row layout; Q/K/V and gate/up quantize their shared
// input once; the KV cache grows as cells are used (CheckMemory refuses up front caches that could not all fill up
// beside the weights). None changes a bit.
//
// Determinism. Logits are a pure function of the token sequence, of the micro-batch each row belongs to (a Span)
// and, for split-KV decodes only, of the mirrored reference thread count, as the reference's are; never of the
// other sequences in a batch or the pool's size (TestBatchedSequencesEqualAlone). The full record, with the
// attention kernels' bits: docs/design.md, "Package model".
package model
