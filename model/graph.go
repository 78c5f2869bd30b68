package model

import (
	"fmt"

	"github.com/bankml/bankml/quant"
)

// emit hands a traced intermediate result to c's trace (tests), under
// llama.cpp's tensor names (cb names such as "Qcur-0"); c may be nil.
func (c *Context) emit(name string, il int, data []float32) {
	if c != nil && c.trace != nil {
		if il >= 0 {
			name = fmt.Sprintf("%s-%d", name, il)
		}
		c.trace(name, append([]float32(nil), data...))
	}
}

// attention runs Runner.attend for the n query rows of one micro-batch of
// c (positions nPast..nPast+n-1) over the layer cache kc, vc (already
// holding their K and V): the whole-kernel tests' entry.
func (c *Context) attention(out, q []float32, kc, vc []uint16, nPast, n int, scale float32) {
	c.k, c.v = [][]uint16{kc}, [][]uint16{vc}
	rows := make([]rowRef, n)
	for j := range rows {
		rows[j] = rowRef{c: c, pos: nPast + j, cls: quant.ColClass{N: int32(n), Index: int32(j)}, kvEnd: nPast + j + 1}
	}
	c.r.attend(rows, q, out, 0, scale)
}
