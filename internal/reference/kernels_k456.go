package reference

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Oracles of the Q4_K, Q5_K and Q6_K formats (256 weights per super-block,
// Q8_K activations), bound lazily on first use so that a missing symbol fails
// only these tests:
//
//   - dequantize_row_q{4,5,6}_K and quantize_row_q{4,5,6}_K_ref
//     (libggml-base.so);
//   - ggml_vec_dot_q{4,5,6}_K_q8_K of the haswell variant and their exported
//     *_generic scalar twins (same library, both float orders);
//   - quantize_row_q8_K of the haswell variant, the activation quantizer of
//     vec_dot and of the repacked gemv;
//   - the repacked Q4_K kernels the reference runs on AVX2 for weights whose
//     row count is a multiple of 8: ggml_quantize_mat_q8_K_4x8 (four
//     activation rows interleaved), ggml_gemv_q4_K_8x8_q8_K and
//     ggml_gemm_q4_K_8x8_q8_K on block_q4_Kx8 data.
type k456 struct {
	once sync.Once
	err  error

	dequant  [3]func(x, y unsafe.Pointer, k int64)
	quantRef [3]func(x, y unsafe.Pointer, k int64)
	dot      [3]func(n int32, s unsafe.Pointer, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32)
	dotGen   [3]func(n int32, s unsafe.Pointer, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32)

	quantQ8K   func(x, y unsafe.Pointer, k int64)
	quantMat4  func(x, y unsafe.Pointer, k int64)
	gemvQ4K8x8 func(n int32, s unsafe.Pointer, bs uintptr, vx, vy unsafe.Pointer, nr, nc int32)
	gemmQ4K8x8 func(n int32, s unsafe.Pointer, bs uintptr, vx, vy unsafe.Pointer, nr, nc int32)
}

var k456Kernels k456

// Indices of the three formats in the k456 tables.
const (
	k456Q4 = iota
	k456Q5
	k456Q6
)

func (k *Kernels) k456() (*k456, error) {
	kk := &k456Kernels
	kk.once.Do(func() {
		binds := []binding{
			{&kk.quantQ8K, "quantize_row_q8_K"},
			{&kk.quantMat4, "ggml_quantize_mat_q8_K_4x8"},
			{&kk.gemvQ4K8x8, "ggml_gemv_q4_K_8x8_q8_K"},
			{&kk.gemmQ4K8x8, "ggml_gemm_q4_K_8x8_q8_K"},
		}
		for i, t := range []string{"q4_K", "q5_K", "q6_K"} {
			binds = append(binds,
				binding{&kk.dequant[i], "dequantize_row_" + t},
				binding{&kk.quantRef[i], "quantize_row_" + t + "_ref"},
				binding{&kk.dot[i], "ggml_vec_dot_" + t + "_q8_K"},
				binding{&kk.dotGen[i], "ggml_vec_dot_" + t + "_q8_K_generic"},
			)
		}
		kk.err = k.bindAll(binds)
	})
	if kk.err != nil {
		return nil, fmt.Errorf("reference: Q4_K/Q5_K/Q6_K kernels: %w", kk.err)
	}
	return kk, nil
}

func (k *Kernels) mustK456() *k456 {
	kk, err := k.k456()
	if err != nil {
		panic(err)
	}
	return kk
}

// K456Err reports whether the Q4_K/Q5_K/Q6_K oracles bind; their methods
// panic when they do not.
func (k *Kernels) K456Err() error {
	_, err := k.k456()
	return err
}

// k456Row is callRow that does nothing for n == 0.
func k456Row[X, Y any](f rowFunc, x []X, y []Y, n int) {
	if n == 0 {
		return
	}
	callRow(f, x, y, n)
}

// DequantizeRowQ4_K is dequantize_row_q4_K over len(y) values (a multiple of
// 256; x holds len(y)/256 blocks of 144 bytes).
func (k *Kernels) DequantizeRowQ4_K(x []byte, y []float32) {
	k456Row(k.mustK456().dequant[k456Q4], x, y, len(y))
}

// DequantizeRowQ5_K is dequantize_row_q5_K over len(y) values (a multiple of
// 256; x holds len(y)/256 blocks of 176 bytes).
func (k *Kernels) DequantizeRowQ5_K(x []byte, y []float32) {
	k456Row(k.mustK456().dequant[k456Q5], x, y, len(y))
}

// DequantizeRowQ6_K is dequantize_row_q6_K over len(y) values (a multiple of
// 256; x holds len(y)/256 blocks of 210 bytes).
func (k *Kernels) DequantizeRowQ6_K(x []byte, y []float32) {
	k456Row(k.mustK456().dequant[k456Q6], x, y, len(y))
}

// QuantizeRowQ4_KRef is quantize_row_q4_K_ref; y needs len(x)/256*144 bytes.
func (k *Kernels) QuantizeRowQ4_KRef(x []float32, y []byte) {
	k456Row(k.mustK456().quantRef[k456Q4], x, y, len(x))
}

// QuantizeRowQ5_KRef is quantize_row_q5_K_ref; y needs len(x)/256*176 bytes.
func (k *Kernels) QuantizeRowQ5_KRef(x []float32, y []byte) {
	k456Row(k.mustK456().quantRef[k456Q5], x, y, len(x))
}

// QuantizeRowQ6_KRef is quantize_row_q6_K_ref; y needs len(x)/256*210 bytes.
func (k *Kernels) QuantizeRowQ6_KRef(x []float32, y []byte) {
	k456Row(k.mustK456().quantRef[k456Q6], x, y, len(x))
}

// K456QuantizeRowQ8_K is the haswell library's quantize_row_q8_K (y needs
// len(x)/256*292 bytes), bound with the Q4_K–Q6_K oracles so that their tests
// build their activations with the reference's own quantizer.
func (k *Kernels) K456QuantizeRowQ8_K(x []float32, y []byte) {
	k456Row(k.mustK456().quantQ8K, x, y, len(x))
}

// VecDotQ4_KQ8_K is the haswell variant's ggml_vec_dot_q4_K_q8_K over n
// values (n/256 Q4_K blocks against n/256 Q8_K blocks).
func (k *Kernels) VecDotQ4_KQ8_K(n int, x, y []byte) float32 {
	return callDot(k.mustK456().dot[k456Q4], n, x, y)
}

// VecDotQ4_KQ8_KGeneric is ggml_vec_dot_q4_K_q8_K_generic of the haswell
// library over n values.
func (k *Kernels) VecDotQ4_KQ8_KGeneric(n int, x, y []byte) float32 {
	return callDot(k.mustK456().dotGen[k456Q4], n, x, y)
}

// VecDotQ5_KQ8_K is the haswell variant's ggml_vec_dot_q5_K_q8_K over n
// values.
func (k *Kernels) VecDotQ5_KQ8_K(n int, x, y []byte) float32 {
	return callDot(k.mustK456().dot[k456Q5], n, x, y)
}

// VecDotQ5_KQ8_KGeneric is ggml_vec_dot_q5_K_q8_K_generic of the haswell
// library over n values.
func (k *Kernels) VecDotQ5_KQ8_KGeneric(n int, x, y []byte) float32 {
	return callDot(k.mustK456().dotGen[k456Q5], n, x, y)
}

// VecDotQ6_KQ8_K is the haswell variant's ggml_vec_dot_q6_K_q8_K over n
// values.
func (k *Kernels) VecDotQ6_KQ8_K(n int, x, y []byte) float32 {
	return callDot(k.mustK456().dot[k456Q6], n, x, y)
}

// VecDotQ6_KQ8_KGeneric is ggml_vec_dot_q6_K_q8_K_generic of the haswell
// library over n values.
func (k *Kernels) VecDotQ6_KQ8_KGeneric(n int, x, y []byte) float32 {
	return callDot(k.mustK456().dotGen[k456Q6], n, x, y)
}

// BlockQ8_Kx4Size is sizeof(block_q8_Kx4) (repack.h): float d[4], int8
// qs[1024] (four rows interleaved eight bytes at a time), int16 bsums[64].
const BlockQ8_Kx4Size = 4*4 + 4*256 + 64*2

// BlockQ4_Kx8Size is sizeof(block_q4_Kx8) (repack.h): f16 d[8], f16 dmin[8],
// 96 bytes of scales and mins regrouped per sub-block, qs[1024] (eight rows
// interleaved eight bytes at a time).
const BlockQ4_Kx8Size = 8*2 + 8*2 + 96 + 1024

// QuantizeMatQ8_K4x8 is the haswell variant's ggml_quantize_mat_q8_K_4x8:
// four rows of k floats (x holds them one after the other, 4k values)
// quantized into k/256 block_q8_Kx4 (y needs k/256*BlockQ8_Kx4Size bytes).
func (k *Kernels) QuantizeMatQ8_K4x8(x []float32, rowLen int, y []byte) {
	if len(x) < 4*rowLen || len(y) < rowLen/256*BlockQ8_Kx4Size {
		panic(fmt.Sprintf("reference: QuantizeMatQ8_K4x8: %d floats and %d bytes for rows of %d", len(x), len(y), rowLen))
	}
	k456Row(k.mustK456().quantMat4, x, y, rowLen)
}

// GemvQ4_K8x8Q8_K is the haswell variant's ggml_gemv_q4_K_8x8_q8_K: one
// activation row vy (n/256 block_q8_K) against nc weight rows repacked in
// groups of eight (vx: nc/8 · n/256 block_q4_Kx8, group after group), writing
// s[0..nc). nc must be a multiple of 8.
func (k *Kernels) GemvQ4_K8x8Q8_K(n int, s []float32, vx, vy []byte, nc int) {
	if nc%8 != 0 || len(s) < nc || len(vx) < nc/8*(n/256)*BlockQ4_Kx8Size || len(vy) < n/256*292 {
		panic(fmt.Sprintf("reference: GemvQ4_K8x8Q8_K: bad shapes n=%d nc=%d", n, nc))
	}
	k.mustK456().gemvQ4K8x8(int32(n), unsafe.Pointer(&s[0]), uintptr(nc), unsafe.Pointer(&vx[0]), unsafe.Pointer(&vy[0]), 1, int32(nc))
	runtime.KeepAlive(vx)
	runtime.KeepAlive(vy)
	runtime.KeepAlive(s)
}

// GemmQ4_K8x8Q8_K is the haswell variant's ggml_gemm_q4_K_8x8_q8_K: nr
// activation rows (a multiple of 4; vy holds nr/4 groups of n/256
// block_q8_Kx4, as ggml_quantize_mat_q8_K_4x8 writes them) against nc weight
// rows repacked in groups of eight, writing s[r*bs + c]. nc must be a
// multiple of 8.
func (k *Kernels) GemmQ4_K8x8Q8_K(n int, s []float32, bs int, vx, vy []byte, nr, nc int) {
	if nr%4 != 0 || nc%8 != 0 || bs < nc || len(s) < (nr-1)*bs+nc || len(vx) < nc/8*(n/256)*BlockQ4_Kx8Size || len(vy) < nr/4*(n/256)*BlockQ8_Kx4Size {
		panic(fmt.Sprintf("reference: GemmQ4_K8x8Q8_K: bad shapes n=%d nr=%d nc=%d bs=%d", n, nr, nc, bs))
	}
	k.mustK456().gemmQ4K8x8(int32(n), unsafe.Pointer(&s[0]), uintptr(bs), unsafe.Pointer(&vx[0]), unsafe.Pointer(&vy[0]), int32(nr), int32(nc))
	runtime.KeepAlive(vx)
	runtime.KeepAlive(vy)
	runtime.KeepAlive(s)
}

// k456Graph binds ggml's graph API and the CPU_REPACK buffer type, for
// GraphMulMatK456; bound apart from the kernels so that a missing graph
// symbol fails only the matmul-path tests.
type k456Graph struct {
	once sync.Once
	err  error

	ggmlGraphAPI

	repackBuft   func() uintptr
	allocCtxBuft func(ctx, buft uintptr) uintptr
	tensorSet    func(t uintptr, data unsafe.Pointer, offset, size uintptr)
	bufferFree   func(buf uintptr)
}

var k456GraphKernels k456Graph

func (k *Kernels) k456Graph() (*k456Graph, error) {
	g := &k456GraphKernels
	g.once.Do(func() {
		if g.err = g.ggmlGraphAPI.bind(k); g.err != nil {
			return
		}
		if g.err = k.bindAll([]binding{
			{&g.repackBuft, "_Z35ggml_backend_cpu_repack_buffer_typev"}, // ggml_backend_cpu_repack_buffer_type()
			{&g.allocCtxBuft, "ggml_backend_alloc_ctx_tensors_from_buft"},
			{&g.tensorSet, "ggml_backend_tensor_set"},
			{&g.bufferFree, "ggml_backend_buffer_free"},
		}); g.err != nil {
			return
		}
	})
	if g.err != nil {
		return nil, fmt.Errorf("reference: graph API for Q4_K/Q5_K/Q6_K: %w", g.err)
	}
	return g, nil
}

// GraphMulMatK456 computes ggml_mul_mat(w, x) with the haswell CPU library's
// ggml_graph_compute_with_ctx on threads threads: w is rows rows of cols
// elements of ggml type typ (its raw bytes), x holds n columns of cols floats;
// out[j*rows+i] = dot(row i, column j). With repack false the weight lives in
// a plain ggml context (ggml_compute_forward_mul_mat: llamafile's sgemm where
// it accepts the type and shape, else the type's vec_dot). With repack true it
// is allocated in the CPU_REPACK buffer type (ggml_backend_cpu_repack_buffer_type),
// as llama.cpp loads a weight whose type and shape the repack selector accepts
// (ggml_repack_get_optimal_repack_type; in the haswell library: Q4_0, Q4_K and
// IQ4_NL with rows a multiple of 8): the data is repacked on upload and the
// repacked gemv/gemm kernels run. Other weights never go to that buffer (its
// set_tensor would dereference a null repack trait), so repack with any other
// type or row count is refused with an error. len(w) must be ggml_nbytes of
// the weight tensor.
func (k *Kernels) GraphMulMatK456(typ int32, rows, cols int, w []byte, x []float32, n, threads int, repack bool) ([]float32, error) {
	g, err := k.k456Graph()
	if err != nil {
		return nil, err
	}
	if len(x) != n*cols {
		return nil, fmt.Errorf("reference: GraphMulMatK456: %d activations, want %d", len(x), n*cols)
	}
	const ggmlTypeF32 = 0
	if repack && !((typ == 2 || typ == 12 || typ == 20) && rows%8 == 0) {
		return nil, fmt.Errorf("reference: GraphMulMatK456: type %d with %d rows is not repacked on AVX2", typ, rows)
	}
	var a uintptr
	if repack {
		wctx := g.ggmlInit(ggmlInitParams{MemSize: 1 << 16, NoAlloc: true})
		if wctx == 0 {
			return nil, fmt.Errorf("reference: ggml_init failed")
		}
		defer g.ggmlFree(wctx)
		a = g.ggmlNewTensor2(wctx, typ, int64(cols), int64(rows))
		buf := g.allocCtxBuft(wctx, g.repackBuft())
		if a == 0 || buf == 0 {
			return nil, fmt.Errorf("reference: allocating the weight in CPU_REPACK failed")
		}
		defer g.bufferFree(buf)
		if nb := int(g.ggmlNbytes(a)); nb != len(w) {
			return nil, fmt.Errorf("reference: GraphMulMatK456: %d weight bytes, ggml needs %d", len(w), nb)
		}
		g.tensorSet(a, unsafe.Pointer(&w[0]), 0, uintptr(len(w)))
	}
	// Tensors, a default graph (2048 nodes) and the work buffer (n quantized
	// activation rows plus per-thread padding) fit in this.
	mem := uintptr(len(w) + 4*len(x) + 4*rows*n + 2*4*len(x) + 16<<20)
	ctx := g.ggmlInit(ggmlInitParams{MemSize: mem})
	if ctx == 0 {
		return nil, fmt.Errorf("reference: ggml_init(%d bytes) failed", mem)
	}
	defer g.ggmlFree(ctx)
	if !repack {
		a = g.ggmlNewTensor2(ctx, typ, int64(cols), int64(rows))
		if a == 0 {
			return nil, fmt.Errorf("reference: ggml_new_tensor_2d failed")
		}
		if nb := int(g.ggmlNbytes(a)); nb != len(w) {
			return nil, fmt.Errorf("reference: GraphMulMatK456: %d weight bytes, ggml needs %d", len(w), nb)
		}
		copy(unsafe.Slice((*byte)(cPointer(g.ggmlGetData(a))), len(w)), w)
	}
	b := g.ggmlNewTensor2(ctx, ggmlTypeF32, int64(cols), int64(n))
	if b == 0 {
		return nil, fmt.Errorf("reference: ggml_new_tensor_2d failed")
	}
	copy(unsafe.Slice((*float32)(cPointer(g.ggmlGetData(b))), len(x)), x)
	c := g.ggmlMulMat(ctx, a, b)
	gr := g.ggmlNewGraph(ctx)
	g.ggmlBuildFwd(gr, c)
	if st := g.ggmlCompute(ctx, gr, int32(threads)); st != 0 {
		return nil, fmt.Errorf("reference: ggml_graph_compute_with_ctx: status %d", st)
	}
	out := make([]float32, rows*n)
	copy(out, unsafe.Slice((*float32)(cPointer(g.ggmlGetData(c))), rows*n))
	runtime.KeepAlive(w)
	runtime.KeepAlive(x)
	return out, nil
}
