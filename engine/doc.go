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
// for a slot in a bounded FIFO queue ([ErrQueueFull] beyond QueueSize),
// picks the slot as get_available_slot does (the free slot whose cached
// tokens share the longest common prefix with the prompt, as a fraction of
// the prompt above slot_prompt_similarity 0.1; else the least recently used
// free slot, ties to the highest id), keeps the reusable prefix
// ([model.ReusablePrefix]: cache_prompt), evaluates the rest, then builds a
// fresh [sample.Chain] for the request, accepts every prompt token into it
// (server_slot::init_sampler) and generates token by token.
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
// probs_output less the stop word's tokens), and
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
// prompt (the tokens generated do not change: see Determinism). Speculative
// decoding, multimodal prompts, n_indent, t_max_predict_ms, n_keep and
// context shift are not implemented.
//
// Determinism contract. The tokens of an answer are a function of the request
// (prompt, sampling parameters with a fixed seed, stops, n_predict) and of
// the micro-batch boundaries of its prompt's evaluation, exactly as in the
// reference, where the logits of a batch depend on the number of tokens in
// it. With prompts that fit in one micro-batch (512 tokens) bankml's forward
// pass gives every row the same bits whatever else is in the batch (model's
// oracle: the KV values of a reused prefix equal re-evaluated ones), so an
// answer does not depend on which other requests ran or which slot served it:
// TestAnswersUnderLoadEqualSingle checks it.
package engine
