package model

import (
	"math"

	"github.com/bankml/bankml/fmath"
)

// Rope holds the parameters of ggml_rope_ext as llama.cpp's graphs pass them,
// derived from the model's metadata the way llama_context's constructor does
// with llama_context_default_params (no rope or YaRN override), plus the
// per-op constants ggml_compute_forward_rope computes from them.
type Rope struct {
	NDims    int  // n_rot
	Neox     bool // LLAMA_ROPE_TYPE_NEOX: rotate (i, i+n/2); else NORM: (2i, 2i+1)
	NCtxOrig int  // n_ctx_orig_yarn

	FreqBase   float32 // rope_freq_base
	FreqScale  float32 // rope_freq_scale: 1/rope.scaling.factor, 1 with scaling type none
	ExtFactor  float32 // yarn_ext_factor: 1 for YaRN, else 0
	AttnFactor float32 // yarn_attn_factor: the magnitude of cos/sin (mscale)
	BetaFast   float32 // yarn_beta_fast (32)
	BetaSlow   float32 // yarn_beta_slow (1)

	ThetaScale float32    // powf(freq_base, -2/n_dims)
	CorrDims   [2]float32 // ggml_rope_yarn_corr_dims: the YaRN ramp's start and end dimension
	mscale     float32    // attn_factor times YaRN's magnitude correction, per op (rope_yarn)
}

// newRope derives RoPE's parameters from hp as llama_context::llama_context
// (src/llama-context.cpp) does with default context parameters, and the
// op's constants as ggml_compute_forward_rope_flt computes them:
//
//   - freq_scale = hp.FreqScaleTrain, or 1 when the scaling type is none;
//   - ext_factor = 1 for YaRN, else 0; attn_factor starts at 1;
//   - with ext_factor != 0 and factor = 1/freq_scale: attn_factor =
//     get_mscale(factor, 1) = (factor > 1 ? 0.1f*logf(factor)+1 : 1), then
//     multiplied by 1/(1+0.1f*logf(factor)) — two roundings that llama.cpp
//     intends to cancel but that need not give exactly 1 — as libllama's
//     compiled code does (mulss/addss, no contraction);
//   - attn_factor *= rope.scaling.attn_factor;
//   - corr_dims: floor and ceil of n_dims*logf(n_ctx_orig/(beta*2*π))/(2*logf(base))
//     for beta_fast and beta_slow, clamped to [0, n_dims-1] (ggml.c);
//   - mscale per op: attn_factor, times fma(logf(1/freq_scale), 0.1f, 1) with
//     YaRN (rope_yarn's magnitude term, contracted by GCC in the haswell build).
//
// freqBase and freqScale are the layer's (get_rope_freq_base and
// get_rope_freq_scale: the model's, or gemma3's sliding layers' own base and
// a scale of 1).
func newRope(hp Hparams, neox bool, freqBase, freqScale float32) Rope {
	r := Rope{NDims: hp.NRot, Neox: neox, NCtxOrig: hp.NCtxOrigYarn, FreqBase: freqBase,
		FreqScale: freqScale, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
	if r.NCtxOrig == 0 {
		r.NCtxOrig = hp.NCtxTrain
	}
	if hp.RopeScaling == "none" {
		r.FreqScale = 1
	}
	if hp.RopeScaling == "yarn" {
		r.ExtFactor = 1
	}
	if r.ExtFactor != 0 {
		factor := 1 / r.FreqScale
		l := fmath.Logf(factor)
		if factor > 1 {
			r.AttnFactor = float32(0.1*l) + 1
		}
		r.AttnFactor = float32(1/(1+float32(0.1*l))) * r.AttnFactor
	}
	r.AttnFactor *= hp.RopeAttnFactor

	r.ThetaScale = fmath.Powf(r.FreqBase, -2.0/float32(r.NDims))
	corr := func(beta float32) float32 {
		num := float32(r.NDims) * fmath.Logf(float32(r.NCtxOrig)/float32(float32(beta*2)*float32(math.Pi)))
		return num / float32(2*fmath.Logf(r.FreqBase))
	}
	start := float32(math.Floor(float64(corr(r.BetaFast))))
	end := float32(math.Ceil(float64(corr(r.BetaSlow))))
	r.CorrDims = [2]float32{cmax(0, start), cmin(float32(r.NDims-1), end)}

	r.mscale = r.AttnFactor
	if r.ExtFactor != 0 {
		r.mscale = fmath.FMA32(fmath.Logf(1/r.FreqScale), 0.1, 1) * r.AttnFactor
	}
	return r
}

// cache is ggml_rope_cache_init for one position (forward rotation): for
// each pair i0 = 0, 2, ..., theta_extrap = pos * theta_scale^(i0/2) by
// repeated float products, divided by ff[i0/2] when the op has frequency
// factors (phi3's rope factors; ff nil: none), and rope_yarn's
// cos/sin as the haswell build computes them: theta_interp = freq_scale *
// theta_extrap; with YaRN, ramp_mix = ramp(i0)*ext_factor where ramp is
// 1 - clamp((i0/2 - low) / max(0.001, high - low), 0, 1) (its three cases as
// compiled: ext_factor itself below the ramp, 0*ext_factor above it) and
// theta = fma(theta_interp, 1 - ramp_mix, theta_extrap*ramp_mix); then
// cache = (cos(theta)*mscale, sin(theta)*mscale) with glibc's sincosf.
func (r *Rope) cache(cache []float32, pos int, ff []float32) {
	theta := float32(pos)
	low, high := r.CorrDims[0], r.CorrDims[1]
	for i0 := 0; i0 < r.NDims; i0 += 2 {
		te := theta
		if ff != nil {
			te = theta / ff[i0/2]
		}
		t := float32(r.FreqScale * te)
		if r.ExtFactor != 0 {
			y := float32(float32(i0/2)-low) / cmax(0.001, float32(high-low))
			var rampMix float32
			switch {
			case y < 0:
				rampMix = r.ExtFactor
			case y > 1:
				rampMix = r.ExtFactor * 0
			default:
				rampMix = float32(1-y) * r.ExtFactor
			}
			t = fmath.FMA32(t, 1-rampMix, float32(te*rampMix))
		}
		sin, cos := fmath.Sincosf(t)
		cache[i0] = cos * r.mscale
		cache[i0+1] = sin * r.mscale
		theta *= r.ThetaScale
	}
}

// rotateGo applies the rotation of cache to one head x in place (the first
// NDims values; rotate runs it on a level's kernels): pairs
// (x[i], x[i+n/2]) in NEOX mode, (x[2i], x[2i+1]) in NORM mode, with
// rotate_pairs' contractions as compiled (scalar and vector loops alike):
// x0*cos − round(x1*sin) and x0*sin + round(x1*cos), the x0 product fused in
// both.
func (r *Rope) rotateGo(x, cache []float32) {
	n := r.NDims
	off, step := 1, 2
	if r.Neox {
		off, step = n/2, 1
	}
	for i0 := 0; i0 < n; i0 += 2 {
		ic := i0 / 2 * step
		c, s := cache[i0], cache[i0+1]
		x0, x1 := x[ic], x[ic+off]
		x[ic] = fmath.FMA32(x0, c, -float32(x1*s))
		x[ic+off] = fmath.FMA32(x0, s, float32(x1*c))
	}
}

// cmax and cmin are ggml's MAX and MIN macros: a > b ? a : b and a < b ? a : b.
func cmax(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

func cmin(a, b float32) float32 {
	if a < b {
		return a
	}
	return b
}
