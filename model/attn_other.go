//go:build !amd64

package model

import (
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

func vAccF16(l quant.Level, acc, vc []uint16, off, stride int, vs, ms []float32) {
	vAccF16Go(acc, vc, off, stride, vs, ms)
}

func vAccQuant(l quant.Level, t gguf.GGMLType, acc []float32, vq []byte, off, rb int, vs, ms []float32) {
	vAccQuantGo(t, acc, vq, off, rb, vs, ms)
}

func kqTile(l quant.Level, kq, q, kt []float32) { kqTileGo(kq, q, kt) }

func vkqTile(l quant.Level, vkq, vw, kq []float32) { vkqTileGo(vkq, vw, kq) }

func widenF16(l quant.Level, dst []float32, src []uint16) { widenF16Go(dst, src) }

func vExpfTile(l quant.Level, kq []float32, m float32) { vExpfTileGo(kq, m) }
