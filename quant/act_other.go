//go:build !amd64

package quant

func (a *q8Act) quantize(l Level, c int, x []float32) { a.quantizeGo(c, x) }

func (a *q8KAct) quantize(l Level, c int, x []float32) { a.quantizeGo(c, x) }
