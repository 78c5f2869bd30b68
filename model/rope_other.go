//go:build !amd64

package model

import "github.com/bankml/bankml/quant"

// rotate is rotateGo (no assembly on this platform).
func (r *Rope) rotate(l quant.Level, x, cache []float32) { r.rotateGo(x, cache) }
