package model

import (
	"math"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/quant"
)

// vExpf is one lane of ggml_v_expf (vec.h, AVX2+FMA), ggml's own vectorised
// exp; anyLarge tells whether any lane of the 8-wide vector had |n| > 126,
// which sends every lane of that vector through the blend path.
func vExpf(x float32, anyLarge bool) float32 {
	const r = 0x1.8p23
	z := fmath.FMA32(x, 0x1.715476p+0, r)
	n := z - r
	b := fmath.FMA32(-n, 0x1.7f7d1cp-20, fmath.FMA32(-n, 0x1.62e4p-1, x))
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + math.Float32bits(1))
	u := b * b
	j := fmath.FMA32(
		fmath.FMA32(fmath.FMA32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fmath.FMA32(0x1.555e66p-3, b, 0x1.fffdb6p-2)),
		u, float32(0x1.ffffecp-1)*b)
	if !anyLarge {
		return fmath.FMA32(j, k, k)
	}
	absn := float32(math.Abs(float64(n)))
	var g uint32
	if n <= 0 {
		g = 0x82000000
	}
	s1 := math.Float32frombits(g + 0x7f000000)
	s2 := math.Float32frombits(e - g)
	switch {
	case absn > 192:
		return s1 * s1
	case absn > 126:
		return fmath.FMA32(s2, j, s2) * s1
	}
	return fmath.FMA32(k, j, k)
}

// vExpfLarge reports whether ggml_v_expf takes its blend path for x.
func vExpfLarge(x float32) bool {
	z := fmath.FMA32(x, 0x1.715476p+0, 0x1.8p23)
	n := z - 0x1.8p23
	return n > 126 || n < -126
}

// negTileGo is e = -x over a tile's faTile values (negTile's loop).
func negTileGo(e, x []float32) {
	for k := range faTile {
		e[k] = -x[k]
	}
}

// siluMulTileGo is y = (x / (1 + e)) * g over a tile's faTile values
// (siluMulTile's loop; y may be x).
func siluMulTileGo(y, x, e, g []float32) {
	for k := range faTile {
		xv := x[k]
		y[k] = (xv / (1 + e[k])) * g[k]
	}
}

// swigluChunk is how many values of a row one pool unit of the graph's
// swiglu takes (a multiple of faTile, hence of 8).
const swigluChunk = 1024

// swiglu is ggml_vec_swiglu_f32 of the haswell variant: y = silu(x)*g with
// silu(x) = x/(1+exp(-x)); groups of 8 use ggml_v_expf, the rest glibc expf.
// At the SIMD levels the exponentials of whole runs of 64 values come from
// vExpfTile (ggml_v_expf of -x - 0, which is -x exactly, on the same groups of
// 8: the same bits as vExpf); y may be x.
func swiglu(l quant.Level, y, x, g []float32) {
	n := len(y)
	i := 0
	if l != quant.LevelGeneric {
		var e [faTile]float32
		for ; i+faTile <= n; i += faTile {
			negTile(l, e[:], x[i:i+faTile])
			vExpfTile(l, e[:], 0)
			siluMulTile(l, y[i:i+faTile], x[i:i+faTile], e[:], g[i:i+faTile])
		}
	}
	for ; i+7 < n; i += 8 {
		large := false
		for l := range 8 {
			large = large || vExpfLarge(-x[i+l])
		}
		for l := range 8 {
			xv := x[i+l]
			y[i+l] = (xv / (1 + vExpf(-xv, large))) * g[i+l]
		}
	}
	for ; i < n; i++ {
		y[i] = (x[i] / (1 + fmath.Expf(-x[i]))) * g[i]
	}
}
