package fmath

import "math"

// Exp returns e^x exactly as the x86-64 FMA build of glibc 2.36's exp does
// (__exp_fma; llama-perplexity's exp of the mean negative log-likelihood). It
// is pow's exp_inline without the tail (both are ARM optimized-routines'
// algorithm over the same __exp_data: a 128-entry table of 2^(i/128) and a
// degree-5 polynomial), checked bit for bit by TestExpMatchesLibm.
//
// Special cases: Exp(NaN) = NaN, Exp(+Inf) = +Inf, Exp(-Inf) = 0; results
// overflow to +Inf and underflow through the subnormals to 0 as glibc's do.
func Exp(x float64) float64 {
	switch {
	case x != x:
		return x + 1
	case math.IsInf(x, 1):
		return x
	case math.IsInf(x, -1):
		return 0
	}
	return powExp(x, 0, 0)
}
