// Package fmath holds the scalar float32 arithmetic the reference computes with,
// reproduced bit for bit in portable Go.
//
// Design record
//
//   - What: FMA32 (a fused multiply-add rounded once to float32, what the
//     reference's compiler emits as vfmadd*ss where it contracts a*b+c), and the
//     glibc libm functions ggml and llama.cpp's samplers call: Expf, Sinf, Cosf,
//     Sincosf, Logf, Powf, (double) Pow, Log and Exp (llama-perplexity's
//     log-softmax).
//   - Follows: the x86-64 FMA builds of glibc 2.36's expf, sinf, cosf,
//     sincosf, logf, powf, pow and log (the variants glibc's ifuncs select on
//     AVX2+FMA CPUs), whose contracted multiply-adds are reproduced with
//     math.FMA as read from the disassembly of libm.so.6. Expf: ARM
//     optimized-routines algorithm, 32-entry 2^(i/32) table, degree-3
//     polynomial in double. Sinf, Cosf, Sincosf: ARM optimized-routines
//     algorithm, one-step reduction by π/2 below 120, exact reduction with 192
//     bits of 4/π above, cosine and sine polynomials of degrees 8 and 7 in
//     double. Logf and Powf: 16-entry log tables (read from libm's .rodata:
//     their entries come from a search, not a formula), Powf's exp2 sharing
//     Expf's table. Pow: double-double log from a 128-entry table and exp
//     from a 128-entry table, both derived here with math/big from the rules
//     glibc's data files state. Tanhf and Expm1f: glibc's generic fdlibm
//     s_tanhf.c and s_expm1f.c (no FMA variant; read from libm's disassembly),
//     every operation rounded to float32. Other tables are derived with math/big;
//     polynomial coefficients are copied from glibc and checked against
//     libm's .rodata. glibc's pow is not correctly rounded (about one result
//     in a thousand differs from the correctly rounded power on the DRY
//     sampler's domain), so only a port reproduces it. Log: 128-entry table
//     (read from libm's .rodata) and a separate polynomial near 1; Go's
//     math.Log differs from glibc's log on about 2% of arguments.
//     Exp: pow's exp_inline without the tail (glibc's exp and pow share
//     __exp_data).
//   - Deliberate differences: no errno, no floating-point exception flags.
//     Sinf, Cosf and Sincosf return glibc's NaN bits on x86 (the default NaN
//     0xffc00000 for an infinity, the quieted NaN for a NaN).
//   - Determinism: pure functions of their arguments; no state, no tables
//     mutated after package initialisation.
package fmath
