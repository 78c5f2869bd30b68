package model

import (
	"fmt"

	"github.com/bankml/bankml/quant"
)

// Linear is one weight matrix of the graph (attn_q … ffn_down, output): the
// layer y = W·x for every column x of a micro-batch, W of Rows() outputs by
// Cols() inputs (ggml ne[1] × ne[0]).
//
// Planes holds W: one quant.Matrix for an ordinary weight (a zero-copy view
// of the mapped file, as ggml_mul_mat reads it), or 1 to 3 PTQTP trit-planes
// "<name>.ptqtp0" … "<name>.ptqtp2" whose sum is W (package ternary; all of
// one type and shape), multiplied as the plane products summed in plane
// order in float32 (quant.Work.MatMulPlanes). A Linear with one plane is
// exactly the reference's ggml_mul_mat of that tensor.
type Linear struct {
	Planes []quant.Matrix
}

// linearOf is the one-plane Linear of m (a copy of the Matrix value: a
// Repack of the Linear does not touch m).
func linearOf(m *quant.Matrix) Linear { return Linear{Planes: []quant.Matrix{*m}} }

// Name is the first plane's tensor name.
func (l *Linear) Name() string { return l.Planes[0].Name }

// Rows is the number of outputs (ne[1]).
func (l *Linear) Rows() int { return l.Planes[0].Rows }

// Cols is the number of inputs, the row length (ne[0]).
func (l *Linear) Cols() int { return l.Planes[0].Cols }

// product is the quant.Product of l into out.
func (l *Linear) product(out []float32) quant.Product {
	return quant.Product{Planes: l.Planes, Out: out}
}

// repack gives every plane a packed copy for the SIMD kernels
// (quant.Matrix.Repack; types without one are left as they are) and returns
// the bytes allocated. The mapped file is only read; the pages of a packed
// plane are then released from the resident set when they lie in one of
// maps (releasePages), so that the copy replaces them in memory instead of
// doubling it.
func (l *Linear) repack(maps [][2]uintptr) (int, error) {
	total := 0
	for i := range l.Planes {
		n, err := l.Planes[i].Repack()
		if err != nil {
			return total, fmt.Errorf("model: repack %s: %w", l.Planes[i].Name, err)
		}
		if n > 0 {
			releasePages(l.Planes[i].Data, maps)
		}
		total += n
	}
	return total, nil
}
