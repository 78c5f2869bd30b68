package reference

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Oracles of the 1-bit and 2-bit formats (Q1_0: 128 per block, sign bits;
// Q2_0: 64 per block, codes 0..3 for -1, 0, +1, +2), bound lazily on first
// use so that a missing symbol fails only these tests.
//
//   - dequantize_row_q1_0/q2_0, quantize_row_q1_0_ref/q2_0_ref (libggml-base);
//   - ggml_vec_dot_q1_0_q8_0 and ggml_vec_dot_q2_0_q8_0 of the haswell
//     variant (the bit-exact target), and ggml_vec_dot_q2_0_q8_0 of the x64
//     variant (no FMA: a second model of the scalar loop, not the target);
//   - GraphMulMat: a whole GGML_OP_MUL_MAT computed by the haswell CPU
//     library's ggml_graph_compute_with_ctx, which shows which kernel
//     ggml_compute_forward_mul_mat takes for a type and a shape.
type lowbit struct {
	once sync.Once
	err  error

	dequantQ1_0  func(x, y unsafe.Pointer, k int64)
	dequantQ2_0  func(x, y unsafe.Pointer, k int64)
	quantQ1_0Ref func(x, y unsafe.Pointer, k int64)
	quantQ2_0Ref func(x, y unsafe.Pointer, k int64)
	dotQ1_0      func(n int32, s unsafe.Pointer, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32)
	dotQ2_0      func(n int32, s unsafe.Pointer, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32)
	// The x64 variant is opened only when its kernel is first asked for:
	// once mapped, reference.Load refuses to run a model in this process
	// (it checks that the haswell library is the only CPU variant mapped).
	x64Once    sync.Once
	x64Err     error
	dotQ2_0X64 func(n int32, s unsafe.Pointer, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32)

	ggmlGraphAPI // ggml's graph API (base library) and the CPU library's compute
}

var lowbitKernels lowbit

func (k *Kernels) lowbit() (*lowbit, error) {
	lb := &lowbitKernels
	lb.once.Do(func() {
		if lb.err = k.bindAll([]binding{
			{&lb.dequantQ1_0, "dequantize_row_q1_0"},
			{&lb.dequantQ2_0, "dequantize_row_q2_0"},
			{&lb.quantQ1_0Ref, "quantize_row_q1_0_ref"},
			{&lb.quantQ2_0Ref, "quantize_row_q2_0_ref"},
			{&lb.dotQ1_0, "ggml_vec_dot_q1_0_q8_0"},
			{&lb.dotQ2_0, "ggml_vec_dot_q2_0_q8_0"},
		}); lb.err != nil {
			return
		}
		if lb.err = lb.ggmlGraphAPI.bind(k); lb.err != nil {
			return
		}
	})
	if lb.err != nil {
		return nil, fmt.Errorf("reference: low-bit kernels: %w", lb.err)
	}
	return lb, nil
}

func (k *Kernels) mustLowbit() *lowbit {
	lb, err := k.lowbit()
	if err != nil {
		panic(err)
	}
	return lb
}

// LowBitErr reports whether the Q1_0/Q2_0 oracles bind; the other low-bit
// methods panic when they do not.
func (k *Kernels) LowBitErr() error {
	_, err := k.lowbit()
	return err
}

// DequantizeRowQ1_0 is dequantize_row_q1_0 over len(y) values (a multiple of 128).
func (k *Kernels) DequantizeRowQ1_0(x []byte, y []float32) {
	callRow(k.mustLowbit().dequantQ1_0, x, y, len(y))
}

// DequantizeRowQ2_0 is dequantize_row_q2_0 over len(y) values (a multiple of 64).
func (k *Kernels) DequantizeRowQ2_0(x []byte, y []float32) {
	callRow(k.mustLowbit().dequantQ2_0, x, y, len(y))
}

// QuantizeRowQ1_0Ref is quantize_row_q1_0_ref (also the CPU library's
// quantize_row_q1_0); y needs len(x)/128*18 bytes.
func (k *Kernels) QuantizeRowQ1_0Ref(x []float32, y []byte) {
	callRow(k.mustLowbit().quantQ1_0Ref, x, y, len(x))
}

// QuantizeRowQ2_0Ref is quantize_row_q2_0_ref (also the CPU library's
// quantize_row_q2_0); y needs len(x)/64*18 bytes.
func (k *Kernels) QuantizeRowQ2_0Ref(x []float32, y []byte) {
	callRow(k.mustLowbit().quantQ2_0Ref, x, y, len(x))
}

// VecDotQ1_0Q8_0 is the haswell variant's ggml_vec_dot_q1_0_q8_0 over n
// values (n/128 Q1_0 blocks against n/32 Q8_0 blocks).
func (k *Kernels) VecDotQ1_0Q8_0(n int, x, y []byte) float32 {
	return callDot(k.mustLowbit().dotQ1_0, n, x, y)
}

// VecDotQ2_0Q8_0 is the haswell variant's ggml_vec_dot_q2_0_q8_0 over n
// values (n/64 Q2_0 blocks against n/32 Q8_0 blocks).
func (k *Kernels) VecDotQ2_0Q8_0(n int, x, y []byte) float32 {
	return callDot(k.mustLowbit().dotQ2_0, n, x, y)
}

// VecDotQ2_0Q8_0X64 is ggml_vec_dot_q2_0_q8_0 of the x64 variant
// (libggml-cpu-x64.so: SSE2, no FMA): the same scalar loop with every
// multiply and add rounded separately. A second model, not the target.
// It opens libggml-cpu-x64.so on first use, after which [Lib.LoadModel]
// refuses to run in this process; it panics when the variant cannot be bound.
func (k *Kernels) VecDotQ2_0Q8_0X64(n int, x, y []byte) float32 {
	lb := k.mustLowbit()
	lb.x64Once.Do(func() {
		// The x64 library is opened without RTLD_GLOBAL after the haswell
		// one, so its references to ggml_table_f32_f16 resolve to the table
		// haswell's ggml_cpu_init filled (the two tables are built alike).
		h, err := k.OpenVariant("libggml-cpu-x64.so")
		if err != nil {
			lb.x64Err = err
			return
		}
		lb.x64Err = k.BindIn(h, &lb.dotQ2_0X64, "ggml_vec_dot_q2_0_q8_0")
	})
	if lb.x64Err != nil {
		panic(fmt.Errorf("reference: x64 variant: %w", lb.x64Err))
	}
	return callDot(lb.dotQ2_0X64, n, x, y)
}

// GraphMulMat computes ggml_mul_mat(w, x) with the haswell CPU library's
// ggml_graph_compute_with_ctx on threads threads, in a plain ggml context
// (no backend buffer, so no repacking): w is rows rows of cols elements of
// ggml type typ (its raw bytes), x holds n columns of cols floats. It returns
// out[j*rows+i] = dot(row i, column j) as ggml_compute_forward_mul_mat
// computes it (llamafile's sgemm where it accepts the type and shape, else
// the type's vec_dot). len(w) must be ggml_nbytes of the weight tensor.
func (k *Kernels) GraphMulMat(typ int32, rows, cols int, w []byte, x []float32, n, threads int) ([]float32, error) {
	lb, err := k.lowbit()
	if err != nil {
		return nil, err
	}
	if len(x) != n*cols {
		return nil, fmt.Errorf("reference: GraphMulMat: %d activations, want %d", len(x), n*cols)
	}
	// Tensors, a default graph (2048 nodes) and the work buffer (n Q8_0
	// rows, or any other vec_dot type, plus per-thread padding) fit in this.
	mem := uintptr(len(w) + 4*len(x) + 4*rows*n + 2*4*len(x) + 16<<20)
	ctx := lb.ggmlInit(ggmlInitParams{MemSize: mem})
	if ctx == 0 {
		return nil, fmt.Errorf("reference: ggml_init(%d bytes) failed", mem)
	}
	defer lb.ggmlFree(ctx)
	const ggmlTypeF32 = 0
	a := lb.ggmlNewTensor2(ctx, typ, int64(cols), int64(rows))
	b := lb.ggmlNewTensor2(ctx, ggmlTypeF32, int64(cols), int64(n))
	if a == 0 || b == 0 {
		return nil, fmt.Errorf("reference: ggml_new_tensor_2d failed")
	}
	if nb := int(lb.ggmlNbytes(a)); nb != len(w) {
		return nil, fmt.Errorf("reference: GraphMulMat: %d weight bytes, ggml needs %d", len(w), nb)
	}
	copy(unsafe.Slice((*byte)(cPointer(lb.ggmlGetData(a))), len(w)), w)
	copy(unsafe.Slice((*float32)(cPointer(lb.ggmlGetData(b))), len(x)), x)
	c := lb.ggmlMulMat(ctx, a, b)
	g := lb.ggmlNewGraph(ctx)
	lb.ggmlBuildFwd(g, c)
	if st := lb.ggmlCompute(ctx, g, int32(threads)); st != 0 {
		return nil, fmt.Errorf("reference: ggml_graph_compute_with_ctx: status %d", st)
	}
	out := make([]float32, rows*n)
	copy(out, unsafe.Slice((*float32)(cPointer(lb.ggmlGetData(c))), rows*n))
	runtime.KeepAlive(w)
	runtime.KeepAlive(x)
	return out, nil
}
