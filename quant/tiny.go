package quant

// tinyRows is the outputs of one share of a tinyBLAS product (llamafile's
// tinyBLAS<8, __m256, __m256, TA, TB, float>, ggml-cpu/llamafile/sgemm.cpp):
// out[c*ldo+i] = dot(row i of a, column c of b) for the nr rows of a and the
// n columns of b, each k elements long and stored one after the other, k a
// positive multiple of 8. The Go twin (tinyRowsGo) runs dot (TinyDotF32,
// TinyDotF16 or TinyDotBF16) per output; on amd64 tinyRowsF32, tinyRowsF16
// and tinyRowsBF16 run the assembly of tiny_amd64.s at the SIMD levels, the
// same chains four rows by three columns at a time.

// tinyRowsGo is tinyRows on the twin dot.
func tinyRowsGo[T float32 | uint16](dot func(x, y []T) float32, a, b []T, k, nr, n int, out []float32, ldo int) {
	for c := range n {
		y := b[c*k : (c+1)*k]
		for i := range nr {
			out[c*ldo+i] = dot(a[i*k:(i+1)*k], y)
		}
	}
}
