package quant

import (
	"fmt"
	"sync"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
)

// Work is what MatMul needs besides its operands, kept between calls so that
// a matmul allocates nothing once the buffers have grown to the largest
// shape (ggml's work buffer, wdata): the CPU level whose kernels run, the
// worker pool that shares the rows, the quantized activations and each
// worker's tile scratch. A Work is used by one goroutine at a time.
type Work struct {
	level Level
	pool  *parallel.Pool
	// variant is the CPU variant whose chains the block dots follow where
	// bankml models them (variantDot; the zero value, x64, is never set:
	// haswellChains marks haswell's). Only the sweep sets another so far.
	variant Variant

	q8     q8Act  // prepared Q8_0 columns (packed Q1_0/Q2_0)
	q8k    q8KAct // prepared Q8_K columns (packed TQ2_0)
	xq     []byte // plain activation blocks (the other block types)
	xh     []uint16
	scr    [][]float32 // per worker: tile output and accumulators
	shares []share     // a packed matrix's shares, one per worker (runShares)
	job    matJob
	act    actJob // the preparation of q8 on the pool (prepareQ8, the Q1_0 tables)
	// prep records which of the buffers above hold the current columns
	// (MatMulShared: one quantization per activation format for all its
	// products); every other call starts with none.
	prep prepared
}

// prepared is which activation buffers of a Work hold the current columns.
type prepared struct {
	q8, dy8, q8k bool
	xh           gguf.GGMLType // F16 or BF16 (0: none; F32 is never prepared)
	xq           int           // 1+index in actFormats of xq's format (0: none)
}

// Activation formats of xq, for prepared.xq: the block quantizers, and the
// Q4_K repacked path's mix of ggml_quantize_mat_q8_K_4x8 and Q8_K columns.
const (
	xqQ8_0 = 1 + iota
	xqQ8_1
	xqQ8_K
	xqQ4KRepack
)

func xqFormat(a actFormat) int {
	switch a.block {
	case QK_K:
		return xqQ8_K
	}
	if a.size == BlockQ8_1Size {
		return xqQ8_1
	}
	return xqQ8_0
}

// NewWork returns a Work running level's kernels on pool (nil: the calling
// goroutine only). Errors: a level this CPU lacks (Level.Check).
func NewWork(level Level, pool *parallel.Pool) (*Work, error) {
	if err := level.Check(); err != nil {
		return nil, err
	}
	w := &Work{level: level, pool: pool, variant: VariantHaswell, scr: make([][]float32, pool.Size()), shares: make([]share, pool.Size())}
	w.job.w = w
	return w, nil
}

// Level is the level whose kernels the Work runs.
func (w *Work) Level() Level { return w.level }

// tileCols is the number of activation columns one tile call takes: the
// packed weights of a group are decoded once per block for all of them.
const tileCols = 16

// lutCols is the number of activation columns whose Q1_0 lookup tables
// (16k bytes each for rows of k) one pass over the groups uses at
// LevelAVX512 and LevelAVX2: as many as fit in 768 KiB (kept in L2 while every group
// reads them; the columns of a prompt run in several passes), at least
// one, at most tileCols.
func lutCols(k int) int { return max(1, min(tileCols, 768<<10/(16*k))) }

// claimChunk is the pool's chunk for units rows or groups on size workers:
// about sixteen claims per worker.
func claimChunk(units, size int) int { return max(1, units/(16*size)) }

// matJob is one MatMul for the pool: units are packed groups of 16 rows, or
// rows for unpacked matrices.
type matJob struct {
	w      *Work
	m      *Matrix  // planes[0]
	planes []Matrix // the matrices whose products are summed (one for MatMul)
	one    [1]Matrix
	x      []float32
	n      int
	out    []float32
	// per call
	path        matPath
	kernel      func(w, a []byte, nb int) float32
	rows        func(w []byte, rb int, a []byte, nb int, out []float32) // the level's multi-row kernel (rowsDot), or nil
	qb          int                                                     // bytes per quantized column (plain block paths)
	wnb         int                                                     // weight blocks per row
	gemm        int                                                     // Q4_K repacked: columns < gemm run the gemm chain
	c0, cn      int                                                     // packed paths: the columns of this pool run
	parts, unit int                                                     // parts > 0: Do runs shares of Work.shares of unit groups (doShare)
}

type matPath uint8

const (
	pathF32Vec matPath = iota
	pathF32Tiny
	pathF16Vec
	pathF16Tiny
	pathBF16Vec
	pathBF16Tiny
	pathBlock
	pathQ4KRepack
	pathPackedQ1
	pathPackedQ2
	pathPackedTQ2
	pathPlainQ1 // Q1_0 not Repack'ed, at LevelAVX512: the plain-layout assembly kernel
)

// MatMul computes out[j*Rows+i] = dot(row i of m, column j of x) for the n
// activation columns x[j*Cols:(j+1)*Cols], taking for each type and shape the
// arithmetic ggml_compute_forward_mul_mat of the reference takes on an AVX2
// machine (the haswell variant; every level computes the same bits):
//
//   - F32: tinyBLAS (TinyDotF32) when n >= 2, Cols%8 == 0 and Rows%4 == 0,
//     else ggml_vec_dot_f32 (VecDotF32);
//   - F16 and BF16: the activations are rounded to f16 (bf16) first; then
//     tinyBLAS (TinyDotF16, TinyDotBF16) under the same conditions, else
//     ggml_vec_dot_f16 (ggml_vec_dot_bf16); at the SIMD levels tinyBLAS's
//     outputs (F32's too) come from the 4-row, 3-column assembly tiles
//     (tinyRows);
//   - block types (blockKernels): each column is quantized to the type's
//     activation format (Q8_0 for Q8_0, Q4_0, Q5_0, Q1_0, Q2_0; Q8_1 for
//     Q4_1, Q5_1; Q8_K for TQ1_0, TQ2_0, Q2_K … Q6_K), then every output
//     runs the type's vec_dot chain (tinyBLAS_Q0_AVX, used for
//     Q8_0/Q4_0/Q5_0 with 2+ columns, agrees with it per output); Q4_0 and
//     Q4_K with Rows%8 == 0 live in the CPU_REPACK buffer and run the
//     repacked kernels' chains (RepackDotQ4_0Q8_0, q4_K 8x8 gemm/gemv);
//     at the SIMD levels the plain Q8_0 and Q4_0 rows of a one-plane
//     product run the assembly kernels (four rows per activation block);
//   - Q1_0, Q2_0, TQ2_0 matrices that were Repack'ed run the packed tiles of
//     the Work's level (sixteen rows per vector, up to tileCols columns per
//     weight pass), the same chains as VecDotQ1_0Q8_0, VecDotQ2_0Q8_0 and
//     VecDotTQ2_0Q8_K; at LevelGeneric they run those plain kernels. A Q1_0
//     matrix that was not Repack'ed runs, at LevelAVX512, a plain-layout
//     assembly kernel (one row at a time, no copy of the weights).
//
// The pool's workers take chunks of rows (groups of 16 for packed matrices);
// each output is computed by one worker from its row and column alone, so
// the result does not depend on the pool's size. MatMul allocates nothing
// once the Work's buffers have grown to the shape. Call Supported first:
// MatMul panics on types it does not handle.
func (w *Work) MatMul(m *Matrix, x []float32, n int, out []float32) {
	j := &w.job
	*j = matJob{w: w}
	j.one[0] = *m
	w.prep = prepared{}
	w.run(j.one[:], x, n, out, n >= 2, n-n%4)
}

// MatMulPlanes computes the layer whose weight matrix is the sum of planes
// (one or more matrices of one type and shape; PTQTP trit-planes, package
// ternary, are 1 to 3): out[j*Rows+i] = ((P0·x_j)[i] + (P1·x_j)[i]) +
// (P2·x_j)[i] …, each plane product exactly what MatMul computes for that
// plane alone, summed in plane order in float32. The columns are quantized once for all planes
// (they share the activation format) and the rows are handed to the pool
// once: each chunk computes every plane's outputs of its rows. The packed
// tiles run when every plane was Repack'ed (else the plain kernels, as
// MatMul does for an unpacked matrix). It panics, like MatMul, on an
// unsupported type, on no planes, and on planes of different types or
// shapes (Supported checks the type, ternary.LoadPlanes the plane set).
// Allocates nothing once the buffers have grown. Planes of one matrix cost
// one activation quantization and one pool dispatch, against one per plane
// for MatMul called on each.
func (w *Work) MatMulPlanes(planes []Matrix, x []float32, n int, out []float32) {
	w.MatMulPlanesAs(planes, x, n, nil, out)
}

// ColClass is the matmul a column of a batched product stands for: column
// Index (0 <= Index < N) of a product of N columns. A forward pass over the
// rows of several sequences gives each row the class of its fresh
// evaluation (its micro-batch's size and its place in it), so that each
// output is the bits that evaluation computes.
type ColClass struct{ N, Index int32 }

// pathKey is what a column's class changes in the arithmetic of one
// matrix: tinyBLAS or vec_dot for F32, F16 and BF16 (N >= 2; for a Work
// following another CPU variant, also its tinyBLAS_Q0 for Q8_0, Q4_0 and
// Q5_0), the Q4_K repacked gemm or gemv chain (Index < N-N%4). The other
// types' outputs depend on their weight row and activation column alone.
type pathKey struct {
	tiny bool
	gemm bool
}

// ClassDependent reports whether the outputs of m depend on the class of
// their column (see MatMulPlanesAs): true for F32, F16 and BF16 (tinyBLAS
// from two columns on), for Q4_K with a row count that is a multiple of 8
// (the repacked gemm for the columns in whole groups of four), and for the
// types whose chain the Work's CPU variant changes from two columns on.
func (w *Work) ClassDependent(m *Matrix) bool {
	switch m.Type {
	case gguf.F32, gguf.F16, gguf.BF16:
		return true
	case gguf.Q4_K:
		return m.Rows%8 == 0
	}
	return variantDot(w.variant, m.Type) != nil && !variantVecDotOnly(w.variant, m.Type)
}

func (c ColClass) key() pathKey {
	return pathKey{tiny: c.N >= 2, gemm: c.Index < c.N-c.N%4}
}

// MatMulPlanesAs is MatMulPlanes where column c computes, bit for bit, what
// column cls[c].Index of MatMulPlanes over cls[c].N columns computes (cls
// nil: column c of n, MatMulPlanes itself). Where the type's path does not
// depend on the columns (every type but F32, F16, BF16 and repacked Q4_K:
// ClassDependent) all n columns run in one pass over the weights whatever
// their classes — what lets the decode columns of several sequences share a
// weight pass; otherwise each maximal run of columns that take the same path
// runs as one product. It panics as MatMulPlanes does, and on a class
// outside 0 <= Index < N or len(cls) != n.
func (w *Work) MatMulPlanesAs(planes []Matrix, x []float32, n int, cls []ColClass, out []float32) {
	checkPlanes(planes)
	checkClasses(cls, n)
	w.prep = prepared{}
	w.runAs(planes, x, n, out, cls)
	w.prep = prepared{}
}

func checkClasses(cls []ColClass, n int) {
	if cls == nil {
		return
	}
	if len(cls) != n {
		panic(fmt.Sprintf("quant: %d column classes for %d columns", len(cls), n))
	}
	for c, k := range cls {
		if k.Index < 0 || k.Index >= k.N {
			panic(fmt.Sprintf("quant: column %d: class index %d of %d columns", c, k.Index, k.N))
		}
	}
}

// runAs runs planes over the n columns of x in the runs of columns that
// share a path (one run when the type's path ignores the classes).
func (w *Work) runAs(planes []Matrix, x []float32, n int, out []float32, cls []ColClass) {
	m := &planes[0]
	if cls == nil || !w.ClassDependent(m) {
		j := &w.job
		*j = matJob{w: w}
		w.run(planes, x, n, out, n >= 2, n-n%4)
		return
	}
	k, rows := m.Cols, m.Rows
	for c0 := 0; c0 < n; {
		key := cls[c0].key()
		c1 := c0 + 1
		for c1 < n && cls[c1].key() == key {
			c1++
		}
		// The activation buffers hold one run's columns at a time.
		w.prep = prepared{}
		j := &w.job
		*j = matJob{w: w}
		gemm := 0
		if key.gemm {
			gemm = c1 - c0
		}
		w.run(planes, x[c0*k:c1*k], c1-c0, out[c0*rows:c1*rows], key.tiny, gemm)
		w.prep = prepared{}
		c0 = c1
	}
}

// checkPlanes panics unless planes is one or more matrices of one type and
// shape.
func checkPlanes(planes []Matrix) {
	if len(planes) == 0 {
		panic("quant: MatMulPlanes of no planes")
	}
	for i := range planes[1:] {
		p := &planes[1+i]
		if p.Type != planes[0].Type || p.Rows != planes[0].Rows || p.Cols != planes[0].Cols {
			panic(fmt.Sprintf("quant: MatMulPlanes: plane %q is %s %dx%d, plane %q %s %dx%d", p.Name, p.Type, p.Rows, p.Cols,
				planes[0].Name, planes[0].Type, planes[0].Rows, planes[0].Cols))
		}
	}
}

// Product is one product of MatMulShared: the planes of a weight (one
// Matrix for an ordinary weight, 1 to 3 PTQTP planes: see MatMulPlanes) and
// the output, Rows values per column.
type Product struct {
	Planes []Matrix
	Out    []float32
}

// MatMulShared computes, for each product p, what MatMulPlanes(p.Planes,
// x, n, p.Out) computes, bit for bit, for several weights that read the
// same n columns x (Q, K and V of an attention block; gate and up of a
// feed-forward): the columns are quantized (or rounded to f16/bf16) once
// per activation format for all the products, as the reference's graph
// quantizes each op's src1 once per op (ggml_compute_forward_mul_mat's
// wdata), so that sharing changes no bit. The products run one after
// another, each on the pool. It panics as MatMulPlanes does, and on
// weights of different row lengths. Allocates nothing once the buffers
// have grown.
func (w *Work) MatMulShared(x []float32, n int, ps ...Product) {
	w.MatMulSharedAs(x, n, nil, ps...)
}

// MatMulSharedAs is MatMulShared with column classes: each product is what
// MatMulPlanesAs(p.Planes, x, n, cls, p.Out) computes, the activations
// shared as MatMulShared shares them (products whose path depends on the
// classes quantize their runs of columns themselves).
func (w *Work) MatMulSharedAs(x []float32, n int, cls []ColClass, ps ...Product) {
	checkClasses(cls, n)
	for i := range ps {
		checkPlanes(ps[i].Planes)
		if c := ps[i].Planes[0].Cols; c != ps[0].Planes[0].Cols {
			panic(fmt.Sprintf("quant: MatMulShared: %q has rows of %d, %q of %d", ps[i].Planes[0].Name, c, ps[0].Planes[0].Name, ps[0].Planes[0].Cols))
		}
	}
	w.prep = prepared{}
	for i := range ps {
		w.runAs(ps[i].Planes, x, n, ps[i].Out, cls)
	}
	w.prep = prepared{}
}

// run prepares the activations of the job's path for planes (see MatMul)
// and hands the rows to the pool; tiny says whether F32/F16/BF16 take
// tinyBLAS (when the shape allows: n >= 2 for a plain product), and the
// first gemm columns of a repacked Q4_K product run the gemm chain, the
// others the gemv (n-n%4 for a plain product).
func (w *Work) run(planes []Matrix, x []float32, n int, out []float32, tiny bool, gemm int) {
	j := &w.job
	m := &planes[0]
	j.m, j.planes, j.x, j.n, j.out = m, planes, x, n, out[:n*m.Rows]
	k, rows := m.Cols, m.Rows
	_ = x[n*k-1]
	units := rows
	// A variant's own chain (variantDot) runs the plain rows, one column at
	// a time, as that variant's vec_dot does (not where llamafile's
	// tinyBLAS_Q0 takes two or more columns: variantVecDotOnly).
	vdot := variantDot(w.variant, m.Type)
	if tiny && !variantVecDotOnly(w.variant, m.Type) {
		vdot = nil
	}
	packed := w.level > LevelGeneric && vdot == nil
	for i := range planes {
		packed = packed && planes[i].packedRows() != nil
	}
	switch m.Type {
	case gguf.F32:
		j.path = pathF32Vec
		if tiny && k%8 == 0 && rows%4 == 0 {
			j.path = pathF32Tiny
		}
	case gguf.F16, gguf.BF16:
		if w.prep.xh != m.Type {
			w.xh = grow(w.xh, n*k)
			if m.Type == gguf.F16 {
				w.level.FP32ToFP16Row(x[:n*k], w.xh)
			} else {
				FP32ToBF16Row(x[:n*k], w.xh)
			}
			w.prep.xh = m.Type
		}
		j.path = pathF16Vec
		if m.Type == gguf.BF16 {
			j.path = pathBF16Vec
		}
		if tiny && k%8 == 0 && rows%4 == 0 {
			j.path++
		}
	default:
		if packed {
			units = m.packedRows().groups
			switch m.Type {
			case gguf.Q1_0, gguf.Q2_0:
				w.prepareQ8(x, k, n)
				j.path = pathPackedQ2
				if m.Type == gguf.Q1_0 {
					j.path = pathPackedQ1
				}
			case gguf.TQ2_0:
				if !w.prep.q8k {
					w.q8k.reset(k, n)
					for c := range n {
						w.q8k.quantize(w.level, c, x[c*k:(c+1)*k])
					}
					w.prep.q8k = true
				}
				j.path = pathPackedTQ2
			}
			break
		}
		if m.Type == gguf.Q1_0 && w.level == LevelAVX512 && vdot == nil {
			w.prepareQ8(x, k, n)
			if !w.prep.dy8 {
				w.q8.fillDy8()
				w.prep.dy8 = true
			}
			j.wnb = k / QK1_0
			j.path = pathPlainQ1
			break
		}
		if m.Type == gguf.Q4_K && rows%8 == 0 {
			w.quantizeQ4KRepack(j, gemm)
			break
		}
		bk, ok := blockKernels[m.Type]
		if !ok {
			panic(fmt.Sprintf("quant: MatMul on unsupported type %s", m.Type))
		}
		act := bk.act
		if k%act.block != 0 {
			panic(fmt.Sprintf("quant: MatMul: row length %d is not a multiple of the activation block %d", k, act.block))
		}
		j.qb = k / act.block * act.size
		quantize := act.quantize
		if vq := variantQuantizeQ8_0(w.variant); vq != nil && act.size == BlockQ8_0Size && act.block == QK8_0 {
			quantize = vq
		}
		if f := xqFormat(act); w.prep.xq != f {
			w.xq = grow(w.xq, n*j.qb)
			for c := range n {
				quantize(x[c*k:(c+1)*k], w.xq[c*j.qb:(c+1)*j.qb])
			}
			w.prep.xq = f
		}
		j.kernel = bk.dot
		switch {
		case vdot != nil:
			j.kernel = vdot
		case bk.repack != nil && rows%8 == 0:
			j.kernel = bk.repack
		case len(planes) == 1:
			j.rows = rowsDot(w.level, m.Type)
		}
		j.wnb = k / m.Type.BlockSize()
		j.path = pathBlock
	}
	j.c0, j.cn = 0, n
	switch j.path {
	case pathPackedQ1, pathPackedQ2, pathPackedTQ2:
		unit := 1
		if j.q1LUT() {
			unit = q1Band // the walk's shares are whole bands, read in memory order
		}
		if j.path != pathPackedQ1 || !hasQ1LUT(w.level) {
			w.runShares(units, unit)
			break
		}
		// The lookup-table tables of lutCols(k) columns at a time, built
		// here by the workers, then every group against them.
		lc := lutCols(k)
		// The walk of one plane in the integer form reads the float tables
		// of the blocks that form does not take, and only those.
		part := j.q1LUT() && q1Int(w.level)
		for c0 := 0; c0 < n; c0 += lc {
			j.c0, j.cn = c0, min(lc, n-c0)
			if !w.q8.lutHolds(j.c0, j.cn, part) {
				w.q8.growLUT(w.level, j.cn)
				w.act = actJob{a: &w.q8, l: w.level, lut: true, part: part, c0: j.c0, nc: j.cn}
				if part {
					w.share(&w.act, k/QK1_0)
				} else {
					w.share(&w.act, k/QK8_0)
				}
				w.act = actJob{}
				w.q8.lutFilled(j.c0, j.cn, part)
			}
			w.runShares(units, unit)
		}
	default:
		w.pool.Run(units, claimChunk(units, w.pool.Size()), j)
	}
	j.m, j.planes, j.one[0], j.x, j.out, j.kernel, j.rows = nil, nil, Matrix{}, nil, nil, nil, nil
}

// quantizeQ4KRepack prepares the reference's path for Q4_K weights with a
// row count that is a multiple of 8 (the CPU_REPACK buffer's q4_K_8x8
// layout): the columns in whole groups of four are quantized by
// ggml_quantize_mat_q8_K_4x8 and run ggml_gemm_q4_K_8x8_q8_K; the n%4
// columns left run ggml_gemv_q4_K_8x8_q8_K on quantize_row_q8_K's
// activations. The first gemm columns run the gemm (n-n%4 for a plain
// product; all or none of a run of classed columns).
func (w *Work) quantizeQ4KRepack(j *matJob, gemm int) {
	k := j.m.Cols
	j.wnb = k / QK_K
	j.qb = j.wnb * BlockQ8_KSize
	j.gemm = gemm
	j.path = pathQ4KRepack
	if w.prep.xq == xqQ4KRepack {
		return
	}
	w.xq = grow(w.xq, j.n*j.qb)
	for c := range j.n {
		if c < j.gemm {
			QuantizeRowQ8_K4x8(j.x[c*k:(c+1)*k], w.xq[c*j.qb:(c+1)*j.qb])
		} else {
			QuantizeRowQ8_K(j.x[c*k:(c+1)*k], w.xq[c*j.qb:(c+1)*j.qb])
		}
	}
	w.prep.xq = xqQ4KRepack
}

// prepareQ8 quantizes the n columns of k values in x into w.q8 (Q8_0, the
// packed and plain-layout Q1_0/Q2_0 kernels' layout) unless they are there,
// the blocks shared among the workers from actShareMin values on (each
// block's bytes are the same wherever it is quantized).
func (w *Work) prepareQ8(x []float32, k, n int) {
	if w.prep.q8 {
		return
	}
	w.q8.reset(k, n)
	w.act = actJob{a: &w.q8, l: w.level, x: x, k: k, n: n}
	if n*k < actShareMin {
		w.act.Do(0, 0, n*(k/QK8_0))
	} else {
		w.share(&w.act, n*(k/QK8_0))
	}
	w.act = actJob{}
	w.prep.q8 = true
}

// actShareMin is the number of activation values from which prepareQ8
// shares the quantization among the workers: a single stream's columns of
// 4096 (its Q/K/V, output and gate/up inputs) stay on the caller, as before
// the sharing was measured (docs/PERFORMANCE.md, "the serial work of a
// four-stream step"); its columns of 12288 and every batch of two or more
// are shared.
const actShareMin = 8192

// share runs j over units [0, units) on the pool, cut into Size() chunks
// that the workers and the caller take as they come free.
func (w *Work) share(j parallel.Job, units int) {
	size := w.pool.Size()
	w.pool.Run(units, (units+size-1)/size, j)
}

// Do computes rows (or packed groups) [lo, hi) for every column.
func (j *matJob) Do(worker, lo, hi int) {
	if j.parts > 0 {
		for part := lo; part < hi; part++ {
			j.doShare(worker, part)
		}
		return
	}
	switch j.path {
	case pathPackedQ1, pathPackedQ2, pathPackedTQ2:
		j.doPacked(worker, lo, hi)
		return
	}
	rows := j.m.Rows
	rb := j.m.RowBytes()
	if j.rows != nil {
		for c := range j.n {
			j.rows(j.m.Data[lo*rb:hi*rb], rb, j.w.xq[c*j.qb:(c+1)*j.qb], j.wnb, j.out[c*rows+lo:c*rows+hi])
		}
		return
	}
	if len(j.planes) == 1 && j.tinyRows(lo, hi) {
		return
	}
	for c := range j.n {
		o := j.out[c*rows : (c+1)*rows]
		for i := lo; i < hi; i++ {
			v := j.rowDot(j.planes[0].Data[i*rb:(i+1)*rb], c)
			for p := 1; p < len(j.planes); p++ {
				v += j.rowDot(j.planes[p].Data[i*rb:(i+1)*rb], c)
			}
			o[i] = v
		}
	}
}

// tinyRows runs rows [lo, hi) of a one-plane tinyBLAS path (pathF32Tiny,
// pathF16Tiny, pathBF16Tiny) against every column on the Work's level
// (tinyRowsF32, tinyRowsF16, tinyRowsBF16: the same bits as rowDot's) and
// reports whether the path was one of them.
func (j *matJob) tinyRows(lo, hi int) bool {
	k, rows, rb := j.m.Cols, j.m.Rows, j.m.RowBytes()
	a := j.planes[0].Data[lo*rb : hi*rb]
	switch j.path {
	case pathF32Tiny:
		tinyRowsF32(j.w.level, float32View(a), j.x[:j.n*k], k, hi-lo, j.n, j.out[lo:], rows)
	case pathF16Tiny:
		tinyRowsF16(j.w.level, uint16View(a), j.w.xh[:j.n*k], k, hi-lo, j.n, j.out[lo:], rows)
	case pathBF16Tiny:
		tinyRowsBF16(j.w.level, uint16View(a), j.w.xh[:j.n*k], k, hi-lo, j.n, j.out[lo:], rows)
	default:
		return false
	}
	return true
}

// rowDot is the plain paths' product of one weight row with column c.
func (j *matJob) rowDot(wr []byte, c int) float32 {
	k := j.m.Cols
	switch j.path {
	case pathF32Vec:
		return VecDotF32(float32View(wr), j.x[c*k:(c+1)*k])
	case pathF32Tiny:
		return TinyDotF32(float32View(wr), j.x[c*k:(c+1)*k])
	case pathF16Vec:
		return j.w.level.VecDotF16(uint16View(wr), j.w.xh[c*k:(c+1)*k])
	case pathF16Tiny:
		return TinyDotF16(uint16View(wr), j.w.xh[c*k:(c+1)*k])
	case pathBF16Vec:
		return VecDotBF16(uint16View(wr), j.w.xh[c*k:(c+1)*k])
	case pathBF16Tiny:
		return TinyDotBF16(uint16View(wr), j.w.xh[c*k:(c+1)*k])
	case pathBlock:
		return j.kernel(wr, j.w.xq[c*j.qb:(c+1)*j.qb], j.wnb)
	case pathPlainQ1:
		return dotQ1_0Plain(wr, &j.w.q8, c, j.wnb)
	case pathQ4KRepack:
		a := j.w.xq[c*j.qb : (c+1)*j.qb]
		if c < j.gemm {
			return RepackGemmQ4_KQ8_K(wr, a, j.wnb)
		}
		return RepackGemvQ4_KQ8_K(wr, a, j.wnb)
	}
	panic("quant: matJob: unknown path")
}

// doPacked runs the tiles on groups [lo, hi), tileCols columns at a time,
// every plane in turn, summing the planes' outputs in plane order.
func (j *matJob) doPacked(worker, lo, hi int) {
	w, rows := j.w, j.m.Rows
	nb := j.m.packedRows().nb
	nc := min(j.cn, tileCols)
	np := len(j.planes)
	if j.q1LUT() {
		j.doPackedQ1LUT(worker, lo, hi)
		return
	}
	sumLen := 0
	if np > 1 {
		sumLen = 16 * nc
	}
	scr := w.scratch(worker, 16*nc+128*nc+sumLen)
	tile, acc, sum := scr[:16*nc], scr[16*nc:16*nc+128*nc], scr[16*nc+128*nc:]
	for g := lo; g < hi; g++ {
		r0 := g * packRows
		nr := min(packRows, rows-r0)
		for c0 := j.c0; c0 < j.c0+j.cn; c0 += nc {
			cn := min(nc, j.c0+j.cn-c0)
			for p := range np {
				pk := j.planes[p].packedRows()
				switch j.path {
				case pathPackedQ1:
					tileQ1_0(w.level, pk, g, &w.q8, c0, cn, tile)
				case pathPackedQ2:
					tileQ2_0(w.level, pk.group(g), nb, &w.q8, c0, cn, tile)
				case pathPackedTQ2:
					tileTQ2_0(w.level, pk.group(g), nb, &w.q8k, c0, cn, tile, acc)
				}
				switch {
				case np == 1:
				case p == 0:
					copy(sum[:16*cn], tile[:16*cn])
				default:
					for i, v := range tile[:16*cn] {
						sum[i] += v
					}
				}
			}
			res := tile
			if np > 1 {
				res = sum
			}
			for c := range cn {
				copy(j.out[(c0+c)*rows+r0:(c0+c)*rows+r0+nr], res[16*c:16*c+nr])
			}
		}
		if j.path == pathPackedTQ2 {
			j.inexactTQ2(r0, nr)
		}
	}
}

// scratch is worker's tile scratch (Work.scr) of at least n floats, grown
// only when it is short. The slice headers of all workers share a cache
// line: a store on every call (one per 16-row group) would move that line
// between the workers' cores on every group.
func (w *Work) scratch(worker, n int) []float32 {
	if s := w.scr[worker]; cap(s) >= n {
		return s[:n]
	}
	w.scr[worker] = make([]float32, n, n+n/4)
	return w.scr[worker]
}

// q1LUT reports whether the job's groups run the Q1_0 lookup-table walk
// (doPackedQ1LUT): one packed Q1_0 plane at a level that has it; planes of
// Q1_0 run group by group.
func (j *matJob) q1LUT() bool {
	return j.path == pathPackedQ1 && hasQ1LUT(j.w.level) && len(j.planes) == 1
}

// doPackedQ1LUT runs the Q1_0 lookup-table tile on groups [lo, hi) for
// the pass's columns: band by band (q1Band groups; a claim that does not
// start or end on a band's edge runs the part it holds), the columns
// q1LUTCols at a time through tileQ1_0LUTGroups.
func (j *matJob) doPackedQ1LUT(worker, lo, hi int) {
	j.doPackedQ1LUTRange(worker, lo, hi, hi, true)
}

// q1LUTMaxCols is the most columns q1LUTCols gives at any level.
const q1LUTMaxCols = 4

// doPackedQ1LUTRange is doPackedQ1LUT on groups [lo, hi) whose walk may
// prefetch up to group end (>= hi: the rest of the caller's share), from
// the claim's first segments on when start.
func (j *matJob) doPackedQ1LUTRange(worker, lo, hi, end int, start bool) {
	w, rows := j.w, j.m.Rows
	p := j.m.packedRows()
	scr := w.scratch(worker, (16+128)*q1LUTMaxCols*q1Band+64*q1Chunk)
	tile, acc := scr[:16*q1LUTMaxCols*q1Band], scr[16*q1LUTMaxCols*q1Band:]
	for g0 := lo; g0 < hi; {
		g1 := min(hi, (g0/q1Band+1)*q1Band)
		ng := g1 - g0
		for c := j.c0; c < j.c0+j.cn; {
			nc := q1LUTCols(w.level, j.c0+j.cn-c)
			tileQ1_0LUTGroups(w.level, p, &w.q8, c, nc, g0, g1, end, start && g0 == lo && c == j.c0, acc, tile)
			// Column i's rows of the band's groups are contiguous in tile
			// (16 per group) and in out: one copy each.
			r0, r1 := g0*packRows, min(g1*packRows, rows)
			for i := range nc {
				copy(j.out[(c+i)*rows+r0:(c+i)*rows+r1], tile[16*ng*i:16*ng*i+r1-r0])
			}
			c += nc
		}
		g0 = g1
	}
}

// inexactTQ2 recomputes, with the plain kernel, the outputs of the columns
// whose Q8_K bsums the packed kernel cannot take (never for columns MatMul
// quantized itself; kept so that the tile never answers for them).
func (j *matJob) inexactTQ2(r0, nr int) {
	a, m := &j.w.q8k, j.m
	rb := m.RowBytes()
	qb := a.k / QK_K * BlockQ8_KSize
	for c := range j.n {
		if a.exact[c] {
			continue
		}
		for i := r0; i < r0+nr; i++ {
			var v float32
			for p := range j.planes {
				d := VecDotTQ2_0Q8_K(j.planes[p].Data[i*rb:(i+1)*rb], a.raw[c*qb:(c+1)*qb], a.k/QK_K)
				if p == 0 {
					v = d
				} else {
					v += d
				}
			}
			j.out[c*m.Rows+i] = v
		}
	}
}

// defaultLevel is BANKML_CPU's level (or the best the CPU has), read once.
var defaultLevel = sync.OnceValues(LevelFromEnv)

// DefaultLevel is the level MatMul runs at: the one BANKML_CPU forces, or
// the best this CPU has. Its error is LevelFromEnv's (an unknown name, a
// level the CPU lacks); programs should check it at start-up.
func DefaultLevel() (Level, error) { return defaultLevel() }

// MatMul is Work.MatMul on a temporary Work at DefaultLevel with pool (it
// allocates the Work's buffers on every call; keep a Work to avoid that).
// It panics when BANKML_CPU is invalid (see DefaultLevel).
func MatMul(m *Matrix, x []float32, n int, out []float32, pool *parallel.Pool) {
	l, err := DefaultLevel()
	if err != nil {
		panic(err)
	}
	w, err := NewWork(l, pool)
	if err != nil {
		panic(err)
	}
	w.MatMul(m, x, n, out)
}
