package quant

//go:noescape
func gemm4x16AVX2(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, acc bool)

// gemmTile runs the 4×16 tile whose top-left element is c[0] (rows ldc apart), over a's rows (lda apart) and b's
// columns (rows ldb apart), k steps.
func gemmTile(c []float32, ldc int, a []float32, lda int, b []float32, ldb, k int, acc bool) {
	_ = c[3*ldc+GemmTileCols-1]
	_ = a[3*lda+k-1]
	_ = b[(k-1)*ldb+GemmTileCols-1]
	gemm4x16AVX2(&c[0], ldc, &a[0], lda, &b[0], ldb, k, acc)
}
