// Package perplexity measures a model's perplexity on a text exactly as llama.cpp's llama-perplexity does by
// default: teacher-forced, over chunks of n_ctx tokens, the second half of each chunk scored.
//
// # Design record
//
// What. [Compute] cuts the text's tokens into chunks of n_ctx (BOS first in each when the vocabulary adds one),
// evaluates each from an empty cache through an [Evaluator] and scores the second half's next tokens with
// log_softmax; its doc has the arithmetic. Result carries the running "[i]" estimates and PPL ± its error.
//
// Follows. tools/perplexity/perplexity.cpp of llama.cpp v0.5.0, perplexity() without --ppl-stride: its chunking,
// BOS rule, scored half, log_softmax and the final estimate; expf, log and exp are glibc's (fmath.Expf,
// fmath.Log, fmath.Exp: the libm the tool links, bit for bit).
//
// Deliberate differences.
//   - Summation order: llama-perplexity hands a chunk's tokens to hardware_concurrency() threads that add their
//     shares under a mutex, so its last bits depend on the scheduling; Compute sums in token order, what the
//     tool computes on one hardware thread, and the oracle test checks that.
//   - With -b larger than -c llama-perplexity evaluates b/c chunks as parallel sequences of one batch; Compute
//     evaluates every chunk as its own sequence in batches of min(n_batch, n_ctx) (the logits llama-perplexity
//     computes with -b <= -c: a batch of several sequences splits into other micro-batches).
//   - A -b above -c is capped at -c. (llama-perplexity's main lowers it to ⌊b/c⌋·c before its GGML_ASSERT that
//     -b is below -c or a multiple of it, which so never fails from the command line.)
//   - A context below MinNCtx (3) is refused: it scores no token, where llama-perplexity refuses only n_ctx <= 0
//     and prints NaN estimates.
//   - Not here: --ppl-stride, --kl-divergence, HellaSwag, WinoGrande, multiple choice, the logits file.
//
// Determinism. The result is a pure function of the tokens, n_ctx, n_batch and the logits the Evaluator
// returns; with bankml's model those are a pure function of the tokens and the batches (package model).
package perplexity
