// Package synth writes deterministic synthetic GGUF models: random weights with the exact tensor names, shapes,
// types and metadata that llama.cpp's loader expects for the llama, qwen3, qwen2, gemma3, phi3, bitnet and bert
// architectures, for tests and benchmarks at any scale (no real Bonsai file is available offline).
//
// # Design record
//
// What it does. [Write] plans a model from a [Config] (architecture, a [Shape] such as a [Preset], a weight type
// per tensor class, a [Vocab] and a seed), writes the GGUF header with gguf.NewWriter, then generates each
// tensor's bytes in chunks of about 1 MiB and streams them to the writer, so memory stays at a few MiB plus the
// vocabulary whatever the model's size (an 8B-shaped file included).
//
// What it follows. The tensor names and shapes of llama.cpp v0.5.0's loaders (src/models/*.cpp,
// load_arch_tensors; [ForArch] gives each architecture its settings and tensors: qwen2's Q/K/V biases, gemma3's
// post norms and sliding window, phi3's fused attn_qkv and ffn_up of 2*n_ff rows with rope factors, bitnet's
// sub-norms and per-tensor scales, bert's token types, positions, layer norms and biases, a ranking head for
// bert and qwen3). For llama and qwen3: token_embd {n_embd, n_vocab}; per block attn_norm {n_embd}, attn_q
// {n_embd, n_head*head_dim}, attn_k and attn_v {n_embd, n_head_kv*head_dim}, attn_output {n_head*head_dim,
// n_embd}, for qwen3 attn_q_norm and attn_k_norm {head_dim}, ffn_norm {n_embd}, ffn_gate and ffn_up {n_embd,
// n_ff}, ffn_down {n_ff, n_embd}; output_norm {n_embd}; output {n_embd, n_vocab}, absent when the embeddings are
// tied. The metadata keys and value types are those llama_model_base::load_hparams reads and
// convert_hf_to_gguf.py (conversion/qwen.py, gguf-py) writes, in the converter's order. The real Qwen3
// vocabulary is converted as get_vocab_base, _set_vocab_gpt2 and gguf-py's SpecialVocab do it (see [Qwen3Vocab]);
// any other real vocabulary is copied key for key from a GGUF file ([VocabFromGGUF], e.g. llama.cpp's
// models/ggml-vocab-*.gguf). Biases are F32 in [-0.25, 0.25), bitnet's weight scales F32 in [0.75, 1.25), phi3's
// rope factors F32 in [1, 4).
// Block layouts are those of ggml/src/ggml-common.h; the block payloads are random codes generated directly (not
// quantized from floats), with the scale d chosen so that a weight's root mean square is about 1/sqrt(row length):
// with RMS-normed inputs, every matrix product then yields activations of order 1 and logits stay finite through
// any number of layers. Norm weights are F32 in [0.75, 1.25).
//
// Codes per type (d is the block scale, of the super-block for the K-quants, jittered per block by a factor in
// [0.5, 1.5)):
//   - Q1_0: random bits (±d); Q2_0: 2-bit codes for -1, 0, +1, +2 times d with probabilities 4/8, 1/8, 2/8, 1/8,
//     so that the weights have mean 0 (uniform codes would bias every product by d/2); Q4_0: random nibbles;
//     Q8_0: random int8;
//   - TQ2_0: 2-bit codes 0, 1, 2 only (-1, 0, +1); TQ1_0: base-3 packed trits encoded with the reference's
//     ceiling division (quantize_row_tq1_0_ref), so every byte is one the reference's quantizer can produce;
//   - Q2_K, Q4_K, Q5_K: random codes; per 16- or 32-element sub-block a random 4-bit (Q2_K) or 6-bit scale s,
//     stored also as the sub-block's min, with dmin = c*d where c is the mean code (1.5, 7.5, 15.5), so that each
//     sub-block's weights d*s*(q - c) are centred on 0; Q4_K's and Q5_K's scales packed as quantize_row_q4_K_ref
//     packs them;
//   - Q3_K, Q6_K: random bytes (any pattern is valid): signed sub-block scales and codes both uniform, whose
//     means of -0.5 give a weight mean of 0.25*d, negligible against the spread;
//   - F32, F16, BF16: uniform in [-a, a] (F16 and BF16 rounded to nearest even).
//
// Why random codes for the K-quants rather than quantizing random rows with quant's Ref quantizers (which would
// give the blocks a real converter writes): those cost about 30 µs per 256-element super-block, some 15 minutes of
// CPU for an 8B-shaped file (3e7 super-blocks), where random codes cost about as much as the other types'. The random
// blocks are valid ggml blocks that exercise every bit of the scales (6-bit packing, signed scales, subnormal
// f16 d included), which is what tests of the decoders and dot products need; their value statistics differ
// from a quantizer's (uniform codes, not a bell curve), which matters to no test since the weights are noise.
//
// Deliberate differences from a converted model: the weights are noise, so the model's text is noise; the Qwen3
// bos id is the one Qwen3's config.json gives (151643, "<|endoftext|>") even though that file is not read here;
// normalized=false added tokens are not re-encoded through a Hugging Face tokenizer (Qwen3's round-trip unchanged);
// K-quant blocks are random codes, not quantized weights (above).
//
// Determinism. The output is a pure function of the Config (and of the tokenizer files for the Qwen3 vocabulary):
// each tensor draws from its own ChaCha8 stream (math/rand/v2, the C2SP chacha8rand generator, whose output is
// fixed by its specification) keyed by sha256 of the seed and the tensor's name, and turns bytes into values with
// integer operations and single float32/float64 roundings that Go cannot fuse into FMAs. The same Config gives the
// same bytes on every run, machine, architecture and Go version, and a tensor's bytes do not depend on the other
// tensors.
package synth
