package quant

import "fmt"

// GemmTileRows and GemmTileCols are the tile of the SIMD path of [Level.GemmF32]: 4 rows by 16 columns of c.
const (
	GemmTileRows = 4
	GemmTileCols = 16
)

// GemmF32 computes rows [r0, r1) of the dense product c = a·b in float32 (c += a·b when acc): a is m×k, b is
// k×n and c is m×n, all row-major and contiguous. It is the matrix product of package train's forward and
// backward passes (no counterpart in the reference, which trains nothing).
//
// Every element is one chain over p = 0..k-1 in ascending order, c[i,j] ← c[i,j] + a[i,p]·b[p,j], starting from
// 0 (or from c[i,j] when acc). At LevelAVX2 and above, the elements of whole 4×16 tiles (rows r0+4t.., columns
// 16u..) take each step as one fused multiply-add (VFMADD231PS); every other element, and every element at
// LevelGeneric, takes it as a rounded product then a rounded add. Which path an element takes depends only on
// r0, m, n and the level, so a caller that splits the rows into the same strips gets the same bits for any
// number of workers. It panics when the slices are shorter than the shapes or the rows are out of range.
func (l Level) GemmF32(c, a, b []float32, m, n, k, r0, r1 int, acc bool) {
	if r0 < 0 || r1 > m || r0 > r1 || len(a) < m*k || len(b) < k*n || len(c) < m*n {
		panic(fmt.Sprintf("quant: GemmF32 rows [%d,%d) of %dx%d·%dx%d with a %d, b %d, c %d", r0, r1, m, k, k, n, len(a), len(b), len(c)))
	}
	i := r0
	if l >= LevelAVX2 && k > 0 {
		nt := n / GemmTileCols * GemmTileCols
		for ; i+GemmTileRows <= r1; i += GemmTileRows {
			for j := 0; j < nt; j += GemmTileCols {
				gemmTile(c[i*n+j:], n, a[i*k:], k, b[j:], n, k, acc)
			}
			if nt < n {
				gemmGo(c, a, b, n, k, i, i+GemmTileRows, nt, n, acc)
			}
		}
	}
	gemmGo(c, a, b, n, k, i, r1, 0, n, acc)
}

// gemmGo is the portable chain of GemmF32 on rows [r0, r1) and columns [j0, j1).
func gemmGo(c, a, b []float32, n, k, r0, r1, j0, j1 int, acc bool) {
	for i := r0; i < r1; i++ {
		cr := c[i*n+j0 : i*n+j1]
		if !acc {
			clear(cr)
		}
		ar := a[i*k : i*k+k]
		for p, av := range ar {
			br := b[p*n+j0 : p*n+j1]
			br = br[:len(cr)]
			for j, bv := range br {
				cr[j] += float32(av * bv)
			}
		}
	}
}
