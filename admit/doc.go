// Package admit is bankml's one front door: Open admits a model file once — header guard, architecture,
// sha256 pin, load, tokenizer, chat template — and returns what every command runs it with.
//
// # Design record
//
// What. [Open] runs the gates in this order, each refusing before the next reads more of the file: the
// header guard for mainline llama.cpp (guard.FileForBankml: a file mainline refuses only for its PTQTP
// trit-planes is judged again for engine bankml, whose loader sums the planes, and admitted with
// [Model.MainlineRefusal] saying so); the file's identity (device, inode, size, mtime: [FileIdentity]); the
// architecture registry (model.CheckArchitecture, from the header, before the whole file is hashed); the KV
// cache types the caller will run (model.CheckFileCacheTypes, from the header, when [Options.CacheTypes] is
// set); the sha256 pin (provenance.Pin) under the caller's [PinPolicy]; the identity again, so that a file changed
// while it was hashed is refused; the load (model.LoadBackground); the tokenizer and its vocabulary size
// against token_embd's rows; the model's suppressed tokens (sample.SuppressTokens); the chat template
// (chat.FromGGUF) when [Options.Chat] asks for it.
//
// Errors. Every error is an [*Error]: Refused (errors.Is(err, [ErrRefused])) when the file must not run —
// bankml's commands exit 2 on it and serve refuses before its port opens — and an I/O error otherwise, or an
// [Options.Manifest] starting "sha256:" that is no digest (provenance.ErrBadDigest, a usage error) (exit 1). Messages name the file or the gate; the caller prefixes its command's name.
//
// Follows. llama.cpp loads a model with llama_model_load_from_file and refuses what it cannot load; the
// guard's rules are its loader's (package guard). The pin, the identity and the template rule are bankml's
// own: a model that cannot be verified does not answer.
//
// Determinism. Open reads the file and nothing else; the same bytes admit the same way on any machine.
package admit
