// Package fmath holds the scalar float32 arithmetic the reference computes with,
// reproduced bit for bit in portable Go.
//
// Design record
//
//   - What: FMA32 (a fused multiply-add rounded once to float32, what the
//     reference's compiler emits as vfmadd*ss where it contracts a*b+c), and the
//     glibc libm functions ggml and libllama call: Expf, Sinf, Cosf, Sincosf,
//     Powf, Logf.
//   - Follows: the x86-64 FMA builds of glibc 2.36's expf, sinf, cosf and
//     sincosf (the variants glibc's ifuncs select on AVX2+FMA CPUs), whose
//     contracted multiply-adds are reproduced with math.FMA as read from the
//     disassembly of libm.so.6. Expf: ARM optimized-routines algorithm,
//     32-entry 2^(i/32) table, degree-3 polynomial in double. Sinf, Cosf,
//     Sincosf: ARM optimized-routines algorithm, one-step reduction by π/2
//     below 120, exact reduction with 192 bits of 4/π above, cosine and sine
//     polynomials of degrees 8 and 7 in double. Logf: ARM optimized-routines
//     algorithm, 16-entry (1/c, log c) table, degree-3 polynomial in double,
//     its five multiply-adds fused as __logf_fma is compiled; its table is
//     copied from glibc (compared with the bytes of libm's .rodata when it
//     was ported) and every result on an 8.4-million-point sweep is checked
//     against libm (TestLogfMatchesLibmBitForBit). Other tables are derived with
//     math/big; polynomial coefficients are copied from glibc and checked
//     against libm's .rodata.
//     Powf is computed in float64 and rounded once; this equals glibc's
//     correctly rounded results on the domain oracle-tested (the RoPE theta
//     scales of the models under test).
//   - Deliberate differences: no errno, no floating-point exception flags.
//     Sinf, Cosf and Sincosf return glibc's NaN bits on x86 (the default NaN
//     0xffc00000 for an infinity, the quieted NaN for a NaN).
//   - Determinism: pure functions of their arguments; no state, no tables
//     mutated after package initialisation.
package fmath
