package model

import "github.com/bankml/bankml/quant"

//go:noescape
func negTileAVX2(e, x *float32)

//go:noescape
func siluMulTileAVX2(y, x, e, gv *float32)

// negTile is e = -x for one tile of faTile values at a SIMD level (the
// portable loop at LevelGeneric).
func negTile(l quant.Level, e, x []float32) {
	_, _ = e[faTile-1], x[faTile-1]
	if l == quant.LevelGeneric {
		negTileGo(e, x)
		return
	}
	negTileAVX2(&e[0], &x[0])
}

// siluMulTile is y = (x / (1 + e)) * g for one tile of faTile values (y
// may be x) at a SIMD level (the portable loop at LevelGeneric).
func siluMulTile(l quant.Level, y, x, e, g []float32) {
	_, _, _, _ = y[faTile-1], x[faTile-1], e[faTile-1], g[faTile-1]
	if l == quant.LevelGeneric {
		siluMulTileGo(y, x, e, g)
		return
	}
	siluMulTileAVX2(&y[0], &x[0], &e[0], &g[0])
}
