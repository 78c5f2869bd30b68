//go:build !amd64

package quant

import "github.com/bankml/bankml/gguf"

func rowsDot(l Level, typ gguf.GGMLType) func(w []byte, rb int, a []byte, nb int, out []float32) {
	return nil
}
