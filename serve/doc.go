// Package serve is bankml's HTTP server: the OpenAI API (/v1/chat/completions, /v1/completions,
// /v1/models), llama-server's own routes (/completion, /health, /props, /tokenize, /detokenize,
// /apply-template, /metrics; native.go, extras.go), embeddings and reranking (/v1/embeddings, /embedding,
// /embeddings, /v1/rerank and its aliases, Ollama's /api/embed and /api/embeddings; embeddings.go),
// the Ollama API (/api/*, in ollama*.go), bankml's history and transparency log (/bankml/ledger/..., in
// ledger.go) and the console (/console, console.go), over one admitted model and package engine's slots.
//
// # Design record
//
// What. Admit guards, pins and loads a model (a refused model never listens: bankml serve exits 2 before the
// port opens); New builds a Server over it; Handler is its chi router; Serve answers on a listener until
// its context is cancelled, then shuts down gracefully. Every answer carries a Receipt (bankml_receipt),
// is preceded by a re-check of the model file's identity (FileIdentity: device, inode, size, mtime; 503
// when it changed) and, with a ledger, is appended to the history before its receipt is sent; with a
// transparency log (Options.TLog) the line's commitment is in the log and the receipt names its leaf; with
// an operator key (Options.Signer) the receipt is signed (receipt.go, docs/receipts.md).
//
// Follows. llama-server (tools/server of llama.cpp at the reference's commit): its routes, its request
// fields and defaults (server-schema.cpp, through sample.Params.ApplyServerLimits), its error bodies
// (format_error_response: {"error": {"code", "message", "type"}}; exceed_context_size_error adds
// n_prompt_tokens and n_ctx), its SSE framing (format_oai_sse: "data: JSON\n\n", then "data: [DONE]\n\n"),
// its non-OpenAI /completion answer (to_json_non_oaicompat, SSE without [DONE]), its API-key middleware
// (middleware_validate_api_key: /health, /v1/health and the UI's / are public), its preflight (OPTIONS
// answered before routing), its 404 {"error": {"message": "File Not Found"}} for
// unknown paths and wrong methods alike (server-http.cpp, cpp-httplib has no 405; under /api/ Ollama's gin
// texts instead), its "Field 'name': ..." wording of a bad field, and its /metrics names
// (llamacpp:prompt_tokens_total, ...). OpenAI's chat.completion(.chunk) and
// text_completion shapes as llama-server produces them, text that is not UTF-8 as its JSON carries it
// (utf8.go). The receipt of bankml-digest §3.5.
//
// Deliberate differences. Cross-origin reads follow Ollama, not llama-server's default (which echoes any
// Origin with credentials): loopback and app origins only, more by Options.CORSOrigins, a refused origin a
// 403, never credentials, and a loopback connection must name a loopback Host (DNS rebinding; cors.go).
// Request fields of the wrong type are a 400 naming the field by its JSON path
// (llama-server's json_value silently takes the default for some), malformed JSON and numbers past any
// range a 400 (llama-server's json::parse throws: a 500). /completion refuses the fields bankml does not
// reproduce (timings_per_token, return_progress, n_indent, t_max_predict_ms, n_cache_reuse, lora,
// speculative.*) and answers one prompt per request. Token ids outside the vocabulary are a 400 (llama-server reads out
// of bounds). Bodies over Options.MaxBodyBytes are a 413 and a full queue a 429 (llama-server has neither:
// it defers without bound). Sampler settings bankml does not reproduce exactly (mirostat, ...) are a 400
// naming the parameter (sample.Params.Check), never approximated; a grammar that does not parse is a 400
// naming "grammar". Constraints fail closed (constraints.go):
// where llama-server would loosen or drop one (a pattern its schema converter skips with a warning, a grammar
// next to a json_schema, response_format or tools, grammar_lazy or grammar_triggers on a chat route (the
// template's replace them there), a lazy grammar without triggers, response_format or tools on a completion
// route, tools for a template that renders no tool calls, a value of the wrong type read as the default)
// bankml answers a 400 naming the problem, never an unconstrained 200; a named tool_choice is honoured (only
// that function, required) where llama-server treats it as auto. The model is loaded before
// the port opens, so there is no loading state.
//
// Constraints and parsed answers (constraints.go). The chat routes take llama-server's request surface as
// common/chat.cpp reads it: response_format (json_object, json_schema with its schema, the bare schema form),
// json_schema, grammar, grammar_lazy with grammar_triggers, preserved_tokens, tools, tool_choice,
// parallel_tool_calls, reasoning_format, chat_template_kwargs, the reasoning budget's fields (reasoningBudget:
// package sample's reasoning budget sampler, which also keeps a lazy grammar asleep inside a think block);
// package chat renders the prompt and makes the
// grammar, triggers, preserved tokens and the answer's parser (the port of llama.cpp's autoparser), which
// travel to the sampler in sample.Params. Every chat answer is parsed by that parser as llama-server parses
// it (common_chat_parse): content, reasoning_content and tool_calls (ids as llama-server makes them),
// finish_reason "tool_calls" for an answer that ended with calls, and, streamed, the parse of every prefix
// sent as OpenAI's delta chunks (answerState). The receipt hashes the message content, or the message's JSON
// when it has reasoning or tool calls (receiptAnswer). The Ollama routes map format, tools and think onto the
// same path.
//
// Determinism. An answer is a pure function of the request and the model (package engine's contract: a
// reused prefix gives the same logits as a re-evaluated one), so under load every answer equals its
// single-request answer; only the receipt's times and the ledger's timestamps depend on the clock.
//
// # For route writers (ollama*.go)
//
// The Ollama routes are mounted by mountOllama (ollama.go) on the same router, behind the same middleware
// (request counting, the API key). The shared pieces, all on *Server:
//
//   - s.begin(w, r, writeErr) *exchange: reads the body (413 over the limit) and re-checks the model file
//     (503); nil means it has answered with writeErr (nil: writeError) and the route returns. It stamps the
//     arrival time the receipt measures from.
//   - x.tokenSeen(time.Now()): call for every token released to the client (sets ttft_ms).
//   - s.finish(x, usageOf(res), answer) (Receipt, error): re-checks the model file (503), builds the
//     receipt for the answer text exactly as the client receives it (Ollama routes: clientText, Go's
//     encoding/json's U+FFFD per invalid byte; llama-server's routes: jsonText/chatText, utf8.go), counts the answer in the metrics, and appends the exchange to the ledger (the receipt then
//     carries ledger_index); on an error no receipt may be sent (answer the error instead).
//   - s.recheck() error: the model re-check alone (begin and finish call it).
//   - s.generationError(err) *APIError: maps package engine's errors: ErrQueueFull → 429, a
//     *engine.ContextError → 400 exceed_context_size_error, a *sample.ParamError → 400 naming the
//     parameter, cancellation → 503, anything else → 500 (params.go).
//   - s.eng (*engine.Engine), s.base (the sampling defaults: sample.DefaultParams with the model's
//     general.sampling.* applied), s.decodeSampling(body, nProbs) (llama-server's sampling fields),
//     paramError(err), s.render(body) (chat.ParseRequest + Template.Apply, 400 on the request's faults).
//   - writeError(w, err), writeJSON(w, status, v), *APIError (Status, Type, Message; HTTPStatus()),
//     badRequest, decodeJSON(body, v): the error bodies and request decoding.
//   - s.metrics.refusedFor(reason) (requests_processing and requests_deferred are read from the engine's
//     busy slots and queue at each scrape).
//   - s.m (*Model: Name, Path, SHA256, Identity, Pin, Guard, File, Tokenizer, Template, Model), s.opt
//     (Options), s.nCtx(), s.started, s.fingerprint().
package serve
