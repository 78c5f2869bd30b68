//go:build !amd64

package quant

func tinyRowsF32(l Level, a, b []float32, k, nr, n int, out []float32, ldo int) {
	tinyRowsGo(TinyDotF32, a, b, k, nr, n, out, ldo)
}

func tinyRowsF16(l Level, a, b []uint16, k, nr, n int, out []float32, ldo int) {
	tinyRowsGo(TinyDotF16, a, b, k, nr, n, out, ldo)
}

func tinyRowsBF16(l Level, a, b []uint16, k, nr, n int, out []float32, ldo int) {
	tinyRowsGo(TinyDotBF16, a, b, k, nr, n, out, ldo)
}
