package model

import "github.com/bankml/bankml/quant"

//go:noescape
func ropeNeoxAVX2(x, cache *float32, half int)

// rotate is rotateGo on l's kernels: a NEOX head whose half is a multiple
// of 8 runs ropeNeoxAVX2 at LevelAVX2 and LevelAVX512 (the same bits); NORM
// mode, other head sizes and LevelGeneric run the twin.
func (r *Rope) rotate(l quant.Level, x, cache []float32) {
	half := r.NDims / 2
	if !r.Neox || l == quant.LevelGeneric || half == 0 || half%8 != 0 {
		r.rotateGo(x, cache)
		return
	}
	_, _ = x[r.NDims-1], cache[r.NDims-1]
	ropeNeoxAVX2(&x[0], &cache[0], half)
}
