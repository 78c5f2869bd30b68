// Package fmath holds the scalar float32 arithmetic the reference computes with,
// reproduced bit for bit in portable Go.
//
// Design record
//
//   - What: FMA32 (a fused multiply-add rounded once to float32, what the
//     reference's compiler emits as vfmadd*ss where it contracts a*b+c), and the
//     glibc libm functions ggml calls: Expf, Sinf, Cosf, Powf.
//   - Follows: the x86-64 FMA build of glibc's expf (ARM optimized-routines
//     algorithm: 32-entry 2^(i/32) table, degree-3 polynomial evaluated in
//     double with fused multiply-adds). Sinf, Cosf and Powf are computed in
//     float64 and rounded once; this equals glibc's correctly rounded results on
//     the domains oracle-tested (the RoPE angle grid of the models under test).
//   - Deliberate differences: no errno, no floating-point exception flags.
//   - Determinism: pure functions of their arguments; no state, no tables
//     mutated after package initialisation.
package fmath
