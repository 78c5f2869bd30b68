// Package synth writes deterministic synthetic GGUF models: random weights with the exact tensor names, shapes,
// types and metadata llama.cpp's loader expects (llama, qwen3, qwen2, gemma3, phi3, bitnet, bert), at any scale.
//
// # Design record
//
// What it does. [Write] plans a model from a [Config] (architecture, a [Shape] such as a [Preset], a weight type
// per tensor class, a [Vocab] and a seed; see [Plan]), writes the GGUF header with gguf.NewWriter, then generates
// each tensor's bytes in chunks of about 1 MiB and streams them to the writer, so memory stays at a few MiB plus
// the vocabulary whatever the model's size (an 8B-shaped file included). For tests and benchmarks: no real
// Bonsai file is available offline.
//
// What it follows. The tensor names and shapes of llama.cpp v0.5.0's loaders (src/models/*.cpp; [ForArch]:
// qwen2's Q/K/V biases, gemma3's post norms and sliding window, phi3's fused attn_qkv and rope factors, bitnet's
// sub-norms and scales, bert's token types, positions and ranking head), the metadata of load_hparams and
// convert_hf_to_gguf.py in the converter's order, and ggml-common.h's block layouts. The real Qwen3 vocabulary
// is converted as get_vocab_base, _set_vocab_gpt2 and gguf-py's SpecialVocab do ([Qwen3Vocab]); any other is
// copied key for key from a GGUF file ([VocabFromGGUF]).
//
// Deliberate differences from a converted model: the weights are noise, so the model's text is noise; block
// payloads are random codes scaled so activations stay of order 1, not quantized weights (the generator type
// says why and how, per type); the Qwen3 bos id is the one Qwen3's config.json gives (151643); normalized=false
// added tokens are not re-encoded through a Hugging Face tokenizer.
//
// Determinism. The output is a pure function of the Config (and of the tokenizer files for the Qwen3 vocabulary):
// each tensor draws from its own ChaCha8 stream keyed by sha256 of the seed and the tensor's name, with no fused
// multiply-add. The same Config gives the same bytes on every run, machine, architecture and Go version, and a
// tensor's bytes do not depend on the other tensors.
package synth
