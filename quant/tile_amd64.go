package quant

import (
	"fmt"
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The packed Q2_0 and TQ2_0 tiles take a group's first code section at
// codes and its first scale section at scales; both step a whole packed
// block (packBlockBytes: Q2BLOCK, TQ2BLOCK in tile_amd64.h) per block.
//
//go:noescape
func tileQ2_0AVX2(codes, scales *byte, nb int, qs *byte, dy *float32, nsum *int32, out *float32)

//go:noescape
func tileQ2_0AVX2Cols(codes, scales *byte, nb int, qs *byte, dy *float32, nsum *int32, k int, nc int, out *float32)

//go:noescape
func tileTQ2_0AVX2Cols(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, k int, nc int, acc *float32, out *float32)

// tileTQ2_0AVX512Col4 is tileTQ2_0NAVX512 at nc = 4 (the same bits), its
// four columns' instructions interleaved; tileTQ2_0 runs every four columns
// by it.
//
//go:noescape
func tileTQ2_0AVX512Col4(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, k int, acc *float32, out *float32)

//go:noescape
func tileTQ2_0AVX2(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, out *float32)

//go:noescape
func tileQ2_0AVX512(codes, scales *byte, nb int, qs *byte, dy *float32, nsum *int32, k int, nc int, out *float32, gfni int)

// tileQ2_0AVX512Col4 is tileQ2_0AVX512 at nc = 4 (the same bits), its four
// columns' instructions interleaved; tileQ2_0 runs every four columns by it.
//
//go:noescape
func tileQ2_0AVX512Col4(codes, scales *byte, nb int, qs *byte, dy *float32, nsum *int32, k int, out *float32, gfni int)

// q2GFNI is tileQ2_0AVX512's gfni argument on this CPU: 1 where it has
// GFNI at 512 bits (Ice Lake on; Cascade Lake's AVX-512 has VNNI without
// it) and is not an AMD one, so that the planes are decoded by one affine
// map each. Zen 4 has GFNI too, but there the shifts and masks run the
// four-column tile 7-10 % faster (docs/PERFORMANCE.md, "Zen 4,
// 2026-12-04"): its 512-bit affine maps take the pipes the vpdpbusd chains
// need. Both decodes give the same planes (TestQ2_0TileDecodesAgree).
var q2GFNI = boolInt(cpu.X86.HasAVX512GFNI && !isAMD())

// boolInt is 1 for true, 0 for false.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tileQ2_0 runs the level's Q2_0 tile on one packed group grp (see
// tileQ2_0Go).
func tileQ2_0(l Level, grp []byte, nb int, a *q8Act, c0, nc int, out []float32) {
	_ = out[16*nc-1]
	_ = a.qs[(c0+nc)*a.k-1]
	_ = grp[q2BlockBytes*nb-1]
	codes, scales := &grp[0], &grp[256]
	switch l {
	case LevelAVX512:
		// Four columns at a time by the interleaved tile (faster per
		// column than the general one at 4, 8 and 16 columns, measured in
		// docs/PERFORMANCE.md: each call decodes the planes again, but its
		// chains keep both ports busy), the one to three left by the
		// general tile.
		for ; nc >= 4; c0, nc, out = c0+4, nc-4, out[64:] {
			i := c0 * a.k / QK8_0
			tileQ2_0AVX512Col4(codes, scales, nb, &a.qs[c0*a.k], &a.dy[i], &a.nsum[i], a.k, &out[0], q2GFNI)
		}
		if nc == 0 {
			return
		}
		i := c0 * a.k / QK8_0
		tileQ2_0AVX512(codes, scales, nb, &a.qs[c0*a.k], &a.dy[i], &a.nsum[i], a.k, nc, &out[0], q2GFNI)
	case LevelAVX2:
		if nc > 1 {
			// The columns share each block's unpacked codes.
			i := c0 * a.k / QK8_0
			tileQ2_0AVX2Cols(codes, scales, nb, &a.qs[c0*a.k], &a.dy[i], &a.nsum[i], a.k, nc, &out[0])
			return
		}
		i := c0 * a.k / QK8_0
		tileQ2_0AVX2(codes, scales, nb, &a.qs[c0*a.k], &a.dy[i], &a.nsum[i], &out[0])
	default:
		tileQ2_0Go(grp, nb, a, c0, nc, out)
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

// tileQ1_0I4AVX512 is tileQ1_0LAVX512 for four columns (its bits per column),
// the blocks that every column may take in the integer form (q1IntScales)
// run in it: ilut and meta the batch's q8Act.ilut and imeta at the call's
// first block, dsc scratch for 64 floats a block, column c's float tables
// lutStride bytes after column c-1's, its sums at out + c*outStride bytes.
//
//go:noescape
func tileQ1_0I4AVX512(codes, scales *byte, nb int, lut *float32, lutStride int, acc *float32, first int, out *float32, outStride int, pfc, pfs *byte, ilut *int16, meta *uint32, dsc *float32)

// tileQ1_0I2AVX512 is tileQ1_0I4AVX512 for two columns (the same
// arguments; ilut and meta with two columns a block, dsc scratch for 32
// floats a block): tileQ1_0LAVX512's bits per column.
//
//go:noescape
func tileQ1_0I2AVX512(codes, scales *byte, nb int, lut *float32, lutStride int, acc *float32, first int, out *float32, outStride int, pfc, pfs *byte, ilut *int16, meta *uint32, dsc *float32)

// tileQ1_0I1AVX512 is tileQ1_0LAVX512 (the same arguments and bits) with
// the blocks the column may take in the integer form (q1IntScales) run in
// it: ilut and meta the column's q8Act.ilut and imeta at the call's first
// block.
//
//go:noescape
func tileQ1_0I1AVX512(codes, scales *byte, nb int, lut *float32, acc *float32, first int, out *float32, pfc, pfs *byte, ilut *int16, meta *uint32)

// q1ILUTAVX512 writes the int16 tables of nblk Q1_0 blocks of one column
// (q8Act.ilut's layout, a block's tables stride bytes after the last's).
//
//go:noescape
func q1ILUTAVX512(qs *byte, nqsOff int, nblk int, ilut *int16, stride int)

// q1Int reports whether tileQ1_0LUTGroups runs the tiles with the integer
// form at level l (tileQ1_0I4AVX512, tileQ1_0I2AVX512, tileQ1_0I1AVX512:
// every batch width at LevelAVX512).
func q1Int(l Level) bool { return l == LevelAVX512 }

// growILUT sizes a.ilut and a.imeta for nc columns at the levels with the
// integer form (q1Int); fillILUT fills them.
func (a *q8Act) growILUT(l Level, nc int) {
	if !q1Int(l) || a.k%QK1_0 != 0 {
		return
	}
	nblk := a.k / QK1_0
	a.ilut = grow(a.ilut, nc*nblk*512)
	a.imeta = grow(a.imeta, nc*nblk*4)
}

// fillILUT fills Q1_0 blocks [b0, b1) of a.ilut and a.imeta (sized by
// growILUT) for columns c0 .. c0+nc-1, batch by batch as
// tileQ1_0LUTGroups takes them (q1LUTCols), at the levels with the
// integer form (q1Int); at others it leaves them. Calls on disjoint block
// ranges may run concurrently.
func (a *q8Act) fillILUT(l Level, c0, nc, b0, b1 int) {
	if !q1Int(l) || a.k%QK1_0 != 0 || b0 >= b1 {
		return
	}
	nblk, nsub := a.k/QK1_0, a.k/QK8_0
	for rel := 0; rel < nc; {
		w := q1LUTCols(l, nc-rel)
		for ci := range w {
			c := c0 + rel + ci
			q := &a.qs[c*a.k+QK1_0*b0]
			off := int(uintptr(unsafe.Pointer(&a.nqs[c*a.k])) - uintptr(unsafe.Pointer(&a.qs[c*a.k])))
			q1ILUTAVX512(q, off, b1-b0, &a.ilut[rel*nblk*512+b0*512*w+512*ci], 1024*w)
		}
		for b := b0; b < b1; b++ {
			meta := a.imeta[rel*nblk*4+4*w*b : rel*nblk*4+4*w*(b+1)]
			all := uint32(1)
			for ci := range w {
				c := c0 + rel + ci
				m, scale, ok := q1IntScales((*[4]float32)(a.dy[c*nsub+4*b:]))
				meta[4*ci] = uint32(m[0]) | uint32(m[1])<<16
				meta[4*ci+1] = uint32(m[2]) | uint32(m[3])<<16
				meta[4*ci+2] = math.Float32bits(scale)
				meta[4*ci+3] = 0
				if !ok {
					all = 0
				}
			}
			meta[3] = all
		}
		rel += w
	}
}

// fillLUTCol writes column c's Q1_0 lookup tables (see q8Act.lut) of Q8_0
// blocks [s0, s1) to lut (column c's 4k floats) at level l.
func (a *q8Act) fillLUTCol(l Level, c, s0, s1 int, lut []float32) {
	nsub := a.k / QK8_0
	lut = lut[:4*a.k]
	if s0 >= s1 {
		return
	}
	if !hasQ1LUT(l) {
		a.fillLUTColGo(c, s0, s1, lut)
		return
	}
	q := &a.qs[c*a.k+QK8_0*s0]
	off := int(uintptr(unsafe.Pointer(&a.nqs[c*a.k])) - uintptr(unsafe.Pointer(&a.qs[c*a.k])))
	if l == LevelAVX512 {
		q1LUTAVX512(q, off, &a.dy[c*nsub+s0], s1-s0, &lut[128*s0])
	} else {
		q1LUTAVX2(q, off, &a.dy[c*nsub+s0], s1-s0, &lut[128*s0])
	}
}

// tileQ1_0 runs the level's Q1_0 tile on packed group g of p (see
// tileQ1_0Go). The SIMD levels (hasQ1LUT) run the lookup-table tile column
// by column, segment by segment: they need the tables of columns
// c0 .. c0+nc-1 (q8Act.fillLUT) and panic without them. (Work.MatMul runs
// that tile by tileQ1_0LUTGroups instead.)
func tileQ1_0(l Level, p *packed, g int, a *q8Act, c0, nc int, out []float32) {
	_ = out[16*nc-1]
	_ = a.qs[(c0+nc)*a.k-1]
	if !hasQ1LUT(l) {
		tileQ1_0Go(p, g, a, c0, nc, out)
		return
	}
	if !a.lutOK || a.lutPart || c0 < a.lutC0 || c0+nc > a.lutC0+a.lutN {
		panic(fmt.Sprintf("quant: Q1_0 tile at %s on columns %d..%d without all their lookup tables (q8Act.fillLUT)", l, c0, c0+nc-1))
	}
	_ = a.lut[(c0+nc-a.lutC0)*4*a.k-1]
	nch := (p.nb + q1Chunk - 1) / q1Chunk
	var acc [128]float32
	for c := range nc {
		lut := a.lut[(c0+c-a.lutC0)*4*a.k:]
		for ch := range nch {
			seg, n := p.q1Seg(g, ch)
			first := 0
			if ch == 0 {
				first = 1
			}
			var o *float32
			if ch == nch-1 {
				o = &out[16*c]
			}
			codes, scales := &seg[0], &seg[256*n]
			if l == LevelAVX512 {
				tileQ1_0LAVX512(codes, scales, n, &lut[512*q1Chunk*ch], &acc[0], first, o, codes, scales)
			} else {
				tileQ1_0LAVX2(codes, scales, n, &lut[512*q1Chunk*ch], &acc[0], first, o, codes, scales)
			}
		}
	}
}

//go:noescape
func prefetchL2(p *byte, n int)

// q1PrefetchVisits is how many visits ahead (one visit: one group's
// segment of a chunk, 2304 bytes) tileQ1_0LUTGroups prefetches: the
// segment that many positions further in memory, which in a worker's
// share of whole bands is the walk's own order. On Qwen3-8B-shaped matrices (207 MB, 2
// threads, alternating) 2 and 3 were level and above 1.
const q1PrefetchVisits = 2

// q1LUTCols reports how many columns one tileQ1_0LUTGroups call takes at
// level l when at least n are left: four or two at LevelAVX512
// (tileQ1_0I4AVX512, tileQ1_0I2AVX512, which load and shift each block's
// code words once for all of them), else one.
func q1LUTCols(l Level, n int) int {
	switch {
	case l == LevelAVX512 && n >= 4:
		return 4
	case l == LevelAVX512 && n >= 2:
		return 2
	}
	return 1
}

// tileQ1_0LUTGroups computes out[16(g-lo)+r] (and, for nc of 2 or 4,
// out[16(hi-lo)i + 16(g-lo)+r] for column c+i) = row r of packed group g of p against
// column c (tables in a.lut, q8Act.fillLUT), for the groups [lo, hi) of
// one band (q1Band), at l (LevelAVX512 or LevelAVX2: hasQ1LUT; nc =
// q1LUTCols): chunk by chunk (q1Chunk blocks), each chunk on every group
// in turn, so that the chunk's tables are read from L1 by every group
// (the per-row float chain is unchanged: each group's accumulators carry
// over between chunks). That is the order of the segments in memory
// (packed), so a band is read front to back. acc is scratch for
// 128*nc*q1Band floats, and at two or four columns 16*nc*q1Chunk more.
// At LevelAVX512 four, two and one columns run tileQ1_0I4AVX512,
// tileQ1_0I2AVX512 and tileQ1_0I1AVX512 on the batch's integer tables
// (q8Act.fillILUT, which batches the columns from a.lutC0 as the callers
// do).
//
// Each visit prefetches into L2 the segment q1PrefetchVisits visits
// further, in this band or the next one when that starts below end (the
// end of the caller's share: past it another worker may take the groups).
// With start (a share's first band, or a band taken from another share)
// it first prefetches the segments of its first q1PrefetchVisits visits,
// which no earlier visit did. It panics when [lo, hi) is not within one
// band.
func tileQ1_0LUTGroups(l Level, p *packed, a *q8Act, c, nc, lo, hi, end int, start bool, acc, out []float32) {
	const sb = 256 + 32 // a block's code and scale bytes
	nb := p.nb
	ng := hi - lo
	nch := (nb + q1Chunk - 1) / q1Chunk
	_ = out[16*ng*nc-1]
	_ = acc[128*nc*q1Band-1]
	dsc := acc[128*nc*q1Band:] // tileQ1_0I4AVX512's scratch
	rel := c - a.lutC0         // the batch's tables in ilut, imeta (q8Act.fillILUT)
	if q1Int(l) {
		_ = dsc[16*nc*q1Chunk-1]
		if (rel+nc)*nb*512 > len(a.ilut) {
			panic(fmt.Sprintf("quant: tileQ1_0LUTGroups on columns %d..%d without their integer tables (q8Act.fillILUT)", c, c+nc-1))
		}
	}
	if lo/q1Band != (hi-1)/q1Band {
		panic(fmt.Sprintf("quant: tileQ1_0LUTGroups on groups %d..%d across a band", lo, hi-1))
	}
	if nc != 1 && (nc != 2 && nc != 4 || l != LevelAVX512) {
		panic(fmt.Sprintf("quant: tileQ1_0LUTGroups on %d columns at %s", nc, l))
	}
	lut := a.lut[(c-a.lutC0)*4*a.k : (c-a.lutC0+nc)*4*a.k]
	lutStride := 4 * a.k * 4 // bytes from a column's tables to the next's
	// A band's segments are contiguous, in visit order, and so are the
	// bands of a share: the segment q1PrefetchVisits visits ahead is that
	// many segments further, short of the share's end (end*nb*sb when
	// it ends on a band's edge, as runShares' do).
	limit := min(len(p.data), end*nb*sb)
	if start {
		off, n := p.q1SegOff(lo, 0)
		if m := min(q1PrefetchVisits*n*sb, limit-off); m > 0 {
			prefetchL2(&p.data[off], m)
		}
	}
	for ch := range nch {
		b0 := ch * q1Chunk
		off0, n := p.q1SegOff(lo, ch)
		// At two or four columns the chunk runs in parts of step blocks,
		// each on every group in turn, so that the part's tables of the
		// columns stay in L1 while the groups read them (q1PartBlocks).
		step := n
		if nc > 1 {
			step = min((n+1)/2, q1PartBlocks[nc])
		}
		for bs := 0; bs < n; bs += step {
			bn := min(step, n-bs)
			first := 0
			if ch == 0 && bs == 0 {
				first = 1
			}
			off := off0
			for g := lo; g < hi; g++ {
				var o *float32
				if ch == nch-1 && bs+bn == n {
					o = &out[16*(g-lo)]
				}
				pf := off + q1PrefetchVisits*n*sb
				if pf+n*sb > limit {
					pf = off // nothing new
				}
				codes, scales := &p.data[off+256*bs], &p.data[off+256*n+32*bs]
				pfc, pfs := &p.data[pf+256*bs], &p.data[pf+256*n+32*bs]
				switch {
				case nc == 4:
					ib := rel*nb + 4*(b0+bs)
					tileQ1_0I4AVX512(codes, scales, bn, &lut[512*(b0+bs)], lutStride, &acc[512*(g-lo)], first, o, 4*16*ng, pfc, pfs, &a.ilut[512*ib], &a.imeta[4*ib], &dsc[0])
				case nc == 2:
					ib := rel*nb + 2*(b0+bs)
					tileQ1_0I2AVX512(codes, scales, bn, &lut[512*(b0+bs)], lutStride, &acc[256*(g-lo)], first, o, 16*4*ng, pfc, pfs, &a.ilut[512*ib], &a.imeta[4*ib], &dsc[0])
				case l == LevelAVX512:
					ib := rel*nb + b0
					tileQ1_0I1AVX512(codes, scales, bn, &lut[512*b0], &acc[128*(g-lo)], first, o, pfc, pfs, &a.ilut[512*ib], &a.imeta[4*ib])
				default:
					tileQ1_0LAVX2(codes, scales, bn, &lut[512*b0], &acc[128*(g-lo)], first, o, pfc, pfs)
				}
				off += n * sb
			}
		}
	}
}

// q1PartBlocks[nc] is the most blocks of a chunk that tileQ1_0LUTGroups
// runs on every group in turn at nc columns: as many as keep the part's
// integer tables (1 KiB a block and column: the parts apply from two
// columns on, which run only at LevelAVX512, in the integer form) within
// two thirds of this CPU's L1d, the rest left to the codes, scales and
// accumulators it streams (at least one; q1Chunk when CPUID does not tell
// the L1d's size). The float tables (2 KiB a block and column) are read
// only for the blocks the integer form cannot take. Sized by the float
// tables, parts at four columns held two blocks on Zen 4's 32 KiB L1d;
// they now hold four (a chunk's half, as at two columns and on the 48 KiB
// L1d of Sapphire Rapids): at four columns 1-4 % faster on the 8B shapes
// there (docs/PERFORMANCE.md, "Zen 4, 2026-12-04 late").
var q1PartBlocks = func() (n [q1LUTMaxCols + 1]int) {
	l1 := l1dBytes()
	for nc := 1; nc < len(n); nc++ {
		n[nc] = q1Chunk
		if l1 > 0 {
			n[nc] = max(1, min(q1Chunk, l1*2/3/(nc*1024)))
		}
	}
	return n
}()

//go:noescape
func tileTQ2_0AVX512(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, out *float32)

//go:noescape
func tileTQ2_0NAVX512(codes, scales *byte, nb int, qs *byte, d *float32, nbs *int32, k int, nc int, acc *float32, out *float32)

// tileTQ2_0 runs the level's TQ2_0 tile on one packed group grp (see
// tileTQ2_0Go); acc is scratch for 128*nc floats (used for nc >= 2 at
// LevelAVX512).
func tileTQ2_0(l Level, grp []byte, nb int, a *q8KAct, c0, nc int, out, acc []float32) {
	_ = out[16*nc-1]
	_ = a.qs[(c0+nc)*a.k-1]
	_ = grp[tq2BlockBytes*nb-1]
	codes, scales := &grp[0], &grp[1024]
	switch l {
	case LevelAVX512:
		// Four columns at a time by the interleaved tile, the one to
		// three left by the general (two or more) or one-column tile.
		if nc >= 4 {
			_ = acc[512-1]
		}
		for ; nc >= 4; c0, nc, out = c0+4, nc-4, out[64:] {
			i := c0 * a.k / QK_K
			tileTQ2_0AVX512Col4(codes, scales, nb, &a.qs[i*QK_K], &a.d[i], &a.nb[8*i], a.k, &acc[0], &out[0])
		}
		if nc >= 2 {
			_ = acc[128*nc-1]
			i := c0 * a.k / QK_K
			tileTQ2_0NAVX512(codes, scales, nb, &a.qs[i*QK_K], &a.d[i], &a.nb[8*i], a.k, nc, &acc[0], &out[0])
			return
		}
		for c := range nc {
			i := (c0 + c) * a.k / QK_K
			tileTQ2_0AVX512(codes, scales, nb, &a.qs[i*QK_K], &a.d[i], &a.nb[8*i], &out[16*c])
		}
	case LevelAVX2:
		if nc >= 2 {
			// The columns share each lane group's unpacked codes.
			_ = acc[128*nc-1]
			i := c0 * a.k / QK_K
			tileTQ2_0AVX2Cols(codes, scales, nb, &a.qs[i*QK_K], &a.d[i], &a.nb[8*i], a.k, nc, &acc[0], &out[0])
			return
		}
		i := c0 * a.k / QK_K
		tileTQ2_0AVX2(codes, scales, nb, &a.qs[i*QK_K], &a.d[i], &a.nb[8*i], &out[0])
	default:
		tileTQ2_0Go(grp, nb, a, c0, nc, out)
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
func fp32ToFP16F16C(x *float32, dst *uint16, n int)

func fp32ToFP16Row(l Level, x []float32, dst []uint16) {
	n := len(x)
	dst = dst[:n]
	nv := 0
	if l != LevelGeneric && n >= 8 {
		nv = n &^ 7
		fp32ToFP16F16C(&x[0], &dst[0], nv)
	}
	for i := nv; i < n; i++ {
		dst[i] = FP32ToFP16(x[i])
	}
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
