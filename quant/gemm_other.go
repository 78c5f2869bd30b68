//go:build !amd64

package quant

// gemmTile is never called off amd64 (no level above LevelGeneric there); it computes the tile as gemmGo does.
func gemmTile(c []float32, ldc int, a []float32, lda int, b []float32, ldb, k int, acc bool) {
	for i := range GemmTileRows {
		cr := c[i*ldc : i*ldc+GemmTileCols]
		if !acc {
			clear(cr)
		}
		for p := range k {
			av := a[i*lda+p]
			for j := range cr {
				cr[j] += float32(av * b[p*ldb+j])
			}
		}
	}
}
