// Package gguf reads GGUF v2 and v3 model files (metadata, tensor infos, zero-copy tensor views over a read-only
// memory map) and writes GGUF v3 files as a stream.
//
// # Design record
//
// What it does. [Open] maps a whole file read-only (syscall.Mmap on Linux; other systems read the file into
// memory) and hands the bytes to [Parse], which decodes the header in one forward pass and validates everything
// it will later hand out: every count and length against the bytes that remain, every tensor's type, shape, byte
// size, alignment and position in the data section. [File.TensorData] returns sub-slices of the mapping without
// copying. Metadata is copied out of the mapping, so it stays valid after [File.Close]; tensor views do not.
// [Writer] writes a file as a stream (its documentation holds its own design record), with metadata values built
// by constructors such as [StringValue], [Uint32Value] and [StringArray].
//
// What it follows. The layout and acceptance rules of ggml/src/gguf.cpp (gguf_init_from_reader) of llama.cpp
// v0.5.0, the reference, and the GGUF specification (ggml/docs/gguf.md); type ids, block sizes and block byte
// sizes of ggml/include/ggml.h and the type_traits table of ggml/src/ggml.c at that version. [Parse] lists the
// rules one by one.
//
// Deliberate differences (detailed at [Parse]). Arrays of arrays are accepted (the specification allows them), a
// zero dimension and an empty tensor name are refused, every tensor must lie inside the file, and a count is
// checked against the bytes that remain before anything is allocated for it, so a lying header fails with
// [ErrTruncated]. Parse never panics on any input (FuzzParse). Errors name the problem and where it is, e.g.
// `gguf: tensor "output.weight": tensor past the end of the data: ...`, and wrap an exported sentinel error.
//
// Determinism. Parse is a pure function of its input bytes: the same bytes give the same [File], with KVs and
// tensors in file order, and the same error text. Nothing depends on map iteration order, time or the host,
// except that a file larger than the address space cannot be mapped.
package gguf
