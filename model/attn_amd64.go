package model

import (
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

//go:noescape
func vAccF16AVX2(acc, v *uint16, stride int, vs, ms *float32, n int) int

//go:noescape
func vAccF16AVX512(acc, v *uint16, stride int, vs, ms *float32, n int) int

//go:noescape
func vAccQAVX2(acc *float32, v *byte, rb int, vs, ms *float32, n int, q4 int)

//go:noescape
func kqTileAVX2(kq, q, kt *float32, dk int)

//go:noescape
func vkqTileAVX2(vkq, vw, kq *float32, dv int)

//go:noescape
func vExpfTileAVX2(kq *float32, m float32)

//go:noescape
func widenF16AVX2(dst *float32, src *uint16, n int)

// vAccF16 is vAccF16Go on l's kernels: blocks of 128 lanes at LevelAVX512,
// of 32 at LevelAVX2, the rest (and every lane at LevelGeneric) in Go. A
// block whose kernel stops at a NaN is finished by the twin from that cell.
func vAccF16(l quant.Level, acc, vc []uint16, off, stride int, vs, ms []float32) {
	n, dv := len(vs), len(acc)
	if n == 0 || l == quant.LevelGeneric {
		vAccF16Go(acc, vc, off, stride, vs, ms)
		return
	}
	_ = ms[n-1]
	_ = vc[off+(n-1)*stride+dv-1] // every cell's lanes are in the cache
	b := 0
	block := func(k func(acc, v *uint16, stride int, vs, ms *float32, n int) int, w int) {
		i := k(&acc[b], &vc[off+b], stride, &vs[0], &ms[0], n)
		if i < n {
			vAccF16Go(acc[b:b+w], vc, off+b+i*stride, stride, vs[i:], ms[i:])
		}
	}
	if l >= quant.LevelAVX512 {
		for ; b+128 <= dv; b += 128 {
			block(vAccF16AVX512, 128)
		}
	}
	for ; b+32 <= dv; b += 32 {
		block(vAccF16AVX2, 32)
	}
	if b < dv {
		vAccF16Go(acc[b:], vc, off+b, stride, vs, ms)
	}
}

// vAccQuant is vAccQuantGo on l's kernels for a Q8_0 or Q4_0 V cache
// (vAccQAVX2 at both SIMD levels: one block of 32 lanes a call, every cell
// in turn); other types and LevelGeneric run the twin.
func vAccQuant(l quant.Level, t gguf.GGMLType, acc []float32, vq []byte, off, rb int, vs, ms []float32) {
	q4 := 0
	if t == gguf.Q4_0 {
		q4 = 1
	}
	n := len(vs)
	if n == 0 || l == quant.LevelGeneric || t != gguf.Q8_0 && t != gguf.Q4_0 {
		vAccQuantGo(t, acc, vq, off, rb, vs, ms)
		return
	}
	bs := rowBytes(t, quant.QK8_0)
	_ = ms[n-1]
	_ = vq[off+(n-1)*rb+len(acc)/quant.QK8_0*bs-1] // every cell's blocks are in the cache
	for b := range len(acc) / quant.QK8_0 {
		vAccQAVX2(&acc[quant.QK8_0*b], &vq[off+bs*b], rb, &vs[0], &ms[0], n, q4)
	}
}

// kqTile is kqTileGo on l's kernels (one AVX2 kernel at both SIMD levels:
// eight 8-lane chains across the tile's cells).
func kqTile(l quant.Level, kq, q, kt []float32) {
	dk := len(q)
	if l == quant.LevelGeneric || dk == 0 {
		kqTileGo(kq, q, kt)
		return
	}
	_, _ = kq[faTile-1], kt[dk*faTile-1]
	kqTileAVX2(&kq[0], &q[0], &kt[0], dk)
}

// vkqTile is vkqTileGo on l's kernels (AVX2 at both SIMD levels: eight
// 8-lane chains across d, DV a multiple of 64; otherwise the twin).
func vkqTile(l quant.Level, vkq, vw, kq []float32) {
	dv := len(vkq)
	if l == quant.LevelGeneric || dv%64 != 0 || dv == 0 {
		vkqTileGo(vkq, vw, kq)
		return
	}
	_, _ = kq[faTile-1], vw[faTile*dv-1]
	vkqTileAVX2(&vkq[0], &vw[0], &kq[0], dv)
}

// widenF16 is widenF16Go on l's kernels (vcvtph2ps for whole groups of 8).
func widenF16(l quant.Level, dst []float32, src []uint16) {
	n := len(src)
	if l == quant.LevelGeneric || n < 8 {
		widenF16Go(dst, src)
		return
	}
	_ = dst[n-1]
	m := n &^ 7
	widenF16AVX2(&dst[0], &src[0], m)
	widenF16Go(dst[m:n], src[m:])
}

// vExpfTile is vExpfTileGo on l's kernels (ggml_v_expf in AVX2 at both SIMD
// levels, as the reference computes it).
func vExpfTile(l quant.Level, kq []float32, m float32) {
	if l == quant.LevelGeneric {
		vExpfTileGo(kq, m)
		return
	}
	_ = kq[faTile-1]
	vExpfTileAVX2(&kq[0], m)
}
