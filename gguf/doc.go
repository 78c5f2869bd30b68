// Package gguf reads GGUF v2 and v3 model files: metadata key/value pairs, tensor infos and zero-copy views of
// tensor data over a read-only memory map. It also writes GGUF v3 files as a stream ([Writer], whose documentation
// holds its design record), with metadata values built by constructors such as [StringValue], [Uint32Value] and
// [StringArray].
//
// # Design record
//
// What it does. [Open] maps a whole file read-only (syscall.Mmap on Linux; other systems read the file into
// memory) and hands the bytes to [Parse], which decodes the header in one forward pass and validates everything
// it will later hand out: every count and length against the bytes that remain, every tensor's type, shape,
// byte size, alignment and position in the data section. [File.TensorData] then returns sub-slices of the
// mapping without copying. Metadata is copied out of the mapping (strings and array payloads), so it stays
// valid after [File.Close]; tensor views do not.
//
// What it follows. The file layout and the acceptance rules of ggml/src/gguf.cpp (gguf_init_from_reader) of
// llama.cpp v0.5.0, the build named "the reference" in DESIGN.md, and the GGUF specification
// (ggml/docs/gguf.md). Type ids, block sizes and block byte sizes are those of ggml/include/ggml.h and the
// type_traits table of ggml/src/ggml.c at that version. Like the reference it:
//   - accepts versions 2 and 3 only, and names a byte-swapped (big-endian) version as such;
//   - requires "general.alignment", when present, to be of type u32 and a nonzero power of two (default 32);
//   - rejects empty and duplicate keys, duplicate tensor names, tensor names of 64 bytes or more, more than 4
//     dimensions, element counts and byte sizes that overflow, unknown and removed ggml types, and rows whose
//     length is not a multiple of the type's block size;
//   - requires tensor data to be packed in file order: each offset is the previous offset plus the previous
//     size padded to the alignment (the first is 0), which also makes every offset a multiple of the alignment;
//   - pads the end of the header to the alignment to find the data section only when there are tensors;
//   - reads a bool as true for any nonzero byte;
//   - caps a string at 1 GiB and an array at 2^30 elements.
//
// Deliberate differences from the reference:
//   - Arrays of arrays are accepted (the specification allows them; the reference rejects them), nested at most
//     64 deep.
//   - A dimension of zero is rejected (the reference accepts zero-element tensors), and so is an empty tensor name.
//   - Every tensor must lie inside the file (the reference's gguf reader leaves that to the model loader).
//   - Before anything is allocated for a count, the count is checked against the bytes that remain (each element
//     needs a known minimum number of bytes), so a lying header fails with [ErrTruncated] instead of allocating.
//     Parse never panics on any input (FuzzParse).
//
// Determinism. Parse is a pure function of its input bytes: the same bytes give the same [File], with KVs and
// tensors in file order, and the same error text. Nothing depends on map iteration order, time or the host,
// except that a file larger than the address space cannot be mapped.
//
// Errors name the problem and where it is, e.g. `gguf: tensor "output.weight": tensor past the end of the data:
// ...`, and wrap one of the exported sentinel errors, for use with errors.Is.
package gguf
