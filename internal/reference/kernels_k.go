package reference

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Oracles of the K-quant activation format Q8_K and of the formats whose dot
// products take it (TQ1_0, TQ2_0, Q2_K, Q3_K), bound lazily on first use so
// that a missing symbol fails only these tests:
//
//   - libggml-base.so: quantize_row_q8_K_ref, dequantize_row_q8_K, and per
//     format dequantize_row_* and quantize_row_*_ref;
//   - libggml-cpu-haswell.so (the bit-exact target): quantize_row_q8_K and
//     quantize_row_q8_K_generic (both jump to quantize_row_q8_K_ref on x86),
//     and per format ggml_vec_dot_*_q8_K (the AVX2 kernel) and
//     ggml_vec_dot_*_q8_K_generic (the scalar loop, compiled with FMA).
//
// Slices are passed to C as pointers to their first element: callers give
// non-empty slices of the sizes each method documents.
type kquants struct {
	once sync.Once
	err  error

	quantQ8_K, quantQ8_KGeneric, quantQ8_KRef rowFunc
	dequantQ8_K                               rowFunc

	dequantTQ1_0, dequantTQ2_0, dequantQ2_K, dequantQ3_K     rowFunc
	quantTQ1_0Ref, quantTQ2_0Ref, quantQ2_KRef, quantQ3_KRef rowFunc

	dotTQ1_0, dotTQ1_0Generic dotFunc
	dotTQ2_0, dotTQ2_0Generic dotFunc
	dotQ2_K, dotQ2_KGeneric   dotFunc
	dotQ3_K, dotQ3_KGeneric   dotFunc
}

var kquantKernels kquants

func (k *Kernels) kquants() (*kquants, error) {
	kq := &kquantKernels
	kq.once.Do(func() {
		if kq.err = k.bindAll([]binding{
			{&kq.quantQ8_K, "quantize_row_q8_K"},
			{&kq.quantQ8_KGeneric, "quantize_row_q8_K_generic"},
			{&kq.quantQ8_KRef, "quantize_row_q8_K_ref"},
			{&kq.dequantQ8_K, "dequantize_row_q8_K"},
			{&kq.dequantTQ1_0, "dequantize_row_tq1_0"},
			{&kq.dequantTQ2_0, "dequantize_row_tq2_0"},
			{&kq.dequantQ2_K, "dequantize_row_q2_K"},
			{&kq.dequantQ3_K, "dequantize_row_q3_K"},
			{&kq.quantTQ1_0Ref, "quantize_row_tq1_0_ref"},
			{&kq.quantTQ2_0Ref, "quantize_row_tq2_0_ref"},
			{&kq.quantQ2_KRef, "quantize_row_q2_K_ref"},
			{&kq.quantQ3_KRef, "quantize_row_q3_K_ref"},
			{&kq.dotTQ1_0, "ggml_vec_dot_tq1_0_q8_K"},
			{&kq.dotTQ1_0Generic, "ggml_vec_dot_tq1_0_q8_K_generic"},
			{&kq.dotTQ2_0, "ggml_vec_dot_tq2_0_q8_K"},
			{&kq.dotTQ2_0Generic, "ggml_vec_dot_tq2_0_q8_K_generic"},
			{&kq.dotQ2_K, "ggml_vec_dot_q2_K_q8_K"},
			{&kq.dotQ2_KGeneric, "ggml_vec_dot_q2_K_q8_K_generic"},
			{&kq.dotQ3_K, "ggml_vec_dot_q3_K_q8_K"},
			{&kq.dotQ3_KGeneric, "ggml_vec_dot_q3_K_q8_K_generic"},
		}); kq.err != nil {
			return
		}
	})
	if kq.err != nil {
		return nil, fmt.Errorf("reference: K-quant kernels: %w", kq.err)
	}
	return kq, nil
}

func (k *Kernels) mustKQuants() *kquants {
	kq, err := k.kquants()
	if err != nil {
		panic(err)
	}
	return kq
}

// KQuantsErr reports whether the Q8_K, TQ1_0, TQ2_0, Q2_K and Q3_K oracles
// bind; their methods panic when they do not.
func (k *Kernels) KQuantsErr() error {
	_, err := k.kquants()
	return err
}

// QuantizeRowQ8_K is the haswell variant's quantize_row_q8_K over len(x)
// values (a multiple of 256); y needs len(x)/256*292 bytes.
func (k *Kernels) QuantizeRowQ8_K(x []float32, y []byte) {
	callRow(k.mustKQuants().quantQ8_K, x, y, len(x))
}

// QuantizeRowQ8_KGeneric is the haswell library's quantize_row_q8_K_generic;
// y needs len(x)/256*292 bytes.
func (k *Kernels) QuantizeRowQ8_KGeneric(x []float32, y []byte) {
	callRow(k.mustKQuants().quantQ8_KGeneric, x, y, len(x))
}

// QuantizeRowQ8_KRef is libggml-base's quantize_row_q8_K_ref; y needs
// len(x)/256*292 bytes.
func (k *Kernels) QuantizeRowQ8_KRef(x []float32, y []byte) {
	callRow(k.mustKQuants().quantQ8_KRef, x, y, len(x))
}

// DequantizeRowQ8_K is dequantize_row_q8_K over len(y) values (a multiple
// of 256; x holds len(y)/256 blocks of 292 bytes).
func (k *Kernels) DequantizeRowQ8_K(x []byte, y []float32) {
	callRow(k.mustKQuants().dequantQ8_K, x, y, len(y))
}

// DequantizeRowTQ1_0 is dequantize_row_tq1_0 over len(y) values (a multiple
// of 256; 54-byte blocks).
func (k *Kernels) DequantizeRowTQ1_0(x []byte, y []float32) {
	callRow(k.mustKQuants().dequantTQ1_0, x, y, len(y))
}

// DequantizeRowTQ2_0 is dequantize_row_tq2_0 over len(y) values (a multiple
// of 256; 66-byte blocks).
func (k *Kernels) DequantizeRowTQ2_0(x []byte, y []float32) {
	callRow(k.mustKQuants().dequantTQ2_0, x, y, len(y))
}

// DequantizeRowQ2_K is dequantize_row_q2_K over len(y) values (a multiple
// of 256; 84-byte blocks).
func (k *Kernels) DequantizeRowQ2_K(x []byte, y []float32) {
	callRow(k.mustKQuants().dequantQ2_K, x, y, len(y))
}

// DequantizeRowQ3_K is dequantize_row_q3_K over len(y) values (a multiple
// of 256; 110-byte blocks).
func (k *Kernels) DequantizeRowQ3_K(x []byte, y []float32) {
	callRow(k.mustKQuants().dequantQ3_K, x, y, len(y))
}

// QuantizeRowTQ1_0Ref is quantize_row_tq1_0_ref; y needs len(x)/256*54 bytes.
func (k *Kernels) QuantizeRowTQ1_0Ref(x []float32, y []byte) {
	callRow(k.mustKQuants().quantTQ1_0Ref, x, y, len(x))
}

// QuantizeRowTQ2_0Ref is quantize_row_tq2_0_ref; y needs len(x)/256*66 bytes.
func (k *Kernels) QuantizeRowTQ2_0Ref(x []float32, y []byte) {
	callRow(k.mustKQuants().quantTQ2_0Ref, x, y, len(x))
}

// QuantizeRowQ2_KRef is quantize_row_q2_K_ref; y needs len(x)/256*84 bytes.
func (k *Kernels) QuantizeRowQ2_KRef(x []float32, y []byte) {
	callRow(k.mustKQuants().quantQ2_KRef, x, y, len(x))
}

// QuantizeRowQ3_KRef is quantize_row_q3_K_ref; y needs len(x)/256*110 bytes.
func (k *Kernels) QuantizeRowQ3_KRef(x []float32, y []byte) {
	callRow(k.mustKQuants().quantQ3_KRef, x, y, len(x))
}

// VecDotTQ1_0Q8_K is the haswell variant's ggml_vec_dot_tq1_0_q8_K over n
// values (n/256 TQ1_0 blocks against n/256 Q8_K blocks).
func (k *Kernels) VecDotTQ1_0Q8_K(n int, x, y []byte) float32 {
	return callDot(k.mustKQuants().dotTQ1_0, n, x, y)
}

// VecDotTQ1_0Q8_KGeneric is ggml_vec_dot_tq1_0_q8_K_generic of the haswell
// library over n values.
func (k *Kernels) VecDotTQ1_0Q8_KGeneric(n int, x, y []byte) float32 {
	return callDot(k.mustKQuants().dotTQ1_0Generic, n, x, y)
}

// VecDotTQ2_0Q8_K is the haswell variant's ggml_vec_dot_tq2_0_q8_K over n
// values.
func (k *Kernels) VecDotTQ2_0Q8_K(n int, x, y []byte) float32 {
	return callDot(k.mustKQuants().dotTQ2_0, n, x, y)
}

// VecDotTQ2_0Q8_KGeneric is ggml_vec_dot_tq2_0_q8_K_generic of the haswell
// library over n values.
func (k *Kernels) VecDotTQ2_0Q8_KGeneric(n int, x, y []byte) float32 {
	return callDot(k.mustKQuants().dotTQ2_0Generic, n, x, y)
}

// VecDotQ2_KQ8_K is the haswell variant's ggml_vec_dot_q2_K_q8_K over n
// values.
func (k *Kernels) VecDotQ2_KQ8_K(n int, x, y []byte) float32 {
	return callDot(k.mustKQuants().dotQ2_K, n, x, y)
}

// VecDotQ2_KQ8_KGeneric is ggml_vec_dot_q2_K_q8_K_generic of the haswell
// library over n values.
func (k *Kernels) VecDotQ2_KQ8_KGeneric(n int, x, y []byte) float32 {
	return callDot(k.mustKQuants().dotQ2_KGeneric, n, x, y)
}

// VecDotQ3_KQ8_K is the haswell variant's ggml_vec_dot_q3_K_q8_K over n
// values.
func (k *Kernels) VecDotQ3_KQ8_K(n int, x, y []byte) float32 {
	return callDot(k.mustKQuants().dotQ3_K, n, x, y)
}

// VecDotQ3_KQ8_KGeneric is ggml_vec_dot_q3_K_q8_K_generic of the haswell
// library over n values.
func (k *Kernels) VecDotQ3_KQ8_KGeneric(n int, x, y []byte) float32 {
	return callDot(k.mustKQuants().dotQ3_KGeneric, n, x, y)
}

// VecDotKRaw returns a low-overhead caller of the exported vec_dot kernel
// name (any ggml_vec_dot_* of the haswell library), for benchmarks: it calls
// through purego.SyscallN without the reflection of a registered function,
// so the per-call cost left is the cgo transition. x and y must be
// non-empty heap memory (Go's heap does not move); the result is read from
// a heap cell, so the caller runs one call at a time.
func (k *Kernels) VecDotKRaw(name string) (func(n int, x, y []byte) float32, error) {
	if _, err := k.kquants(); err != nil {
		return nil, err
	}
	sym, err := dlsym(k.cpu, name)
	if err != nil || sym == 0 {
		return nil, fmt.Errorf("reference: symbol %s: %v", name, err)
	}
	s := new(float32)
	return func(n int, x, y []byte) float32 {
		purego.SyscallN(sym, uintptr(n), uintptr(unsafe.Pointer(s)), 0,
			uintptr(unsafe.Pointer(&x[0])), 0, uintptr(unsafe.Pointer(&y[0])), 0, 1)
		runtime.KeepAlive(x)
		runtime.KeepAlive(y)
		runtime.KeepAlive(s)
		return *s
	}, nil
}
