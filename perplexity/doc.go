// Package perplexity measures a model's perplexity on a text exactly as
// llama.cpp's llama-perplexity does by default (tools/perplexity/
// perplexity.cpp, perplexity() without --ppl-stride): teacher-forced, over
// chunks of n_ctx tokens, the second half of each chunk scored.
//
// # Design record
//
// What. Compute takes the text's tokens (tokenized whole, with BOS when the
// vocabulary adds one: common_tokenize(ctx, text, true)), cuts them into
// n_chunk = len/n_ctx chunks of n_ctx tokens (the tail is dropped; at least
// 2·n_ctx tokens are needed), replaces the first token of every chunk with BOS
// (when the vocabulary adds one), evaluates each chunk from an empty cache in
// batches of n_batch tokens whose logits flags are set on the positions
// pos >= first = n_ctx/2, and scores tokens first+1 .. n_ctx-1 of the chunk:
// for each, −log softmax(logits)[next] as log_softmax computes it (max logit
// in float32, Σ expf(l − max) in double, logit − max − log(sum) with the
// float32 difference widened), summed with its square in double. The running
// estimate after chunk i is exp(nll/count) ("[i]%.4f,"), the final one
// PPL = exp(nll/count) ± PPL·sqrt((nll2/count − (nll/count)²)/(count−1)).
//
// Follows. llama-perplexity of llama.cpp v0.5.0: its chunking, BOS rule,
// scored half, log_softmax and the final estimate; expf, log and exp are
// glibc's (fmath.Expf, fmath.Log, fmath.Exp: the libm the tool links, bit for
// bit).
//
// Deliberate differences.
//   - Summation order: llama-perplexity's process_logits hands the tokens of
//     a chunk to hardware_concurrency() threads that each sum their share and
//     add it to the total under a mutex, so its last bits depend on the
//     scheduling; Compute sums in token order, which is what the tool computes
//     on one hardware thread. That is the contract the oracle test checks.
//   - Parallel sequences: with -b larger than -c, llama-perplexity evaluates
//     b/c chunks as parallel sequences of one batch; Compute evaluates every
//     chunk as its own sequence in batches of min(n_batch, n_ctx) tokens. The
//     chunks, positions and scored tokens are the same; the logits are those
//     llama-perplexity computes with -b <= -c (a batch of several sequences
//     splits into different micro-batches, and the matmul path depends on the
//     micro-batch's rows).
//   - A -b that is neither below -c nor a multiple of it is accepted (it is
//     capped at -c); llama-perplexity stops on a GGML_ASSERT.
//   - Not here: --ppl-stride, --kl-divergence, HellaSwag, WinoGrande,
//     multiple choice, the logits file.
//
// Determinism. The result is a pure function of the tokens, n_ctx, n_batch
// and the logits the Evaluator returns; with bankml's model those are a pure
// function of the tokens and the batches (package model).
package perplexity
