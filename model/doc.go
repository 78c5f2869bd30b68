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
//   - Deliberate differences: only the attention kernel the reference uses for
//     fewer than 64 query rows and fewer than 512 KV cells
//     (flash_attn_ext_f16_one_chunk) is implemented; Context.Decode refuses
//     batches or contexts that would take the reference's tiled or split-KV
//     kernels instead of computing them differently.
//   - Determinism: logits are a pure function of the token sequence; the thread
//     count only splits matmul rows.
package model
