// Package tokenizer turns text into token ids and back, as the reference llama.cpp
// (v0.5.0, DESIGN.md §2) does for the vocabulary stored in a GGUF file.
//
// # Design record
//
// What: the SentencePiece tokenizer (tokenizer.ggml.model "llama", LLAMA_VOCAB_TYPE_SPM),
// built from GGUF metadata by FromGGUF or from a plain Vocab by NewSPM, with Tokenize,
// TokenToPiece, Detokenize, a streaming Decoder and the accessors the engine needs
// (BOS, EOS, EOT, IsEOG, ...). Other tokenizer models are refused with an error naming
// them until they are written.
//
// Source followed: llama.cpp src/llama-vocab.cpp — llama_vocab::impl::load (defaults,
// keys, attribute rules, the EOG set, the special-token cache), llama_vocab::impl::tokenize
// and tokenizer_st_partition (special tokens split out longest first; user-defined tokens
// always, control and unknown ones only with parse_special; lstrip/rstrip; a space prefix
// before the text and after every special token), llm_tokenizer_spm_session (one symbol per
// UTF-8 character, merges of the best-scoring adjacent pair that forms a token, byte
// fallback to <0xNN>), token_to_piece and detokenize. The code is written from the
// behaviour, not translated line by line; where llama.cpp's result depends on libstdc++
// internals, those are reproduced: std::priority_queue's heap order for merge ties (score,
// then leftmost), std::sort's order for special tokens of equal length, and the iteration
// order of the std::unordered_map token_to_id, which decides the EOT / EOM / FIM token when
// several candidate texts exist (Phi-3's "<|end|>" over "<|endoftext|>").
//
// Proof: llama.cpp's own test vectors (46 of 46 for the Llama-2 and Phi-3 vocabularies), an
// oracle test against the compiled reference on real models (Tokenize over generated text
// in every addSpecial / parseSpecial mode, TokenToPiece for every id), and unit tests of
// each rule.
//
// Deliberate differences, all where the reference would abort, throw or read out of
// bounds: a vocabulary it cannot load (duplicate texts, a malformed byte token, a Phi-3
// name without the tokens its rule needs) or one asking for a BOS/EOS it lacks is an error
// from NewSPM; a character with neither a token nor a byte token becomes the unknown token
// instead of an exception; ids out of range give empty pieces. As in the reference, a GGUF
// key of the wrong type is an error, a special-token id out of range keeps the default, and
// GGUF strings end at their first NUL byte.
//
// Determinism: every result is a pure function of the vocabulary and the input; nothing
// depends on Go map iteration order, and an SPM is immutable and safe for concurrent use.
// A Decoder is per stream.
package tokenizer
