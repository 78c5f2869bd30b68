package quant

import "unsafe"

//go:noescape
func tileQ2_0AVX512(codes, scales *byte, nb int, qs *byte, dy *float32, nsum *int32, k int, nc int, out *float32)

// tileQ2_0 runs the level's Q2_0 tile on one packed group (see tileQ2_0Go).
func tileQ2_0(l Level, codes, scales []byte, nb int, a *q8Act, c0, nc int, out []float32) {
	_ = out[16*nc-1]
	_ = a.qs[(c0+nc)*a.k-1]
	_ = codes[256*nb-1]
	_ = scales[32*nb-1]
	switch l {
	case LevelAVX512:
		i := c0 * a.k / QK8_0
		tileQ2_0AVX512(&codes[0], &scales[0], nb, &a.qs[c0*a.k], &a.dy[i], &a.nsum[i], a.k, nc, &out[0])
	default:
		tileQ2_0Go(codes, scales, nb, a, c0, nc, out)
	}
}

var _ = unsafe.Pointer(nil)
