// Package sample is llama.cpp's sampler chain as llama-server builds and
// runs it, reproduced token for token: the same candidates survive each
// stage, in the same order, and the seeded draw picks the same token.
//
// # Design record
//
// What. [New] builds a [Chain] from [Params] as common_sampler_init
// (common/sampling.cpp) does: the logit biases (the request's plus the
// model's suppress tokens at -Inf) first, then the stages in Params.Samplers
// (by default llama-server's order: penalties, DRY, top-n-σ, top-k,
// typical-p, top-p, min-p, XTC, temperature with dynamic temperature), then
// the seeded draw (llama_sampler_dist), with a grammar sampler beside the
// chain when [Params.Grammar] is set (package grammar: user GBNF, grammars
// made from JSON schemas, lazy tool-call grammars with their triggers, the
// generation prompt fed first) and the reasoning budget sampler
// (common/reasoning-budget.cpp) when its tags are set. [Chain.Sample] applies the chain to a row of
// logits as common_sampler_sample does: with a grammar, the token drawn is
// checked alone and only when the grammar refuses it are the candidates
// masked and the chain run again; [Chain.Accept] feeds back a token
// (penalty and DRY history, the grammar for generated tokens) as
// common_sampler_accept does;
// [Chain.Reset] is common_sampler_reset (reseeding the draws). [Chain.Probs]
// and [TokenProbs] give llama-server's per-token probabilities (n_probs,
// with or without post_sampling_probs) and [Logarithm] its logprob.
//
// Follows. llama.cpp at the reference's commit (src/llama-sampler.cpp:
// llama_sampler_{logit_bias,penalties,dry,top_n_sigma,top_k,typical,top_p,
// min_p,xtc,temp_ext,dist,grammar}; common/sampling.cpp,
// common/reasoning-budget.cpp; tools/server:
// server-schema.cpp for parameter names and limits, server-context.cpp's
// init_sampler and populate_token_probs, server-common.cpp's
// get_token_probabilities). Sorting and random numbers go through
// internal/stdcpp (libstdc++'s std::sort, std::partial_sort, std::mt19937,
// std::uniform_real_distribution), the libm calls through fmath (glibc's
// expf, logf, powf, pow), and every float operation keeps the reference's
// order and rounding: libllama is compiled without FMA contraction, so
// products are rounded before they are added (explicit float32()
// conversions keep Go from fusing them on FMA targets).
//
// Deliberate differences. None in the tokens drawn or the probabilities
// reported. Not reproduced, and refused with an error naming the parameter
// (never approximated): mirostat 1 and 2, llguidance grammars, the
// adaptive-p and infill samplers, backend sampling (see [Params.Check]);
// forcing the end of reasoning from outside (common_sampler_reasoning_budget
// _force, a server control route) has no counterpart. A token the grammar
// cannot take after the draw, where llama.cpp throws, is an error from the
// next Sample. Two values that
// nothing can observe are computed differently: the probabilities the
// dynamic-temperature stage leaves behind (Go's math.Exp instead of glibc's
// exp; every later stage that reads probabilities recomputes them first, and
// the chain always ends in the draw, which does). Sampler stages that
// llama.cpp creates as no-op "empty" samplers (top-k 0, top-p 1, ...) are not
// created at all.
//
// Determinism. A Chain holds its own state (candidate buffer, penalty ring,
// DRY history, the mt19937 engines of XTC and the draw); no package state is
// mutated. With a fixed seed (not [DefaultSeed]) the same logits and accepted
// tokens give the same tokens on every run and machine. [DefaultSeed] draws
// a random seed per engine, as llama.cpp's get_rng_seed does; [Chain.Seed]
// reports the draw's. A Chain is not safe for concurrent use.
package sample
