package model

import (
	"fmt"

	"github.com/bankml/bankml/ternary"
)

// planes binds the PTQTP trit-planes of the matrix name (package ternary:
// "<name>.ptqtp0" … "<name>.ptqtp2" in a file carrying fucina.ptqtp.version,
// ternary.LoadPlanes) as a Linear of cols × rows, marking the plane tensors
// used; nil and no error when name has no planes (the caller binds name
// itself). The layer is then the plane products summed in plane order
// (Linear, quant.Work.MatMulPlanes). Errors: those of LoadPlanes (version,
// missing plane, plane type or shape), planes whose shape is not [cols, rows]
// (rows 0: any), both name and its planes in the file (Fucina lets the planes
// win; bankml refuses the ambiguity, as llama.cpp refuses unused tensors), and
// a plane type quant cannot multiply.
func (tb tensorBinder) planes(name string, cols, rows int) (*Linear, error) {
	pl, err := ternary.LoadPlanes(tb.f, name)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if pl == nil {
		return nil, nil
	}
	if _, both := tb.f.Tensor(name); both {
		return nil, fmt.Errorf("model: tensor %q is in the file both as itself and as %d PTQTP planes: %w", name, len(pl.Planes), ErrUnsupported)
	}
	if pl.Cols() != cols || (rows > 0 && pl.Rows() != rows) {
		return nil, fmt.Errorf("model: PTQTP planes of %q: shape [%d %d], want [%d %d]", name, pl.Cols(), pl.Rows(), cols, rows)
	}
	for i := range pl.Planes {
		tb.used[pl.Planes[i].Name] = true
		if err := pl.Planes[i].Supported(); err != nil {
			return nil, fmt.Errorf("model: %w: %w", err, ErrUnsupported)
		}
	}
	return &Linear{Planes: pl.Planes}, nil
}

// noPlanes refuses PTQTP planes for a tensor the graph reads by rows (the
// token embedding's get_rows), which takes one tensor.
func (tb tensorBinder) noPlanes(name string) error {
	pl, err := ternary.LoadPlanes(tb.f, name)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if pl != nil {
		return fmt.Errorf("model: %q is stored as %d PTQTP planes; the embedding lookup reads one tensor (quantize it without --include token_embd): %w", name, len(pl.Planes), ErrUnsupported)
	}
	return nil
}
