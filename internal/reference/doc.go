// Package reference records answers from the reference implementation, the
// oracle that bankml is tested against (DESIGN.md §2): llama.cpp v0.5.0 as
// compiled in the npm package @node-llama-cpp/linux-x64@3.22.1 (JS wrapper
// node-llama-cpp@3.22.1). It is test support; the one product import is
// `bankml bench kernels` (cmd/bankml/bench.go), which times the reference's
// exported kernels next to bankml's in one process (DESIGN.md §7).
//
// # How answers are recorded
//
// The package calls the prebuilt shared libraries of that npm package
// directly, through github.com/ebitengine/purego (dlopen/dlsym plus a C-ABI
// call trampoline written in Go assembly). There is no cgo: the package and
// its tests build and run with CGO_ENABLED=0. Structs that llama.h passes or
// returns by value (llama_model_params, llama_context_params, llama_batch)
// are mirrored field by field in abi.go; purego passes them on linux/amd64
// following the System V ABI (these are all larger than 16 bytes, so they go
// through memory: copied to the stack as arguments, returned through a hidden
// pointer). Node.js is not involved at run time.
//
// The libraries are installed by scripts/install-reference.sh into
// .reference/ at the repository root; [Dir] finds them (or
// $BANKML_REFERENCE_DIR). Only linux/amd64 is supported.
//
// # Choosing the CPU variant
//
// The default target is the haswell variant of ggml's CPU backend (AVX2 +
// FMA); [EnvVariant] (BANKML_REFERENCE_VARIANT) names another, or "auto" for
// the one ggml itself would load here ([AutoVariant], the scorer of package
// internal/cpuvariant). One variant per process: tests that compare several
// run a child process per variant. ggml_backend_load_all, and
// llama_backend_init when no backend is registered yet, would score every
// libggml-cpu-*.so and load the best one for the host (zen4 or skylakex on
// AVX-512 machines). [Load] therefore (haswell standing for the chosen
// variant, whose reported features are checked instead of step 3's list):
//
//  1. dlopens libggml-base.so and then libggml.v0.5.0.so (RTLD_GLOBAL), and
//     routes ggml's log to this package;
//  2. checks that the backend registry is empty, then calls
//     ggml_backend_load with the explicit path of libggml-cpu-haswell.so
//     (never ggml_backend_load_all);
//  3. verifies through the registry that exactly one backend is registered,
//     that it is the one ggml_backend_load returned, that it is named "CPU",
//     that it is the very object returned by ggml_backend_cpu_reg as resolved
//     by dlsym in the haswell library's own handle, that the address of that
//     object lies in the mapping of libggml-cpu-haswell.so in
//     /proc/self/maps, that no other libggml-cpu-*.so is mapped, and that
//     the backend's compile-time features (ggml_backend_get_features) report
//     AVX2 and FMA and no AVX512;
//  4. dlopens libllama.v0.5.0.so (which resolves libggml by its already
//     loaded soname, hence shares the same registry) and calls
//     llama_backend_init, which only calls ggml_backend_load_all when the
//     registry is empty, so it does not here; the registry is checked again
//     afterwards and before every model load.
//
// # What is recorded
//
// [Model] answers one-shot questions in fresh contexts (greedy runs with
// timings, last-prompt logits, [Model.Trace] and [Model.TraceOutputs] of
// named graph tensors through the scheduler's eval callback). A [Session]
// keeps one llama_context across calls, as a llama-server slot keeps its KV
// cache between turns: decodes with the last or every position as an output,
// greedy generation that can stop at end-of-generation tokens, and
// [Session.Truncate] (llama_memory_seq_rm) for prefix reuse.
//
// # Logging
//
// llama.cpp and ggml log to stderr by default. The package installs a log
// callback (llama_log_set, which also sets ggml's) that drops the messages
// and keeps the last ones in memory, so errors can quote them. Set
// BANKML_REFERENCE_LOG=1 to copy everything to stderr instead.
//
// # The chat-template oracle
//
// llama-server's chat path (common_chat_templates_init and common_chat_templates_apply in libllama-common.so)
// takes and returns C++ objects, which purego cannot build. [StartChatShim] therefore compiles a small C++
// program (chatshim.cpp.in, bankml's code) with g++ against libllama-common.so and the headers of a sparse clone
// of the reference's own source bundle, and talks to it in JSON lines: [ChatShim.Apply] renders a request as
// llama-server does, [ChatShim.Render] runs a template alone through common_chat_template_direct_apply, and
// [ChatShim.RenderMarked] runs it through the Jinja runtime with input marking.
package reference
