// Package model runs the forward pass of a GGUF language model exactly as the
// reference (llama.cpp v0.5.0's CPU backend, haswell variant) computes it.
//
// Design record
//
//   - What: the `llama` graph (token embedding, RMSNorm, RoPE in normal mode,
//     grouped-query attention over an f16 KV cache with the reference's flash
//     attention kernel, SwiGLU feed-forward, output norm and projection) over
//     weights in any format package quant multiplies.
//   - Follows: src/models/llama.cpp and src/llama-graph.cpp for the graph;
//     ggml-cpu's ops.cpp for rms_norm (double sum), rope (ggml_rope_cache_init,
//     rotate_pairs with the FMA contractions GCC emitted),
//     flash_attn_ext_f16_one_chunk (f16 Q·K via ggml_vec_dot_f16, online
//     softmax with glibc expf, the V accumulator rounded to f16 at every step)
//     and ggml_vec_swiglu_f32 (ggml_v_expf on groups of 8, glibc expf on the
//     rest). Prompts run in micro-batches of 512 (llama.cpp's n_ubatch), and on
//     the last layer only the rows whose logits are wanted go through the
//     feed-forward, as llama.cpp's inp_out_ids does: the matmul path, and so the
//     rounding, depends on the number of columns.
//     Attention takes the reference's three kernels by the reference's rule:
//     one_chunk (below 64 rows), tiled (64 rows or more), split-KV (one row,
//     padded KV length of 512 or more).
//   - Deliberate differences: the tiled kernel is computed row by row (each
//     row's result is independent of its tile mates); weights are never
//     repacked, their kernels' arithmetic is reproduced on ggml's layout.
//   - Determinism: logits are a pure function of the token sequence and, for
//     split-KV decodes only, of the mirrored reference thread count
//     (Context.SetAttnThreads), exactly as the reference's own results depend
//     on its -t there; the thread count otherwise only sizes the context's
//     persistent matmul pool (package parallel; Context.Close stops it),
//     which splits rows and changes no bit (TestLogitsIndependentOfThreads).
package model
