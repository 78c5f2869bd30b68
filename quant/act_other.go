//go:build !amd64

package quant

func (a *q8Act) quantize(l Level, c int, x []float32) { a.quantizeGoBlocks(c, 0, a.k/QK8_0, x) }

func (a *q8Act) quantizeBlocks(l Level, c, b0, b1 int, x []float32) {
	a.quantizeGoBlocks(c, b0, b1, x)
}

func (a *q8KAct) quantize(l Level, c int, x []float32) { a.quantizeGo(c, x) }
