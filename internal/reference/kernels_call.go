package reference

import (
	"runtime"
	"unsafe"
)

// Shared call helpers of the format families' bindings (kernels.go,
// kernels_*.go): every oracle is one of two C signatures, called the same
// way with the Go slices kept alive across the call.

// rowFunc is the C signature of ggml's row converters (dequantize_row_*,
// quantize_row_*, the bf16 row converters):
// void f(const void * x, void * y, int64_t k).
type rowFunc func(x, y unsafe.Pointer, k int64)

// dotFunc is ggml_vec_dot_t: void f(int n, float * s, size_t bs,
// const void * x, size_t bx, const void * y, size_t by, int nrc).
type dotFunc func(n int32, s unsafe.Pointer, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32)

// callRow calls a row converter on n elements; x and y must be non-empty and
// hold them.
func callRow[X, Y any](f rowFunc, x []X, y []Y, n int) {
	f(unsafe.Pointer(&x[0]), unsafe.Pointer(&y[0]), int64(n))
	runtime.KeepAlive(x)
	runtime.KeepAlive(y)
}

// callDot calls a vec_dot kernel with nrc = 1 (bs, bx, by 0) over n values;
// x and y must be non-empty.
func callDot[X any](f dotFunc, n int, x, y []X) float32 {
	var s float32
	f(int32(n), unsafe.Pointer(&s), 0, unsafe.Pointer(&x[0]), 0, unsafe.Pointer(&y[0]), 0, 1)
	runtime.KeepAlive(x)
	runtime.KeepAlive(y)
	return s
}

// ggmlGraphAPI binds ggml's graph API (libggml-base.so) and the CPU
// library's ggml_graph_compute_with_ctx, which the graph oracles
// (GraphMulMat, GraphMulMatK456) build and run a GGML_OP_MUL_MAT with.
type ggmlGraphAPI struct {
	ggmlInit       func(p ggmlInitParams) uintptr
	ggmlFree       func(ctx uintptr)
	ggmlNewTensor2 func(ctx uintptr, typ int32, ne0, ne1 int64) uintptr
	ggmlGetData    func(t uintptr) uintptr
	ggmlNbytes     func(t uintptr) uintptr
	ggmlMulMat     func(ctx, a, b uintptr) uintptr
	ggmlNewGraph   func(ctx uintptr) uintptr
	ggmlBuildFwd   func(g, t uintptr)
	ggmlCompute    func(ctx, g uintptr, nThreads int32) int32
}

// ggmlInitParams is struct ggml_init_params (ggml.h): mem_size, mem_buffer,
// no_alloc.
type ggmlInitParams struct {
	MemSize   uintptr
	MemBuffer uintptr
	NoAlloc   bool
}

// bind binds every function of the graph API, stopping at the first symbol
// that does not bind.
func (g *ggmlGraphAPI) bind(k *Kernels) error {
	return k.bindAll([]binding{
		{&g.ggmlInit, "ggml_init"},
		{&g.ggmlFree, "ggml_free"},
		{&g.ggmlNewTensor2, "ggml_new_tensor_2d"},
		{&g.ggmlGetData, "ggml_get_data"},
		{&g.ggmlNbytes, "ggml_nbytes"},
		{&g.ggmlMulMat, "ggml_mul_mat"},
		{&g.ggmlNewGraph, "ggml_new_graph"},
		{&g.ggmlBuildFwd, "ggml_build_forward_expand"},
		{&g.ggmlCompute, "ggml_graph_compute_with_ctx"},
	})
}

// binding is one C function to bind: fptr points to the Go func variable,
// name is the exported symbol.
type binding struct {
	fptr any
	name string
}

// bindAll binds each of bs with Bind, in order, stopping at the first
// symbol that does not bind and returning its error.
func (k *Kernels) bindAll(bs []binding) error {
	for _, b := range bs {
		if err := k.Bind(b.fptr, b.name); err != nil {
			return err
		}
	}
	return nil
}
