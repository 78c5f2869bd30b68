//go:build !amd64

package model

import "github.com/bankml/bankml/quant"

func negTile(l quant.Level, e, x []float32) { negTileGo(e, x) }

func siluMulTile(l quant.Level, y, x, e, g []float32) { siluMulTileGo(y, x, e, g) }
