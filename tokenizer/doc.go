// Package tokenizer turns text into token ids and back as the reference (llama.cpp v0.5.0) does for the
// vocabulary stored in a GGUF file: SentencePiece, byte-level BPE and WordPiece.
//
// # Design record
//
// What. The three kinds llama.cpp builds from tokenizer.ggml.model — "llama" (*SPM), "gpt2" (*BPE, with the
// pre-tokenizer tokenizer.ggml.pre names) and "bert" (*WPM) — built by FromGGUF (or New / NewSPM / NewBPE /
// NewWPM from a Vocab), each with Tokenize, TokenToPiece, Detokenize, the special-token accessors and a
// streaming Decoder. Other models and the pre-tokenizers that change more than the split are refused by name;
// an unknown pre-tokenizer as llama.cpp refuses it.
//
// Follows. src/llama-vocab.cpp (load's defaults and attribute rules, tokenize with tokenizer_st_partition, the
// SPM/BPE/WPM sessions, token_to_piece, detokenize) and src/unicode.cpp (unicode_regex_split with its
// hand-written splitters in pretok_custom.go, std::regex through internal/stdregex, UTF-8 decoding, GPT-2's
// byte alphabet); the Unicode data is the reference's src/unicode-data.cpp (internal/ucd); every
// pre-tokenizer's regular expressions are llama.cpp's, character for character (pretok_table.go). Where the
// result depends on libstdc++ internals they are reproduced (priority_queue ties, std::sort of special tokens,
// the unordered_map order that picks EOT/EOM/FIM). Oracle tests: llama.cpp's own test vectors, a 2,000-string
// fuzz corpus in every mode, every piece and every pre-tokenizer's split against the reference.
//
// Deliberate differences, all where the reference aborts, throws or reads out of bounds: a vocabulary it cannot
// load is an error from New*; an SPM character with no token becomes the unknown token; a 4-byte UTF-8
// sequence above U+10FFFF reads as U+FFFD in BPE and WPM (the reference ends the process); ids out of range give
// empty pieces.
//
// Determinism. Every result is a pure function of the vocabulary and the input; nothing depends on Go map
// order; a tokenizer is immutable and safe for concurrent use, a Decoder is per stream. The full record:
// docs/design.md, "Package tokenizer".
package tokenizer
