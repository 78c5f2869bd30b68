// Package clients holds the end-to-end tests of bankml serve with the
// clients people point at it; it has no code of its own.
//
// # Design record
//
// What. Ollama's Go client (github.com/ollama/ollama/api: Client.Chat and
// Client.Generate, streamed and not) against serve.Server on stories260K and
// a synthetic qwen3 model with the real Qwen3 vocabulary; the official
// `openai` npm client (chat and completions, streamed and not) from a Node
// script against a `bankml serve` binary the test builds; the official
// `ollama` npm client (ollama-js) for names and error shapes; a load test: a
// bounded loop of 200 requests, 8 at a time, from the test process against
// `bankml serve --parallel 2 --history DIR` (a second process, on
// loopback), and a kill -9 of a server in the middle of its appends.
//
// Follows. The oracle is the reference: every answer's tokens are the ones
// internal/reftest.Generate gets from libllama for the same prompt tokens and sampling
// parameters (llama-server's per-request loop), its text their pieces.
//
// Deliberate differences. None: these tests only drive clients.
//
// Determinism. Seeds are fixed, so every expected answer is the
// reference's for that seed; under load, every answer must equal its
// single-request answer.
package clients
