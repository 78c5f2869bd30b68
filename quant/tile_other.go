//go:build !amd64

package quant

func tileQ2_0(l Level, codes, scales []byte, nb int, a *q8Act, c0, nc int, out []float32) {
	tileQ2_0Go(codes, scales, nb, a, c0, nc, out)
}
