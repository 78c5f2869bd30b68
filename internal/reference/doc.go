// Package reference records answers from the reference, the oracle bankml is tested against: llama.cpp v0.5.0 as
// compiled in the npm package @node-llama-cpp/linux-x64@3.22.1, its libraries called in-process with purego.
//
// # Design record
//
// What. [Load] loads libggml-base, libggml, one CPU backend (haswell, or the variant [EnvVariant] names; "auto"
// is ggml's own pick, [AutoVariant]) and libllama from [Dir] (.reference/, installed by
// scripts/install-reference.sh, or $BANKML_REFERENCE_DIR), and verifies that the variant asked for is the one
// loaded (see Load). [Model] answers one-shot questions in fresh contexts (greedy runs with timings, last-prompt
// logits, [Model.Trace] of named graph tensors); a [Session] keeps one llama_context across calls as a
// llama-server slot does ([Session.Truncate] for prefix reuse); the kernels, sampler chains and grammar
// samplers are bound one by one; [StartChatShim] runs llama-server's chat path through a g++-built program
// ([ChatShim]). It is test support; the one product import is `bankml bench` (cmd/bankml/bench.go), which
// times the reference's exported kernels next to bankml's in one process.
//
// Follows. llama.h and ggml's headers at the reference's commit: structs passed by value (llama_model_params,
// llama_context_params, llama_batch) are mirrored field by field in abi.go, passed on linux/amd64 by the
// System V ABI through github.com/ebitengine/purego. No cgo (the package builds with CGO_ENABLED=0) and no
// Node.js at run time.
//
// Deliberate differences. Only linux/amd64 is supported; elsewhere [Load] returns an error. One CPU variant
// per process (tests comparing several run a child process each). llama.cpp's log is kept in memory, not
// printed (see [Lib], [EnvLog]).
//
// Determinism. The reference's answers are its own; the package adds no arithmetic. Results that depend on the
// reference's thread count take it as an argument.
package reference
