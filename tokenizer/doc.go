// Package tokenizer turns text into token ids and back, as the reference llama.cpp
// (v0.5.0, DESIGN.md §2) does for the vocabulary stored in a GGUF file.
//
// # Design record
//
// What: the three tokenizer kinds llama.cpp builds from tokenizer.ggml.model — SentencePiece
// ("llama", *SPM), byte-level BPE ("gpt2", *BPE) with llama.cpp's pre-tokenizers chosen by
// tokenizer.ggml.pre, and WordPiece ("bert", *WPM) — built from GGUF metadata by FromGGUF
// (or from a plain Vocab by New / NewSPM / NewBPE / NewWPM), each with Tokenize, TokenToPiece,
// Detokenize, the accessors the engine needs (BOS, EOS, EOT, IsEOG, ...), and a streaming
// Decoder. Other models (t5, rwkv, plamo2, gemma4, ...) and the BPE pre-tokenizers that change
// more than the split (gemma4, granite-embed-multi-311m, sarvam-moe, whitespace) are refused with an error naming them;
// an unknown tokenizer.ggml.pre is refused as llama.cpp refuses it ("unknown pre-tokenizer
// type").
//
// Source followed: llama.cpp src/llama-vocab.cpp — llama_vocab::impl::load (defaults per
// model and per pre-tokenizer name: add_bos, ignore_merges, clean_spaces; keys; attribute
// rules; the EOG set; the special-token and piece caches), tokenize and
// tokenizer_st_partition (special tokens split out longest first; user-defined tokens always,
// control and unknown ones only with parse_special; lstrip/rstrip), the SPM, BPE and WPM
// sessions, token_to_piece and detokenize (with clean_spaces' three passes); and
// src/unicode.cpp — unicode_regex_split with its hand-written splitters (gpt2, llama3, qwen2,
// qwen35, kimi-k2, afmoe, newlines; pretok_custom.go, ported test for test), its collapsed
// text for \p{...} classes and std::regex / std::wregex for the other expressions (package
// internal/stdregex reproduces libstdc++'s ECMAScript matching), UTF-8 decoding
// (invalid bytes become U+FFFD one at a time; overlong forms decode) and GPT-2's byte alphabet.
// The Unicode data (flags, lower case, NFD) is generated from the reference's own
// src/unicode-data.cpp into internal/ucd. The regular expressions of every pre-tokenizer are
// llama.cpp's, character for character (pretok_table.go). The code is written from the
// behaviour, not translated line by line; where llama.cpp's result depends on libstdc++
// internals, those are reproduced: std::priority_queue's heap order for SPM merge ties,
// std::sort's order for special tokens of equal length, the iteration order of the
// std::unordered_map token_to_id (which decides the EOT / EOM / FIM token when several
// candidate texts exist), and std::regex's matching.
//
// Proof (oracle tests, counts printed with go test -v): llama.cpp's own test vectors, 46 of
// 46 for every vocabulary GGUF kept in ../shared/models/vocab (SPM, BPE and WPM); the qwen2
// vectors on a synthetic Qwen3 model with the real Qwen3 vocabulary, tokenized by both bankml
// and the reference; a 2,000-string fuzz corpus from 23 classes of text (scripts, emoji with
// joiners and skin tones, combining marks, mathematical alphanumerics, every white space,
// digits of several scripts, template markers, invalid UTF-8) on every vocabulary in every
// add_special / parse_special mode, with Detokenize in every mode; every token's piece
// (special on and off), attributes and EOG flag; the split of every pre-tokenizer against the
// reference's unicode_regex_split; every accepted pre-tokenizer name on a synthetic vocabulary.
//
// Deliberate differences, all where the reference would abort, throw or read out of
// bounds: a vocabulary it cannot load (duplicate texts, a malformed byte token, a Phi-3
// name without the tokens its rule needs, a byte token in a WordPiece vocabulary) or one
// asking for a BOS/EOS it lacks (for WordPiece: without BOS or SEP) is an error from New*;
// an SPM character with neither a token nor a byte token becomes the unknown token instead of
// an exception; a 4-byte UTF-8 sequence above U+10FFFF (lead bytes F4 90 to F7), on which
// the reference's BPE and WPM throw out of llama_tokenize (std::invalid_argument "invalid
// codepoint", which ends the process), reads as U+FFFD; ids out of range give empty pieces. As in the reference, a GGUF key of the wrong type is an error, a
// special-token id out of range keeps the default, GGUF strings end at their first NUL byte,
// and a BPE symbol that is no token and has no single-byte tokens is dropped.
//
// Determinism: every result is a pure function of the vocabulary and the input; nothing
// depends on Go map iteration order, and a tokenizer is immutable and safe for concurrent
// use. A Decoder is per stream.
package tokenizer
