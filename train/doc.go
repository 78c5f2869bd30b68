// Package train makes ternary models: a llama student distilled from a float teacher with BitNet b1.58's
// straight-through estimator, exported as TQ2_0 or Q2_0 GGUF that llama.cpp runs, and ternary evolution strategies
// over packed TQ2_0 genomes (the two-spirals demo, and a fine-tune of a student's last layers).
//
// # Design record
//
// What it does. The llama graph (embedding, RMSNorm, RoPE of llama's NORM type, grouped-K/V causal attention,
// SwiGLU, output, cross-entropy) is written by hand forward and backward, as llm.c does for GPT-2; every op's
// backward is gradchecked against float64 central differences (ops_test.go) and the whole model's against the
// loss's directional derivative. Matrices train in ModeFloat, ModeTernary (BitNet b1.58: per-tensor absmean
// scale d rounded to f16, round-clip to {−1, 0, +1}, forward and dx through d·trit, dW straight through to the
// latent weight) or ModeFrozen. AdamW (bias-corrected, decoupled decay on the matrices), linear warm-up and a
// cosine to MinLR, global-norm clipping. The data is distilled: SampleStories draws stories from the teacher
// through package engine with a seeded sampler (temperature 1, no truncation) and keeps each token's n_probs list
// (the teacher's top-K next-token probabilities) as soft targets; HeldOutFilter drops any story sharing 12 tokens
// in a row with the held-out text. Export writes the trits of the last forward with the trained d in every block
// (ternary.EncodeTQ2_0Scaled, EncodeQ2_0Scaled) and the teacher's tokenizer metadata. ES (es.go) follows Fucina
// §14.5 and EGGROLL's integer recipe: genomes are TQ2_0 bytes, each member flips max(1, rate·len) trits drawn
// from a counter-based stream (seed, iteration, pair, counter), antithetic pairs mirror the flips, an undo log
// restores them, centered-rank fitness folded per pair votes on the flipped trits and the top-K by |vote| move
// one bin; every member is scored through package quant's TQ2_0 kernels (Q8_K activations), the served path.
//
// Deliberate differences. The forward reads the dequantized ternary matrix through the dense float32 product
// (quant's GemmF32) instead of Fucina's multiplication-free kernel (the same values: d·trit·x is exact in float32
// up to the accumulation order); activations stay float32 (llama.cpp quantizes them to Q8_K at inference). The
// soft targets are the teacher's top-K probabilities renormalized, recorded while sampling, instead of its full
// logits from a second DecodeAll: the teacher is evaluated once per training token. Attention products run as
// dense seq×seq matrices with the masked half discarded. The spirals' first layer (width 2, not a TQ2_0 block) is
// a fixed random ReLU feature map and the network has no biases, so ES trains trits only (Fucina keeps float
// biases under Gaussian ES). ESOptions.Accept (on in the demo and the fine-tune) keeps an update only when it does
// not lower the fitness, and adapts K; Fucina always keeps it. A spirals member recomputes only the rows its flips
// touch (bit-identical to the full product). The fine-tune's frozen activations come from the straight-through
// forward (float32 attention), not from the served path's f16 KV cache.
//
// Determinism. Every op splits its rows into fixed strips (quant.GemmTileRows rows, or gradChunk rows for a
// weight gradient's partial sums, added in strip order); each element is one fixed chain. A step's batch is a pure
// function of (seed, step). Training is therefore bit-identical for any number of workers (TestTrainingIsBit…),
// and a checkpoint (weights, AdamW moments, step, history) resumes bit-identically (TestResumeFrom…). The bits
// depend on the CPU level of quant's product (fused steps at AVX2) and on Go's math.Exp, so they are the same on
// one machine and build, not across architectures. ES is sequential over members; its result depends only on the
// seed and quant's kernels (the same bits at every level).
package train
