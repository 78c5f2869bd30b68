// Package fmath is the scalar float arithmetic the reference computes with, bit for bit in portable Go: a fused
// multiply-add rounded once to float32, and the glibc libm functions that ggml and llama.cpp's samplers call.
//
// # Design record
//
// What. [FMA32] is a*b+c rounded once to float32, what the reference's compiler emits (vfmadd*ss) where it
// contracts; Go's float32(math.FMA(...)) would round twice. [Expf] (softmax, flash attention), [Sinf], [Cosf] and
// [Sincosf] (RoPE), [Logf] and [Powf] (samplers, the RoPE theta scale), [Pow] (the DRY sampler's std::pow), [Log]
// and [Exp] (llama-perplexity's log-softmax and perplexity) are glibc's; [Tanhf] and [Expm1f] (training's
// activations) are glibc's generic fdlibm s_tanhf.c and s_expm1f.c (no FMA variant), every operation rounded to
// float32.
//
// Follows. The x86-64 FMA builds of glibc 2.36's expf, sinf, cosf, sincosf, logf, powf, pow, log and exp (the
// variants glibc's ifuncs select on AVX2+FMA CPUs, as in Debian's libm.so.6), all ARM optimized-routines'
// algorithms: each function's documentation names its reduction, tables and polynomial. Every multiply-add the
// compiler contracted, read from the disassembly of libm.so.6, is one math.FMA here and every other operation
// rounds where the binary rounds. Tables that follow from a rule (2^(i/N), the bits of 2/π, pow's log table) are
// derived with math/big and checked against libm's .rodata; tables glibc found by a search (logf's, log's, powf's
// log2 column) are read from .rodata; polynomial coefficients are glibc's, checked against .rodata. Neither pow nor
// log is correctly rounded, so only a port reproduces them (Go's math.Pow and math.Log differ in the last bit).
//
// Deliberate differences. No errno and no floating-point exception flags. NaN results carry the bits x86 gives
// (the default NaN 0xffc00000 for an invalid operation, a quieted NaN for a NaN argument).
//
// Determinism. Pure functions of their arguments; no state, no table mutated after package initialisation. The
// tests compare each function with this machine's libm bit for bit over strided sweeps of argument bit patterns
// and the special values.
package fmath
