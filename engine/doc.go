// Package engine runs completions the way llama-server v0.5.0 runs them:
// slots, one forward pass per step over every slot's work, llama.cpp's
// sampler chain, stop strings and counts — with every answer equal to the
// request's answer alone. Package serve puts the HTTP APIs on top of it.
//
// # Design record
//
// What. An Engine owns one model.Runner (the process's one pool of Threads
// workers and matmul buffers) and Parallel slots (--parallel), each a
// [model.Context] holding only its KV cache, made on first use. Generate
// waits for a slot in a bounded queue ([ErrQueueFull] beyond QueueSize;
// llama-server's is unbounded), served in arrival order whenever a slot
// frees (a request for a busy id_slot does not hold back one that a free
// slot can take); it picks the slot as get_available_slot does (the free
// slot whose cached tokens share the longest common prefix with the prompt,
// as a fraction of the prompt above slot_prompt_similarity 0.1; else the
// least recently used, ties to the highest id). The request then hands its
// prompt, and after each sampled token that token, to the scheduler as a
// job and waits for the logits; it samples with its own fresh
// [sample.Chain] (every prompt token accepted first, init_sampler), applies
// the stop rules and calls onToken on its own goroutine. The scheduler (one
// goroutine, llama-server's update_slots) runs steps: one Runner.Decode over
// the next token of every generating request and up to BatchSize prompt rows
// of requests in prompt processing (arrival order; cut at multiples of 64
// inside a prompt), waiting up to 10 ms for requests still sampling from the
// last step. [Engine.Evaluate] decodes a sequence from position 0 in
// llama_decode calls of a given size and returns the logits of its last
// tokens (llama-perplexity's loop), each call run by the scheduler between
// steps, as are SaveSlot, RestoreSlot and EraseSlot (llama-server's slot
// actions: a slot's tokens, cell classes and cells in a checksummed file
// naming the model). Idle slots settle: their generated cells (computed one
// row at a time) are re-evaluated as prompt rows so that a conversation's
// next turn reuses them. Embed hands the scheduler each input as a job of its own (no
// slot: a fresh context per input, every row an output, one micro-batch
// never split across steps) that shares the steps' forward passes; the rows
// are pooled with Options.Pooling (--pooling) or the model's pooling type.
// An encoder (bert) only embeds: Generate refuses it (ErrEncoder). Every bankml command that generates or evaluates
// is a client of this engine: serve, run and run --chat, perplexity, bench.
//
// Follows. tools/server/server-context.cpp at the reference's commit:
// get_available_slot, launch_slot_with_task (n_predict: the request's, else
// -1), update_slots (one batch over all slots; the refusal "request (N
// tokens) exceeds the available context size (M tokens), try increasing
// it" with exceed_context_size_error; cache_prompt's common prefix),
// process_token (text released per token: nothing while the text ends
// inside a UTF-8 sequence, validate_utf8; the full stop-string search from
// word.size() + last-token-size back; nothing released while a suffix is a
// prefix of a stop string, string_find_partial_stop; then the context
// limit without context shift (n_past + 1 >= n_ctx: "length"), n_predict,
// an end-of-generation token, rendered without special tokens),
// server_slot_stats (timings), send_final_response (content, stopping_word,
// stop_type, tokens_cached, probs_output less the stop word's tokens), and
// server-schema.cpp's ignore_eos (a -Inf bias on every EOG token). Counts
// as llama-server's: Result.Tokens holds every sampled token, EOG included
// (completion_tokens, predicted_n); CachedTokens is cache_n; n_predict 0
// samples one token.
//
// Deliberate differences. llama-server puts all slots' tokens in one
// llama_batch, whose micro-batches and unified KV cache make a request's
// logits depend on the others; here every row of a step carries the class
// of its fresh evaluation (model.Span: its micro-batch's size and row) and
// is computed with exactly that arithmetic, attention over its own slot's
// cache: decode columns of all slots share one weight pass wherever the
// matrix's chain is per output (every type but F32/F16/BF16 and repacked
// Q4_K, which run per class), so batching changes no bit. Cache reuse
// (CacheReuse "exact", the default) keeps the longest cached prefix whose
// cells the fresh evaluation of the new prompt computes alike
// (model.Context.ExactPrefix: same tokens, same cell classes) at any length,
// and evaluates the rest with the fresh evaluation's classes; "server"
// keeps llama-server's whole common prefix (its cache_n, and answers that
// depend on the slot's history, as llama-server's do). Segments of a chat
// prompt are tokenized so that a control-token text typed in a message
// stays text (see Prompt). The host prompt cache (CacheRAMMiB, --cache-ram)
// follows server_prompt_cache's rules but is off by default (llama-server's
// default is 8192 MiB). Not implemented: speculative decoding, multimodal
// prompts, n_indent, t_max_predict_ms, n_keep, context shift.
//
// Determinism contract. The tokens of an answer are a function of the
// request alone (prompt, sampling parameters with a fixed seed, stops,
// n_predict, ignore_eos), never of which other requests ran beside it, in
// which step its rows ran, or what its slot held: every answer equals the
// reference's single-sequence answer (a fresh llama_context evaluating the
// prompt in micro-batches of 512 from position 0, then one token at a
// time). One caveat is the reference's own: the tiled attention kernel
// (64 rows or more) carries the masked cells of a row's last tile into its
// chains with weight 0, so a cell there that differs from the fresh
// evaluation's (a reused prefix's neighbour) could change the sign of an
// all-zero accumulator; finite values change nothing else.
// TestBatchedAnswersMatchReference and TestConversationsReuseExactly check
// the contract under load and across turns.
package engine
