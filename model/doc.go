// Package model runs the forward pass of a GGUF language model exactly as the
// reference (llama.cpp v0.5.0's CPU backend, haswell variant) computes it.
//
// Design record
//
//   - What: an architecture registry keyed by general.architecture (llama,
//     qwen3, qwen2, gemma3, phi3, bitnet, bert; CheckArchitecture refuses
//     anything else from the header, naming it). An architecture is one
//     file (arch_*.go): the tensors its loader binds, declared by GGUF name
//     and symbolic shape into Layer's tagged fields (optional ones marked,
//     every tensor of the file used or refused, as llama.cpp refuses), its
//     own hyperparameters, and its block written with the shared ops of a
//     pass (pass.go: RMS and layer norms, Q/K/V with biases, scales or
//     fused, per-head norms, RoPE NORM/NEOX with none/linear/YaRN scaling,
//     per-layer bases and frequency factors, grouped-query attention over an
//     f16 KV cache with the reference's three flash-attention kernels —
//     causal, within a sliding window, or non-causal over an encoder's
//     input —, the residual adds, SwiGLU/GeGLU/GELU feed-forwards, and the
//     last layer's ggml_get_rows of the output rows). llama/qwen3/qwen2 are
//     llama's block (qwen3's Q/K norms, qwen2's biases); gemma3 adds the
//     sqrt(n_embd) input scale, Q scaled before attention, post-attention and
//     post-FFN norms, GeGLU, sliding-window layers with their own RoPE base
//     and soft-capped logits; phi3 the fused attn_qkv and gate+up, LongRoPE's
//     factors (long past n_ctx_orig_yarn); bitnet the sub-norms, per-tensor
//     scales and logits from token_embd; bert (an encoder: Model.Encoder)
//     token types, absolute positions, layer norms with biases, GELU, no
//     logits. Output: the output norm and projection (tied to token_embd
//     when output.weight is absent), or the final rows when a Span asks for
//     embeddings (Span.Embed), pooled by Runner.Pool (none, mean, cls, last,
//     rank with bert's and qwen3's ranking heads) as build_pooling does for
//     an input alone in its micro-batch. Weights in any format package quant
//     multiplies. A projection is a Linear: one tensor, or the PTQTP
//     trit-planes "<name>.ptqtp0..2" of a file carrying fucina.ptqtp.version
//     (package ternary's format, bound in ptqtp.go), computed as the plane
//     products summed in plane order in float32 (quant.Work.MatMulPlanes);
//     mainline llama.cpp cannot load such files, so their oracle is per layer
//     (the reference's mul_mat of each plane, summed in plane order) and, for
//     one plane, the whole graph against the file with the plane stored under
//     the base name (ternary.Unplane). A Context holds one sequence: KV
//     cache grown with use, the context limit, the cached tokens, the class
//     each cell was computed with, and the prefix rules (llama-server's
//     ReusablePrefix; ExactPrefix). A Runner (one worker pool and one
//     quant.Work) evaluates the contexts made from it: Runner.Decode runs
//     one forward pass over the rows of several sequences (Spans), each row
//     with the arithmetic of its fresh micro-batch (its size and the row's
//     place: the matmul path where the type depends on it, the attention
//     kernel, inp_out_ids), attention over its own cache; a lone context's
//     Decode is a batch of one.
//   - Follows: src/models/{llama,qwen3,qwen2,gemma3,phi3,bitnet,bert}.cpp and
//     src/llama-graph.cpp (build_norm, build_qkv, build_ffn, build_attn,
//     build_pooling) for the graphs; ops.cpp's norm (double sum, AVX2
//     cvar), the GELU table of ggml_cpu_init (tanhf, one FMA) and gelu,
//     geglu, tanh, scale and soft_max as vec.h/vec.cpp compile them; src/llama-model.cpp
//     (load_hparams) and src/llama-context.cpp (the RoPE/YaRN parameters);
//     ggml-cpu's ops.cpp for rms_norm (double sum), rope
//     (ggml_rope_cache_init, rope_yarn, rotate_pairs with the FMA
//     contractions GCC emitted in the haswell build), flash_attn_ext
//     (one_chunk: f16 Q·K via ggml_vec_dot_f16, online softmax with glibc
//     expf, the V accumulator rounded to f16 at every step; tiled: f32 Q, 64×64
//     tiles, simd_gemm chains, ggml_v_expf softmax summed in double; split-KV:
//     one chunk per reference thread and ggml_flash_attn_ext_reduce_partials)
//     and ggml_vec_swiglu_f32 (ggml_v_expf on groups of 8, glibc expf on the
//     rest; at the SIMD levels runs of 64 through the attention kernels'
//     vExpfTile, each row cut into 1024-value chunks over the pool, which
//     leaves every group and the tail where the reference has them);
//     tools/server for the slot's context size (ContextSize), the
//     prompt limit (CheckPrompt) and the cached-prefix rule (ReusablePrefix).
//     Prompts run in micro-batches of 512 (n_ubatch), and on the last layer
//     only the output rows go through the feed-forward (inp_out_ids): the
//     matmul path, and so the rounding, depends on the number of columns.
//   - Where the compiled code's arithmetic differs from its source (each
//     covered by an oracle test): rotate_pairs fuses the x0 products
//     (fma(x0, cos, -x1*sin), fma(x0, sin, x1*cos)); rope_yarn fuses
//     theta = fma(theta_interp, 1-ramp_mix, theta_extrap*ramp_mix) and the
//     magnitude term fma(logf(1/freq_scale), 0.1, 1); GCC merges cosf and
//     sinf into sincosf; libllama's YaRN attention factor is computed with
//     separate multiplies and adds; reduce_partials fuses
//     fma(acc, scale_old, part*scale_new).
//   - Attention kernels (attn.go, attn_amd64.s; each with a portable Go twin
//     that runs at LevelGeneric, off amd64 and where a shape does not fit the
//     assembly): one_chunk (decode, split-KV chunks, micro-batches under 64
//     rows) computes every cell's score (quant's ggml_vec_dot_f16) and
//     softmax weight first, then the f16 V accumulator over all the cells in
//     one call (vAccF16: 128 lanes in AVX-512, 32 in AVX2+F16C, every lane's
//     chain rounded to f16 after each step in cell order); the tiled kernel
//     (micro-batches of 64 rows or more) runs in work items of one KV head
//     and 64 query rows with all the GQA heads that read it, widens each KV
//     tile once per item (K transposed) and runs per row KQ (eight 8-lane
//     fused chains across the cells), ggml_v_expf on the 64 scores and VKQ
//     (eight 8-lane chains across d, DV a multiple of 64) in AVX2+FMA at both
//     SIMD levels; the rest (scaling, masks, maxima, the double sum) is Go.
//     Bits: vfmadd231ps rounds once as fmath.FMA32, vcvtph2ps is exact,
//     vcvtps2ph $0 rounds as fp16Soft but for NaN, so vAccF16 stops before a
//     step that makes a NaN and its twin finishes the chunk, and a tiled row
//     whose output holds a NaN is recomputed by the twins: NaN signs and
//     payloads too are the twins' at every level. At the SIMD levels the
//     NEOX rotation runs rope_amd64.s (vfmsub231ps/vfmadd231ps: the same
//     fused pairs, eight at a time; TestRopeRotateEveryLevel) and K, V and Q
//     are rounded to f16 by quant's Level.FP32ToFP16Row (vcvtps2ph $0, as
//     ggml_cpu_fp32_to_fp16).
//   - KV cache types (kvcache.go; CacheTypes, llama.cpp's -ctk/-ctv): f16,
//     q8_0 or q4_0 per K and V, refused as llama_init_from_model refuses
//     (block size not dividing the head size). A quantized cache follows
//     src/llama-kv-cache.cpp and src/llama-graph.cpp's build_attn: Q and K
//     (K quantized) or V and kqv_out (V quantized) rotated by the
//     Walsh-Hadamard matrices when the head size is a multiple of 64, as the
//     CPU's ggml_compute_forward_fwht computes the hinted mul_mat (fwht);
//     cells written by from_float (quantize_row_q8_0, quantize_row_q4_0_ref);
//     every row through one_chunk (Q to Q8_0, the type's vec_dot, V by
//     to_float into an f32 accumulator, ggml_vec_mad_f32's fused lanes).
//   - Deliberate differences: the tiled kernel's work items group rows by KV
//     head, not in the reference's Q tiles (each row's result is independent
//     of its tile mates); at the SIMD levels
//     (quant.DefaultLevel) Load packs the Q1_0, Q2_0 and TQ2_0 projections
//     into quant's sixteen-row layout (Model.WaitPacked; LoadBackground packs after returning; the mapped pages
//     of a packed matrix are released from the resident set, the file stays
//     mapped read-only), whose tiles compute each row's reference chain;
//     Q/K/V and gate/up quantize their shared input once
//     (quant.Work.MatMulShared), to the bits each mul_mat would produce; a
//     weight may be PTQTP planes (Linear), multiplied as the plane products
//     summed in plane order; the KV cache grows as cells are used instead of
//     being allocated for the whole context (no arithmetic depends on the
//     allocation).
//   - Determinism: logits are a pure function of the token sequence, of the
//     micro-batch each row belongs to (as in llama.cpp: a prompt evaluated
//     after a reused prefix starts a new micro-batch; a Span names it) and,
//     for split-KV decodes only, of the mirrored reference thread count
//     (Context.SetAttnThreads), exactly as the reference's own results
//     depend on its -t there; never of the other sequences in a batch, the
//     rows evaluated beside a row of its own sequence, or the pool's size
//     (TestBatchedSequencesEqualAlone, TestLogitsIndependentOfThreads). A
//     cell's class (attention kernel; tinyBLAS and the Q4_K gemm where the
//     layer matrices depend on them) is recorded, so that a later prompt
//     keeps exactly the cells its fresh evaluation computes alike
//     (ExactPrefix) and settling (Unsettled, SettleSpans) can recompute a
//     turn's decoded cells as prompt rows. Truncate zeroes dropped cells:
//     the tiled kernel reads the masked cells of a row's last tile with
//     weight 0, and a fresh context holds zeros there.
package model
