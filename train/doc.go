// Package train makes ternary models: a llama student distilled from a float teacher with BitNet b1.58's
// straight-through estimator, exported as TQ2_0 or Q2_0 GGUF that llama.cpp runs, and ternary evolution strategies
// over packed TQ2_0 genomes (the two-spirals demo, and a fine-tune of a student's last layers).
//
// # Design record
//
// What it does. The llama graph (embedding, RMSNorm, RoPE, grouped-K/V causal attention, SwiGLU, output,
// cross-entropy) is written by hand forward and backward, each op gradchecked against float64 central
// differences (ops_test.go). Matrices train in ModeFloat, ModeTernary (per-tensor absmean scale d rounded to f16,
// round-clip to {−1, 0, +1}, dW straight through to the latent weight) or ModeFrozen, with AdamW, warm-up, a
// cosine schedule and global-norm clipping. SampleStories distils the data from the teacher through package
// engine (seeded, temperature 1), keeping each token's n_probs list as soft targets; Export writes the trits with
// the trained d in every block. ES (es.go): genomes are TQ2_0 bytes, antithetic pairs flip trits, the top-K by
// vote move one bin, members scored through quant's TQ2_0 kernels (docs/TRAINING.md has the recipe).
//
// Follows. llm.c's hand-written forward and backward (for GPT-2); BitNet b1.58's straight-through estimator;
// Fucina §14.5 with EGGROLL's integer recipe for ES.
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
// depend on the CPU level of quant's product and on Go's math.Exp: the same on one machine and build, not across
// architectures. ES depends only on the seed and quant's kernels (the same bits at every level).
package train
