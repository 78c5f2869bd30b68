//go:build !amd64

package quant

func tileQ2_0(l Level, grp []byte, nb int, a *q8Act, c0, nc int, out []float32) {
	tileQ2_0Go(grp, nb, a, c0, nc, out)
}

func tileQ1_0(l Level, p *packed, g int, a *q8Act, c0, nc int, out []float32) {
	tileQ1_0Go(p, g, a, c0, nc, out)
}

func tileTQ2_0(l Level, grp []byte, nb int, a *q8KAct, c0, nc int, out, acc []float32) {
	tileTQ2_0Go(grp, nb, a, c0, nc, out)
}

func vecDotF16(l Level, x, y []uint16) float32 { return VecDotF16(x, y) }

func fp32ToFP16Row(l Level, x []float32, dst []uint16) { FP32ToFP16Row(x, dst) }

func dotQ1_0Plain(w []byte, a *q8Act, c, nb int) float32 {
	panic("quant: no plain-layout SIMD kernel on this platform")
}

func (a *q8Act) fillLUTCol(l Level, c, s0, s1 int, lut []float32) { a.fillLUTColGo(c, s0, s1, lut) }

func hasQ1LUT(l Level) bool { return false }

func q1Int(l Level) bool { return false }

func (a *q8Act) growILUT(l Level, nc int) {}

func (a *q8Act) fillILUT(l Level, c0, nc, b0, b1 int) {}

func q1LUTCols(l Level, n int) int { return 1 }

func tileQ1_0LUTGroups(l Level, p *packed, a *q8Act, c, nc, lo, hi, end int, start bool, acc, out []float32) {
	panic("quant: no lookup-table Q1_0 tile on this platform")
}
