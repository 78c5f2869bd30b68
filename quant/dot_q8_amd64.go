package quant

import (
	"unsafe"

	"github.com/bankml/bankml/gguf"
)

//go:noescape
func dotQ8_0AVX2(w *byte, rb, rows int, a *byte, nb int, out *float32)

//go:noescape
func dotQ4_0AVX2(w *byte, rb, rows int, a *byte, nb int, out *float32)

// rowsDot returns level l's multi-row kernel for plain (not repacked) rows of
// typ, nil when the level has none (LevelGeneric, or a type without one):
// out[i] = the type's vec_dot of row i of w (rows rows, rb bytes apart) with
// the nb activation blocks a. Q8_0 and Q4_0 run dotQ8_0AVX2 and dotQ4_0AVX2
// at LevelAVX2 and LevelAVX512 (the same chains as VecDotQ8_0Q8_0 and
// VecDotQ4_0Q8_0, four rows per activation block).
func rowsDot(l Level, typ gguf.GGMLType) func(w []byte, rb int, a []byte, nb int, out []float32) {
	if l == LevelGeneric {
		return nil
	}
	switch typ {
	case gguf.Q8_0:
		return dotRowsQ8_0AVX2
	case gguf.Q4_0:
		return dotRowsQ4_0AVX2
	}
	return nil
}

func dotRowsQ8_0AVX2(w []byte, rb int, a []byte, nb int, out []float32) {
	dotRowsAVX2(dotQ8_0AVX2, BlockQ8_0Size, w, rb, a, nb, out)
}

func dotRowsQ4_0AVX2(w []byte, rb int, a []byte, nb int, out []float32) {
	dotRowsAVX2(dotQ4_0AVX2, BlockQ4_0Size, w, rb, a, nb, out)
}

// dotRowsAVX2 checks the bounds of len(out) rows of nb weight blocks of bs
// bytes (rb bytes apart) and nb activation blocks, then runs kernel.
func dotRowsAVX2(kernel func(w *byte, rb, rows int, a *byte, nb int, out *float32), bs int, w []byte, rb int, a []byte, nb int, out []float32) {
	rows := len(out)
	if rows == 0 {
		return
	}
	if nb > 0 {
		_ = w[(rows-1)*rb+nb*bs-1]
		_ = a[nb*BlockQ8_0Size-1]
	}
	kernel(unsafe.SliceData(w), rb, rows, unsafe.SliceData(a), nb, &out[0])
}
