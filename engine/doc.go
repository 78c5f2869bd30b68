// Package engine runs completions the way llama-server v0.5.0 runs them (slots, one forward pass per step over
// every slot's work, the sampler chain, stops and counts), every answer equal to the request's answer alone.
//
// # Design record
//
// What. An Engine owns one model.Runner and Parallel slots (--parallel), each a model.Context made on first use;
// New first checks that the weights and every slot's full KV cache fit the memory bound (model.Model.CheckMemory,
// llama.cpp's loader failing to allocate its cache at start, as a named refusal). Generate waits in
// a bounded queue ([ErrQueueFull] past QueueSize), picks a slot as get_available_slot does (longest cached
// prefix above slot_prompt_similarity 0.1, else the least recently used), hands its prompt and then each
// sampled token to the scheduler, samples with its own fresh sample.Chain and applies the stop rules. The
// scheduler (one goroutine, update_slots) runs steps: one Runner.Decode over every generating request's next
// token and up to BatchSize prompt rows. Evaluate (llama-perplexity's loop), Embed (--pooling), SaveSlot,
// RestoreSlot and EraseSlot run between or within steps; Embed's inputs, each in a fresh context padded to 256
// cells, start only while those alive hold less than one context of max(n_ctx, BatchSize) tokens (at most that
// one cache beyond the slots', which the memory check does not count). Every bankml command that generates or
// evaluates is a client of this engine: serve, run and run --chat, perplexity, bench.
//
// Follows. tools/server/server-context.cpp: get_available_slot, launch_slot_with_task, update_slots (its refusal
// of a prompt longer than the context, cache_prompt's common prefix), process_token (UTF-8 and partial stop
// strings held back, the context limit without context shift, n_predict, end of generation), the timings and
// final response; server-schema.cpp's ignore_eos. Counts are llama-server's (Result.Tokens includes the EOG).
//
// Deliberate differences. Each row of a step carries its fresh evaluation's class (model.Span) and attends to
// its own slot's cache only, so batching changes no bit (llama-server's unified batch makes answers depend on
// each other). CacheReuse "exact" (the default) keeps only the cached prefix the fresh evaluation computes alike;
// "server" keeps llama-server's whole common prefix. A control-token text typed in a message stays text. The
// host prompt cache (--cache-ram) is off by default. Not implemented: speculative decoding, multimodal
// prompts, n_indent, t_max_predict_ms, n_keep, context shift.
//
// Determinism. An answer's tokens are a function of the request alone (with a fixed seed), equal to the
// reference's single-sequence answer, whatever ran beside it (TestBatchedAnswersMatchReference,
// TestConversationsReuseExactly). The full record, with its one caveat: docs/design.md, "Package engine".
package engine
