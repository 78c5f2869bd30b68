package quant

import (
	"fmt"
	"unsafe"
)

//go:noescape
func tileQ2_0AVX2(codes, scales *byte, nb int, qs *byte, dy *float32, nsum *int32, out *float32)

//go:noescape
func tileTQ2_0AVX2(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, out *float32)

//go:noescape
func tileQ2_0AVX512(codes, scales *byte, nb int, qs *byte, dy *float32, nsum *int32, k int, nc int, out *float32)

// tileQ2_0 runs the level's Q2_0 tile on one packed group (see tileQ2_0Go).
func tileQ2_0(l Level, codes, scales []byte, nb int, a *q8Act, c0, nc int, out []float32) {
	_ = out[16*nc-1]
	_ = a.qs[(c0+nc)*a.k-1]
	_ = codes[256*nb-1]
	_ = scales[32*nb-1]
	switch l {
	case LevelAVX512:
		i := c0 * a.k / QK8_0
		tileQ2_0AVX512(&codes[0], &scales[0], nb, &a.qs[c0*a.k], &a.dy[i], &a.nsum[i], a.k, nc, &out[0])
	case LevelAVX2:
		for c := range nc {
			i := (c0 + c) * a.k / QK8_0
			tileQ2_0AVX2(&codes[0], &scales[0], nb, &a.qs[(c0+c)*a.k], &a.dy[i], &a.nsum[i], &out[16*c])
		}
	default:
		tileQ2_0Go(codes, scales, nb, a, c0, nc, out)
	}
}

// hasQ1LUT reports whether level l runs Q1_0 by the lookup-table tiles
// (tileQ1_0LUTGroups): LevelAVX512 and LevelAVX2.
func hasQ1LUT(l Level) bool { return l == LevelAVX512 || l == LevelAVX2 }

//go:noescape
func tileQ1_0LAVX2(codes, scales *byte, nb int, lut *float32, acc *float32, first int, out *float32, pfc, pfs *byte)

//go:noescape
func tileQ1_0LAVX512(codes, scales *byte, nb int, lut *float32, acc *float32, first int, out *float32, pfc, pfs *byte)

//go:noescape
func q1LUTAVX2(qs *byte, nqsOff int, dy *float32, nsub int, lut *float32)

//go:noescape
func q1LUTAVX512(qs *byte, nqsOff int, dy *float32, nsub int, lut *float32)

// fillLUTCol writes column c's Q1_0 lookup tables (see q8Act.lut) to lut
// (4k floats) at level l.
func (a *q8Act) fillLUTCol(l Level, c int, lut []float32) {
	nsub := a.k / QK8_0
	lut = lut[:4*a.k]
	if !hasQ1LUT(l) {
		a.fillLUTColGo(c, lut)
		return
	}
	q := &a.qs[c*a.k]
	off := int(uintptr(unsafe.Pointer(&a.nqs[c*a.k])) - uintptr(unsafe.Pointer(q)))
	if l == LevelAVX512 {
		q1LUTAVX512(q, off, &a.dy[c*nsub], nsub, &lut[0])
	} else {
		q1LUTAVX2(q, off, &a.dy[c*nsub], nsub, &lut[0])
	}
}

// tileQ1_0 runs the level's Q1_0 tile on one packed group (see tileQ1_0Go).
// The SIMD levels (hasQ1LUT) run the lookup-table tile column by column:
// they need the tables of columns c0 .. c0+nc-1 (q8Act.fillLUT) and panic
// without them. (Work.MatMul runs that tile by tileQ1_0LUTGroups instead.)
func tileQ1_0(l Level, codes, scales []byte, nb int, a *q8Act, c0, nc int, out []float32) {
	_ = out[16*nc-1]
	_ = a.qs[(c0+nc)*a.k-1]
	_ = codes[256*nb-1]
	_ = scales[32*nb-1]
	if !hasQ1LUT(l) {
		tileQ1_0Go(codes, scales, nb, a, c0, nc, out)
		return
	}
	if !a.lutOK || c0 < a.lutC0 || c0+nc > a.lutC0+a.lutN {
		panic(fmt.Sprintf("quant: Q1_0 tile at %s on columns %d..%d without their lookup tables (q8Act.fillLUT)", l, c0, c0+nc-1))
	}
	_ = a.lut[(c0+nc-a.lutC0)*4*a.k-1]
	var acc [128]float32
	for c := range nc {
		lut := &a.lut[(c0+c-a.lutC0)*4*a.k]
		if l == LevelAVX512 {
			tileQ1_0LAVX512(&codes[0], &scales[0], nb, lut, &acc[0], 1, &out[16*c], &codes[0], &scales[0])
		} else {
			tileQ1_0LAVX2(&codes[0], &scales[0], nb, lut, &acc[0], 1, &out[16*c], &codes[0], &scales[0])
		}
	}
}

// q1BlockChunk is the number of Q1_0 blocks tileQ1_0LUTGroups runs on each
// group in turn: their tables (2 KB a block) stay in L1 for all the groups.
const q1BlockChunk = 8

// q1GroupChunk is the number of groups tileQ1_0LUTGroups takes at a time
// (their accumulators, 512 bytes each, in acc).
const q1GroupChunk = 16

// tileQ1_0LUTGroups computes out[16(g-lo)+r] = row r of packed group g of p
// against column c (tables in a.lut, q8Act.fillLUT), for the groups
// [lo, hi), at l (LevelAVX512 or LevelAVX2: hasQ1LUT): q1GroupChunk
// groups at a time, q1BlockChunk blocks of each in turn, so that a chunk
// of tables is read from L1 by every group (the per-row float chain is
// unchanged: each group's accumulators carry over between chunks). acc is
// scratch for 128*q1GroupChunk floats.
//
// Each visit of a group prefetches into L2 what the walk's next visit
// reads: the next group's same blocks, after the chunk's last group the
// first group's next blocks, after the last chunk the first blocks of
// the next chunk of groups when that starts below end (the end of the
// caller's range of groups: nothing is prefetched past it, since another
// worker may take those groups). On Qwen3-8B-shaped matrices out of cache (217 MB, 2
// threads, one process alternating the choices) this one-visit distance
// streamed 8-9 % faster than prefetching the same group's next chunk (16
// visits ahead) and about 25 % faster than no prefetch.
func tileQ1_0LUTGroups(l Level, p *packed, a *q8Act, c, lo, hi, end int, acc, out []float32) {
	nb := p.nb
	_ = out[16*(hi-lo)-1]
	_ = acc[128*q1GroupChunk-1]
	lut := a.lut[(c-a.lutC0)*4*a.k : (c-a.lutC0+1)*4*a.k]
	for g0 := lo; g0 < hi; g0 += q1GroupChunk {
		g1 := min(hi, g0+q1GroupChunk)
		for b0 := 0; b0 < nb; b0 += q1BlockChunk {
			n := min(q1BlockChunk, nb-b0)
			first := 0
			if b0 == 0 {
				first = 1
			}
			for g := g0; g < g1; g++ {
				codes, scales := p.group(g)
				var o *float32
				if b0+n == nb {
					o = &out[16*(g-lo)]
				}
				pfc, pfs := &codes[256*b0], &scales[32*b0] // nothing new
				switch {
				case g+1 < g1:
					nc, ns := p.group(g + 1)
					pfc, pfs = &nc[256*b0], &ns[32*b0]
				case b0+n < nb:
					nc, ns := p.group(g0)
					pfc, pfs = &nc[256*(b0+n)], &ns[32*(b0+n)]
				case g1 < end:
					nc, ns := p.group(g1)
					pfc, pfs = &nc[0], &ns[0]
				}
				if l == LevelAVX512 {
					tileQ1_0LAVX512(&codes[256*b0], &scales[32*b0], n, &lut[512*b0], &acc[128*(g-g0)], first, o, pfc, pfs)
				} else {
					tileQ1_0LAVX2(&codes[256*b0], &scales[32*b0], n, &lut[512*b0], &acc[128*(g-g0)], first, o, pfc, pfs)
				}
			}
		}
	}
}

//go:noescape
func tileTQ2_0AVX512(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, out *float32)

//go:noescape
func tileTQ2_0NAVX512(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, k int, nc int, acc *float32, out *float32)

// tileTQ2_0 runs the level's TQ2_0 tile on one packed group (see
// tileTQ2_0Go); acc is scratch for 128*nc floats (used for nc >= 2 at
// LevelAVX512).
func tileTQ2_0(l Level, codes, scales []byte, nb int, a *q8KAct, c0, nc int, out, acc []float32) {
	_ = out[16*nc-1]
	_ = a.qs[(c0+nc)*a.k-1]
	_ = codes[1024*nb-1]
	_ = scales[32*nb-1]
	switch l {
	case LevelAVX512:
		if nc >= 2 {
			_ = acc[128*nc-1]
			i := c0 * a.k / QK_K
			tileTQ2_0NAVX512(&codes[0], &scales[0], nb, &a.qs[i*QK_K], &a.d[i], &a.nb[8*i], a.k, nc, &acc[0], &out[0])
			return
		}
		for c := range nc {
			i := (c0 + c) * a.k / QK_K
			tileTQ2_0AVX512(&codes[0], &scales[0], nb, &a.qs[i*QK_K], &a.d[i], &a.nb[8*i], &out[16*c])
		}
	case LevelAVX2:
		for c := range nc {
			i := (c0 + c) * a.k / QK_K
			tileTQ2_0AVX2(&codes[0], &scales[0], nb, &a.qs[i*QK_K], &a.d[i], &a.nb[8*i], &out[16*c])
		}
	default:
		tileTQ2_0Go(codes, scales, nb, a, c0, nc, out)
	}
}

//go:noescape
func vecDotF16AVX2(x, y *uint16, n int) float32

func vecDotF16(l Level, x, y []uint16) float32 {
	n := len(x)
	if l == LevelGeneric || n < 32 {
		return VecDotF16(x, y)
	}
	y = y[:n]
	np := n &^ 31
	s := float64(vecDotF16AVX2(&x[0], &y[0], np))
	for i := np; i < n; i++ {
		s += float64(FP16ToFP32(x[i]) * FP16ToFP32(y[i]))
	}
	return float32(s)
}

//go:noescape
func dotQ1_0PlainAVX512(w *byte, nb int, qs *byte, nqsOff int, dy8 *float32) float32

// dotQ1_0Plain is ggml_vec_dot_q1_0_q8_0 of one plain Q1_0 row (nb blocks)
// against column c of a (dy8 filled), at LevelAVX512.
func dotQ1_0Plain(w []byte, a *q8Act, c, nb int) float32 {
	_ = w[nb*BlockQ1_0Size-1]
	q := a.qs[c*a.k : (c+1)*a.k]
	nq := a.nqs[c*a.k : (c+1)*a.k]
	dy8 := a.dy8[c*a.k/4 : (c+1)*a.k/4]
	off := int(uintptr(unsafe.Pointer(&nq[0])) - uintptr(unsafe.Pointer(&q[0])))
	return dotQ1_0PlainAVX512(&w[0], nb, &q[0], off, &dy8[0])
}
