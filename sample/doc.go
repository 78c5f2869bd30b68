// Package sample is llama.cpp's sampler chain as llama-server builds and runs it, reproduced token for token:
// the same candidates survive each stage, in the same order, and the seeded draw picks the same token.
//
// # Design record
//
// What. [New] builds a [Chain] from [Params] as common_sampler_init does: the logit biases (the model's
// suppressed tokens at -Inf included), the stages in Params.Samplers (by default penalties, DRY, top-n-σ, top-k,
// typical-p, top-p, min-p, XTC, temperature), the seeded draw, a grammar sampler beside the chain
// ([Params.Grammar], package grammar) and the reasoning budget sampler. [Chain.Sample] is common_sampler_sample
// (with a grammar: the drawn token checked alone, the chain re-run on masked candidates only when it is
// refused), [Chain.Accept] common_sampler_accept, [Chain.Reset] common_sampler_reset; [Chain.Probs],
// [TokenProbs] and [Logarithm] give llama-server's n_probs and logprobs.
//
// Follows. src/llama-sampler.cpp (llama_sampler_*), common/sampling.cpp, common/reasoning-budget.cpp and
// tools/server (server-schema.cpp's names and limits, init_sampler, populate_token_probs). Sorting and random
// numbers go through internal/stdcpp (libstdc++'s std::sort, std::partial_sort, std::mt19937), libm calls
// through fmath; every float operation keeps the reference's order and rounding (libllama has no FMA
// contraction, so explicit float32() conversions keep Go from fusing).
//
// Deliberate differences. None in the tokens drawn or the probabilities reported. Refused by name, never
// approximated ([Params.Check]): mirostat, llguidance, the adaptive-p and infill samplers, backend sampling. A
// token the grammar cannot take after the draw is an error from the next Sample (llama.cpp throws). No-op
// stages (top-k 0, top-p 1, ...) are not created; the dynamic-temperature stage's leftover probabilities,
// which nothing observes, use Go's math.Exp.
//
// Determinism. A Chain holds its own state; no package state is mutated. With a fixed seed (not [DefaultSeed],
// which draws one per engine as get_rng_seed does) the same logits and accepted tokens give the same tokens
// on every run and machine. A Chain is not safe for concurrent use. The full record: docs/design.md,
// "Package sample".
package sample
