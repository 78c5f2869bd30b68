// Package engine runs completions the way a llama-server v0.5.0 slot runs
// them: it tokenizes a prompt, keeps the slot's cached prefix, evaluates the
// rest, samples with llama.cpp's sampler chain, and stops on an
// end-of-generation token, a stop string, n_predict or a full context, with
// llama-server's counts, finish reasons and timings. Package serve puts the
// HTTP APIs (OpenAI, Ollama, llama-server's own) on top of it.
//
// # Design record
//
// What. An Engine owns Parallel slots (llama-server's --parallel), each a
// [model.Context] with its own KV cache, created on first use. Generate waits
// for a slot in a bounded queue ([ErrQueueFull] beyond QueueSize; llama-server's
// is unbounded), served in arrival order whenever a slot frees, as
// llama-server retries its deferred tasks (a request for a busy id_slot does
// not hold back one that a free slot can take); it picks the slot as get_available_slot does (the free slot whose cached
// tokens share the longest common prefix with the prompt, as a fraction of
// the prompt above slot_prompt_similarity 0.1; else the least recently used
// free slot, ties to the highest id), keeps the cached prefix that the
// determinism rule below allows (cache_prompt), evaluates the rest, then builds a
// fresh [sample.Chain] for the request, accepts every prompt token into it
// (server_slot::init_sampler) and generates token by token.
// [Engine.Evaluate] decodes a sequence from position 0 in llama_decode calls
// of a given size and returns the logits of its last tokens, what
// llama-perplexity asks. Every bankml command that generates or evaluates is
// a client of this engine: serve, run and run --chat, perplexity, bench model.
//
// Follows. tools/server/server-context.cpp at the reference's commit:
// get_available_slot (slot choice), launch_slot_with_task (n_predict: the
// request's, else the server's -1), update_slots (the context limit
// "request (N tokens) exceeds the available context size (M tokens), try
// increasing it" with exceed_context_size_error, cache_prompt's common
// prefix), process_token (the text released per token: nothing while the
// generated text ends inside a UTF-8 sequence, validate_utf8's rule; the
// full stop-string search over the unsent text from word.size() +
// last-token-size back, the cut at the stop string; nothing released while a
// suffix of the unsent text is a prefix of a stop string,
// string_find_partial_stop; then, in this order, the context limit without
// context shift (n_past + 1 >= n_ctx: finish "length", llama-server's
// default since ctx_shift is off), the n_predict budget, and an
// end-of-generation token, whose piece is rendered without special tokens),
// server_slot_stats (timings: prompt_n, prompt_ms, predicted_n,
// predicted_ms, cache_n), send_final_response (content, stopping_word,
// stop_type, tokens_cached, probs_output less the stop word's tokens), and
// server-schema.cpp's ignore_eos (a -Inf logit bias on every EOG token).
//
// Counts as llama-server counts them: Result.Tokens holds every sampled
// token, the end-of-generation token included (stats.n_gen, the
// completion_tokens of the usage block and timings.predicted_n);
// Result.CachedTokens is timings.cache_n, the prompt tokens taken from the
// slot's cache; PromptTokens is the whole prompt (usage.prompt_tokens).
// n_predict 0 samples one token and stops with "length": process_token checks
// the budget only after a token was sampled (the schema's description says no
// token is generated; the code samples one).
//
// Deliberate differences. Segments of a chat prompt are tokenized so that a
// control-token text typed in a message stays text (see Prompt); where no
// message holds such a text the tokens are exactly llama-server's. The
// RAM prompt cache (--cache-ram, prompt_save/prompt_load) is not
// reproduced: only the slot's own cache is reused, so cache_n can be smaller
// than llama-server's when its prompt cache would have restored an older
// prompt. The prefix kept by cache_prompt is limited for determinism (below)
// unless Options.ServerPrefixReuse. Speculative
// decoding, multimodal prompts, n_indent, t_max_predict_ms, n_keep and
// context shift are not implemented.
//
// Determinism contract. The tokens of an answer are a function of the request
// alone (prompt, sampling parameters with a fixed seed, stops, n_predict,
// ignore_eos), never of which other requests ran or which slot served it:
// every answer equals the one a fresh llama-server would give. This needs a
// rule llama-server does not have. The logits of a batch depend on how the
// positions were split into micro-batches, in the reference as in bankml
// (bit-identical to each other split for split): on stories260K a prompt whose
// last one or two tokens are evaluated after a cached prefix gives other
// logits than the whole prompt at once, and on the synthetic qwen3 model any
// split inside the first 512 positions changes every logit. llama-server,
// which keeps the whole common prefix, therefore answers a repeated request
// differently from the first time it saw it. So by default cache_prompt keeps
// only the part of the common prefix that was computed in full micro-batches
// of model.NUbatch starting at multiples of model.NUbatch (what a fresh
// evaluation computes the same way), and evaluates the rest in a fresh
// evaluation's micro-batches; cache_n (CachedTokens) reports what was kept,
// so it is 0 for prompts under 512 tokens and a multiple of 512 otherwise.
// Options.ServerPrefixReuse keeps llama-server's whole reusable prefix
// instead (its cache_n, its speed, its dependence on history).
// TestAnswersUnderLoadEqualSingle checks the default under concurrent load.
package engine
