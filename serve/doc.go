// Package serve is bankml's HTTP server over one admitted model and package engine's slots: the OpenAI API,
// llama-server's own routes, embeddings and reranking, the Ollama API, the history, the log and the console.
//
// # Design record
//
// What. New builds a Server over a model admitted by package admit (a refused model never listens); Handler is
// its chi router; Serve answers until its context is cancelled, then shuts down gracefully. Routes: /v1/chat/
// completions, /v1/completions, /v1/models; /completion, /health, /props, /tokenize, /detokenize,
// /apply-template, /metrics (native.go, extras.go); embeddings and rerank (embeddings.go); /api/* (ollama*.go);
// /bankml/ledger/... (ledger.go); /console. Every request gets one log line, never its content (reqlog.go:
// LogRequests, shared with the store server). Every answer carries a Receipt (receipt.go) and is preceded by a
// re-check of the model file (identity.go: a changed file is hashed again, answers held as 503 meanwhile); with
// a ledger it is appended to the history first, with Options.TLog its commitment is in the log, with
// Options.Signer the receipt is signed (docs/receipts.md). Chat answers are constrained and parsed as
// llama-server's are (constraints.go, package chat).
//
// Follows. llama-server (tools/server at the reference's commit): routes, request fields and defaults
// (server-schema.cpp), error bodies (format_error_response), SSE framing, the API-key middleware, 404 for
// unknown paths and wrong methods alike, "Field 'name': ..." wording, /metrics names; OpenAI's shapes as
// llama-server produces them, text that is not UTF-8 as its JSON carries it (utf8.go). The Ollama routes follow
// Ollama's (ollama_api.go). A stored model's Modelfile settings (Options.Defaults) apply to the Ollama routes and,
// as Ollama's openai middleware hands them to the same handlers, to /v1/chat/completions and /v1/completions
// beneath the request's fields (modeldefaults.go); llama-server's own routes answer without them.
//
// Deliberate differences. Cross-origin reads follow Ollama (loopback and app origins only, DNS rebinding
// refused; cors.go). Wrong types, malformed JSON, out-of-range numbers, ids outside the vocabulary and an empty
// chat messages array (OpenAI's rule; llama-server generates from it) are a 400 naming the field; a body over the limit a 413, a full queue a 429. Fields and samplers bankml does not
// reproduce exactly are refused by name, never approximated. Constraints fail closed: where llama-server would
// loosen or drop one, a 400 names the problem; a named tool_choice is honoured. No loading state.
//
// Determinism. An answer is a pure function of the request and the model (package engine's contract), so under
// load every answer equals its single-request answer; only the receipt's times and the ledger's timestamps
// depend on the clock. Full record: docs/serve.md; a route writer's shared pieces: mountOllama.
package serve
