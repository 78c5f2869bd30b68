package quant

import "unsafe"

//go:noescape
func tinyF32x4x3AVX2(a *float32, lda int, b *float32, ldb int, k int, c *float32, ldc int)

//go:noescape
func tinyF16x4x3AVX2(a *uint16, lda int, b *uint16, ldb int, k int, c *float32, ldc int)

//go:noescape
func tinyBF16x4x3AVX2(a *uint16, lda int, b *uint16, ldb int, k int, c *float32, ldc int)

//go:noescape
func tinyF32x1AVX2(a, b *float32, k int) float32

//go:noescape
func tinyF16x1AVX2(a, b *uint16, k int) float32

//go:noescape
func tinyBF16x1AVX2(a, b *uint16, k int) float32

// tinyRowsF32, tinyRowsF16 and tinyRowsBF16 are tinyRows (tiny.go) at level
// l: the AVX2+FMA tiles (F16C for f16) at LevelAVX2 and LevelAVX512 (the
// haswell build's tinyBLAS is the 8-lane one), the twin at LevelGeneric.
func tinyRowsF32(l Level, a, b []float32, k, nr, n int, out []float32, ldo int) {
	if l == LevelGeneric || k < 8 {
		tinyRowsGo(TinyDotF32, a, b, k, nr, n, out, ldo)
		return
	}
	tinyKernels[float32]{tinyF32x4x3AVX2, tinyF32x1AVX2, TinyDotF32}.run(a, b, k, nr, n, out, ldo)
}

func tinyRowsF16(l Level, a, b []uint16, k, nr, n int, out []float32, ldo int) {
	if l == LevelGeneric || k < 8 {
		tinyRowsGo(TinyDotF16, a, b, k, nr, n, out, ldo)
		return
	}
	tinyKernels[uint16]{tinyF16x4x3AVX2, tinyF16x1AVX2, TinyDotF16}.run(a, b, k, nr, n, out, ldo)
}

func tinyRowsBF16(l Level, a, b []uint16, k, nr, n int, out []float32, ldo int) {
	if l == LevelGeneric || k < 8 {
		tinyRowsGo(TinyDotBF16, a, b, k, nr, n, out, ldo)
		return
	}
	tinyKernels[uint16]{tinyBF16x4x3AVX2, tinyBF16x1AVX2, TinyDotBF16}.run(a, b, k, nr, n, out, ldo)
}

// tinyKernels is one element type's assembly: tile the 4-row, 3-column
// tile, one a single output, dot the twin.
type tinyKernels[T float32 | uint16] struct {
	tile func(a *T, lda int, b *T, ldb int, k int, c *float32, ldc int)
	one  func(a, b *T, k int) float32
	dot  func(x, y []T) float32
}

// run is tinyRows on t's kernels: the tiles where four rows and three
// columns fit, one output at a time elsewhere; an output that comes out NaN
// is computed again by the twin, so that NaN signs and payloads are the
// twin's.
func (t tinyKernels[T]) run(a, b []T, k, nr, n int, out []float32, ldo int) {
	if nr == 0 || n == 0 {
		return
	}
	_, _, _ = a[nr*k-1], b[n*k-1], out[(n-1)*ldo+nr-1]
	// Panels of columns that stay in L2 (about 256 KiB) while every block
	// of four rows passes over them.
	var z T
	pc := max(3, (1<<18)/(k*int(unsafe.Sizeof(z)))/3*3)
	i := 0
	for c0 := 0; c0 < n; c0 += pc {
		c1 := min(n, c0+pc)
		for i = 0; i+4 <= nr; i += 4 {
			c := c0
			for ; c+3 <= c1; c += 3 {
				t.tile(&a[i*k], k, &b[c*k], k, k, &out[c*ldo+i], ldo)
			}
			for ; c < c1; c++ {
				for r := i; r < i+4; r++ {
					out[c*ldo+r] = t.one(&a[r*k], &b[c*k], k)
				}
			}
		}
	}
	for ; i < nr; i++ {
		for c := range n {
			out[c*ldo+i] = t.one(&a[i*k], &b[c*k], k)
		}
	}
	for c := range n {
		for i := range nr {
			if v := out[c*ldo+i]; v != v {
				out[c*ldo+i] = t.dot(a[i*k:(i+1)*k], b[c*k:(c+1)*k])
			}
		}
	}
}
