package quant

import (
	"encoding/binary"
	"math"
)

// Prepared activations: columns quantized once (per token, per matmul input)
// into the layout the packed kernels read, instead of shuffling per weight
// block. The quantization is the reference's (quantize_row_q8_0 of the
// haswell variant, quantize_row_q8_K_ref); only the storage differs.

// q8Act holds ncols columns of k values quantized to Q8_0, split by field:
// the int8 q of every block in order (qs), their int8 negation with wrap
// (nqs, -(-128) = -128 as vpsubb computes it: Q1_0's clear bits), each
// block's d as float32 (dy) and -Σq of each block (nsum: Q2_0's code offset).
// Column c starts at c*k in qs and nqs and at c*k/32 in dy and nsum.
type q8Act struct {
	k, ncols int
	qs, nqs  []byte
	dy       []float32
	nsum     []int32
	// dy8 holds each block's dy eight times (column c at c*k/4): the
	// [dy_k x8 | dy_k+1 x8] operand of the plain-layout Q1_0 kernel. Filled
	// by fillDy8.
	dy8 []float32
	// lut holds the Q1_0 lookup tables of the lookup-table tiles
	// (tileQ1_0LAVX512, tileQ1_0LAVX2) for columns lutC0 .. lutC0+lutN-1,
	// filled by fillLUT (in Work.MatMul by its workers: actJob,
	// fillLUTBlocks, or fillLUTPart for the one-plane integer walk): per
	// column (column lutC0+c at c*4k) and Q8_0 block i of the column, for
	// lane j = 0..7 (the reference's eight int32 lanes of
	// four activations), sixteen floats at (8i+j)*16: entry n is float32(L)*dy
	// with L the lane sum of activations 32i+4j..+3 under weight bits n (bit
	// e set: q, clear: -q with int8 wrap, nqs). The product is exact
	// (|L| <= 512, dy an f16 value), Inf*0 = NaN included, so it is the
	// reference's float(L_k)*dy_k. 2 KB per Q1_0 block and column.
	lut         []float32
	lutC0, lutN int
	lutOK       bool // lut holds columns lutC0 .. lutC0+lutN-1
	// lutPart: lut's float tables hold only the Q1_0 blocks that the
	// integer form does not take (fillLUTPart); the other blocks' are stale.
	lutPart bool
	// ilut and imeta hold the integer form of the Q1_0 tiles
	// (tileQ1_0I4AVX512, tileQ1_0I2AVX512, tileQ1_0I1AVX512) for the lut
	// columns in the batches q1LUTCols takes them in from lutC0, filled by
	// fillILUT (block range by block range: fillLUTBlocks, fillLUTPart) at
	// the levels with those tiles (q1Int). A batch of w columns starting at column
	// lutC0+r holds, from int16 512*r*nb (nb Q1_0 blocks a column) and word
	// 4*r*nb, per block 512*w int16 (its column i's tables at 512i) and 4*w
	// words (column i's q1IntScales at 4i: the m pairs and the float bits of
	// 2^e; word 3 also 1 when all w columns passed).
	ilut  []int16
	imeta []uint32
}

// fillLUT fills lut with the tables of columns c0 .. c0+nc-1 at level l
// (the SIMD builders at LevelAVX512 and LevelAVX2, fillLUTColGo
// elsewhere), unless it holds them. Not safe to call concurrently
// (Work.MatMul shares the same steps among its workers: actJob).
func (a *q8Act) fillLUT(l Level, c0, nc int) {
	if a.lutHolds(c0, nc, false) {
		return
	}
	a.growLUT(l, nc)
	a.fillLUTBlocks(l, c0, nc, 0, a.k/QK8_0)
	a.lutFilled(c0, nc, false)
}

// lutHolds reports whether lut holds the tables of columns c0 .. c0+nc-1:
// all of them, or with part those fillLUTPart makes (which full tables
// include).
func (a *q8Act) lutHolds(c0, nc int, part bool) bool {
	return a.lutOK && a.lutC0 == c0 && a.lutN == nc && (part || !a.lutPart)
}

// lutFilled records that lut holds the tables of columns c0 .. c0+nc-1,
// with part only those of fillLUTPart.
func (a *q8Act) lutFilled(c0, nc int, part bool) {
	a.lutC0, a.lutN, a.lutOK, a.lutPart = c0, nc, true, part
}

// growLUT sizes lut (and the integer form's ilut, imeta) for nc columns.
func (a *q8Act) growLUT(l Level, nc int) {
	a.lut = grow(a.lut, 4*a.k*nc)
	a.growILUT(l, nc)
}

// fillLUTBlocks fills the tables of Q8_0 blocks [s0, s1) of columns c0 ..
// c0+nc-1 (sized by growLUT): the float tables of those blocks and the
// integer form's Q1_0 blocks that start among them. Calls on disjoint
// ranges may run concurrently; each table is the same wherever it is made.
func (a *q8Act) fillLUTBlocks(l Level, c0, nc, s0, s1 int) {
	for c := range nc {
		a.fillLUTCol(l, c0+c, s0, s1, a.lut[4*a.k*c:4*a.k*(c+1)])
	}
	a.fillILUT(l, c0, nc, (s0+3)/4, (s1+3)/4)
}

// fillLUTPart fills, for Q1_0 blocks [b0, b1) of columns c0 .. c0+nc-1
// (sized by growLUT), the integer form's tables (fillILUT) and the float
// tables of the blocks it does not take: those whose batch (q1LUTCols from
// c0, as tileQ1_0LUTGroups runs them) has a column that fails
// q1IntScales, the only float tables the Q1_0 walk then reads. The float
// tables of the other blocks are left as they were. Calls on disjoint
// ranges may run concurrently.
func (a *q8Act) fillLUTPart(l Level, c0, nc, b0, b1 int) {
	a.fillILUT(l, c0, nc, b0, b1)
	nblk := a.k / QK1_0
	for rel := 0; rel < nc; {
		w := q1LUTCols(l, nc-rel)
		for b := b0; b < b1; b++ {
			if a.imeta[rel*nblk*4+4*w*b+3] != 0 {
				continue
			}
			for c := rel; c < rel+w; c++ {
				a.fillLUTCol(l, c0+c, 4*b, 4*b+4, a.lut[4*a.k*c:4*a.k*(c+1)])
			}
		}
		rel += w
	}
}

// actJob is the preparation of Work's Q8_0 columns as a pool job: the
// quantization of x (n columns of k values) into a, over units of Q8_0
// blocks; or with lut set the lookup tables of columns c0 .. c0+nc-1, over
// units of Q8_0 blocks (fillLUTBlocks) or with part of Q1_0 blocks
// (fillLUTPart).
type actJob struct {
	a         *q8Act
	l         Level
	lut, part bool
	x         []float32
	k, n      int
	c0, nc    int
}

// Do prepares units [lo, hi): for the quantization the blocks of all
// columns in order (column c's block b is unit c*k/32+b), for the tables
// every column's Q8_0 blocks lo .. hi-1, or with part its Q1_0 blocks.
func (j *actJob) Do(_, lo, hi int) {
	if j.lut && j.part {
		j.a.fillLUTPart(j.l, j.c0, j.nc, lo, hi)
		return
	}
	if j.lut {
		j.a.fillLUTBlocks(j.l, j.c0, j.nc, lo, hi)
		return
	}
	nb := j.k / QK8_0
	for c := lo / nb; c*nb < hi; c++ {
		j.a.quantizeBlocks(j.l, c, max(lo-c*nb, 0), min(hi-c*nb, nb), j.x[c*j.k:(c+1)*j.k])
	}
}

// fillLUTColGo is the element-wise statement of column c's tables of Q8_0
// blocks [s0, s1), written to lut (column c's 4k floats; the twin of
// q1LUTAVX512 and q1LUTAVX2).
func (a *q8Act) fillLUTColGo(c, s0, s1 int, lut []float32) {
	nsub := a.k / QK8_0
	for s := s0; s < s1; s++ {
		i := c*nsub + s
		q, nq := a.qs[32*i:32*i+32], a.nqs[32*i:32*i+32]
		t := lut[128*s : 128*s+128]
		for j := range 8 {
			for n := range 16 {
				var l int32
				for e := range 4 {
					if n>>e&1 != 0 {
						l += int32(int8(q[4*j+e]))
					} else {
						l += int32(int8(nq[4*j+e]))
					}
				}
				t[16*j+n] = float32(l) * a.dy[i]
			}
		}
	}
}

// fillDy8 fills dy8 for every column.
func (a *q8Act) fillDy8() {
	a.dy8 = grow(a.dy8, a.k*a.ncols/4)
	for i, d := range a.dy[:a.k*a.ncols/QK8_0] {
		for j := range 8 {
			a.dy8[8*i+j] = d
		}
	}
}

// q8KAct holds ncols columns of k values quantized to Q8_K: the int8 qs of
// every block in order, each block's d, and per block eight int32 lane
// offsets nb[8b+l] = -(bsums[2l]+bsums[2l+1]) (the TQ2_0 kernel's bsums
// subtraction). exact[c] is false for a column whose bsums could make the
// AVX2 kernel's int16 subtraction wrap (never for a column quantized here;
// possible for raw bytes); such a column runs the plain Go kernel on raw.
type q8KAct struct {
	k, ncols int
	qs       []byte
	d        []float32
	nb       []int32
	exact    []bool
	raw      []byte // the Q8_K blocks as given or quantized, ncols*k/256*292
}

// reset sizes a for ncols columns of k values, reusing its storage.
func (a *q8Act) reset(k, ncols int) {
	a.k, a.ncols = k, ncols
	n := k * ncols
	a.qs = grow(a.qs, n)
	a.nqs = grow(a.nqs, n)
	a.dy = grow(a.dy, n/QK8_0)
	a.nsum = grow(a.nsum, n/QK8_0)
	a.lutOK = false
}

func (a *q8KAct) reset(k, ncols int) {
	a.k, a.ncols = k, ncols
	n := k * ncols
	a.qs = grow(a.qs, n)
	a.d = grow(a.d, n/QK_K)
	a.nb = grow(a.nb, n/QK_K*8)
	a.exact = grow(a.exact, ncols)
	a.raw = grow(a.raw, n/QK_K*BlockQ8_KSize)
}

// grow returns s resized to n, reallocating only when its capacity is short.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// setBlock fills block i of a from one Q8_0 block (f16 d, 32 int8).
func (a *q8Act) setBlock(i int, blk []byte) {
	q := a.qs[32*i : 32*i+32]
	nq := a.nqs[32*i : 32*i+32]
	copy(q, blk[2:34])
	var s int32
	for j, v := range q {
		nq[j] = -v
		s += int32(int8(v))
	}
	a.dy[i] = FP16ToFP32(binary.LittleEndian.Uint16(blk))
	a.nsum[i] = -s
}

// fromQ8_0 sets column c from raw Q8_0 blocks (k/32 of them).
func (a *q8Act) fromQ8_0(c int, src []byte) {
	nb := a.k / QK8_0
	for b := range nb {
		a.setBlock(c*nb+b, src[b*BlockQ8_0Size:(b+1)*BlockQ8_0Size])
	}
}

// quantizeGoBlocks sets blocks [b0, b1) of column c from the column's k
// floats x with QuantizeRowQ8_0's arithmetic.
func (a *q8Act) quantizeGoBlocks(c, b0, b1 int, x []float32) {
	var blk [BlockQ8_0Size]byte
	nb := a.k / QK8_0
	for b := b0; b < b1; b++ {
		QuantizeRowQ8_0(x[b*QK8_0:(b+1)*QK8_0], blk[:])
		a.setBlock(c*nb+b, blk[:])
	}
}

// fromQ8_K sets column c from raw Q8_K blocks (k/256 of them).
func (a *q8KAct) fromQ8_K(c int, src []byte) {
	nb := a.k / QK_K
	raw := a.raw[c*nb*BlockQ8_KSize : (c+1)*nb*BlockQ8_KSize]
	copy(raw, src[:nb*BlockQ8_KSize])
	a.exact[c] = true
	for b := range nb {
		blk := raw[b*BlockQ8_KSize:]
		i := c*nb + b
		copy(a.qs[i*QK_K:(i+1)*QK_K], blk[q8KOffQs:q8KOffQs+QK_K])
		a.d[i] = math.Float32frombits(binary.LittleEndian.Uint32(blk))
		for l := range 8 {
			b0 := int32(int16(binary.LittleEndian.Uint16(blk[q8KOffBsums+4*l:])))
			b1 := int32(int16(binary.LittleEndian.Uint16(blk[q8KOffBsums+4*l+2:])))
			// The kernel forms Σcode·y - b per int16 lane with Σcode·y in
			// [-6144, 6096]; without wrap that needs b in [-26671, 26624].
			if b0 < -26671 || b0 > 26624 || b1 < -26671 || b1 > 26624 {
				a.exact[c] = false
			}
			a.nb[8*i+l] = -(b0 + b1)
		}
	}
}

// quantizeGo sets column c from k floats with QuantizeRowQ8_K.
func (a *q8KAct) quantizeGo(c int, x []float32) {
	nb := a.k / QK_K
	raw := a.raw[c*nb*BlockQ8_KSize : (c+1)*nb*BlockQ8_KSize]
	QuantizeRowQ8_K(x[:a.k], raw)
	a.fromQ8_K(c, raw)
}
