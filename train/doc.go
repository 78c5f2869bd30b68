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
// Deliberate differences (each explained in docs/TRAINING.md, "Deliberate differences"). The forward multiplies
// by the dequantized ternary matrix with the dense float32 product (quant's GemmF32), not Fucina's
// multiplication-free kernel; activations stay float32. Soft targets are the teacher's renormalized top-K,
// recorded while sampling, not its full logits. ES trains trits only (no biases); ESOptions.Accept keeps an
// update only when it does not lower the fitness, and adapts K (Fucina always keeps it).
//
// Determinism. Every op splits its rows into fixed strips (quant.GemmTileRows rows, or gradChunk rows for a
// weight gradient's partial sums, added in strip order); each element is one fixed chain. A step's batch is a pure
// function of (seed, step). Training is therefore bit-identical for any number of workers (TestTrainingIsBit…),
// and a checkpoint (weights, AdamW moments, step, history) resumes bit-identically (TestResumeFrom…). The bits
// depend on the CPU level of quant's product (fused steps at AVX2) and on Go's math.Exp, so they are the same on
// one machine and build, not across architectures. ES is sequential over members; its result depends only on the
// seed and quant's kernels (the same bits at every level).
package train
