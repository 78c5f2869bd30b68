package reference

import (
	"fmt"
	"sync"
)

// Oracles of ggml's legacy formats Q4_1, Q5_0, Q5_1, their activation type
// Q8_1, and BF16, bound lazily on first use so that a missing symbol fails
// only these tests:
//
//   - libggml-base.so: dequantize_row_q4_1/q5_0/q5_1,
//     quantize_row_q4_1_ref/q5_0_ref/q5_1_ref/q8_1_ref, ggml_bf16_to_fp32_row,
//     ggml_fp32_to_bf16_row, ggml_fp32_to_bf16_row_ref;
//   - libggml-cpu-haswell.so (the bit-exact target): quantize_row_q8_1,
//     ggml_vec_dot_q4_1_q8_1, ggml_vec_dot_q5_0_q8_0, ggml_vec_dot_q5_1_q8_1
//     and their exported _generic scalar loops, ggml_vec_dot_bf16,
//     ggml_cpu_fp32_to_bf16, ggml_cpu_bf16_to_fp32.
type legacy struct {
	once sync.Once
	err  error

	dequantQ4_1, dequantQ5_0, dequantQ5_1                  rowFunc
	quantQ4_1Ref, quantQ5_0Ref, quantQ5_1Ref, quantQ8_1Ref rowFunc
	quantQ8_1                                              rowFunc
	bf16ToFP32Row, fp32ToBF16Row, fp32ToBF16RowRef         rowFunc
	cpuBF16ToFP32, cpuFP32ToBF16                           rowFunc

	dotQ4_1, dotQ4_1Generic dotFunc
	dotQ5_0, dotQ5_0Generic dotFunc
	dotQ5_1, dotQ5_1Generic dotFunc
	dotBF16                 dotFunc
}

var legacyKernels legacy

func (k *Kernels) legacy() (*legacy, error) {
	lg := &legacyKernels
	lg.once.Do(func() {
		if lg.err = k.bindAll([]binding{
			{&lg.dequantQ4_1, "dequantize_row_q4_1"},
			{&lg.dequantQ5_0, "dequantize_row_q5_0"},
			{&lg.dequantQ5_1, "dequantize_row_q5_1"},
			{&lg.quantQ4_1Ref, "quantize_row_q4_1_ref"},
			{&lg.quantQ5_0Ref, "quantize_row_q5_0_ref"},
			{&lg.quantQ5_1Ref, "quantize_row_q5_1_ref"},
			{&lg.quantQ8_1Ref, "quantize_row_q8_1_ref"},
			{&lg.quantQ8_1, "quantize_row_q8_1"},
			{&lg.bf16ToFP32Row, "ggml_bf16_to_fp32_row"},
			{&lg.fp32ToBF16Row, "ggml_fp32_to_bf16_row"},
			{&lg.fp32ToBF16RowRef, "ggml_fp32_to_bf16_row_ref"},
			{&lg.cpuBF16ToFP32, "ggml_cpu_bf16_to_fp32"},
			{&lg.cpuFP32ToBF16, "ggml_cpu_fp32_to_bf16"},
			{&lg.dotQ4_1, "ggml_vec_dot_q4_1_q8_1"},
			{&lg.dotQ4_1Generic, "ggml_vec_dot_q4_1_q8_1_generic"},
			{&lg.dotQ5_0, "ggml_vec_dot_q5_0_q8_0"},
			{&lg.dotQ5_0Generic, "ggml_vec_dot_q5_0_q8_0_generic"},
			{&lg.dotQ5_1, "ggml_vec_dot_q5_1_q8_1"},
			{&lg.dotQ5_1Generic, "ggml_vec_dot_q5_1_q8_1_generic"},
			{&lg.dotBF16, "ggml_vec_dot_bf16"},
		}); lg.err != nil {
			return
		}
	})
	if lg.err != nil {
		return nil, fmt.Errorf("reference: legacy-format kernels: %w", lg.err)
	}
	return lg, nil
}

// LegacyErr reports whether the Q4_1/Q5_0/Q5_1/Q8_1/BF16 oracles bind; the
// other methods of this file panic when they do not.
func (k *Kernels) LegacyErr() error {
	_, err := k.legacy()
	return err
}

func (k *Kernels) mustLegacy() *legacy {
	lg, err := k.legacy()
	if err != nil {
		panic(err)
	}
	return lg
}

// legacyCallRow calls a row converter on n elements (x and y must hold them).
func legacyCallRow[X, Y any](f rowFunc, x []X, y []Y, n int) {
	if n <= 0 || len(x) == 0 || len(y) == 0 {
		return
	}
	callRow(f, x, y, n)
}

// legacyCallDot calls a vec_dot kernel with nrc = 1 over n values (0 for
// n == 0, as ggml computes).
func legacyCallDot[X any](f dotFunc, n int, x, y []X) float32 {
	if n <= 0 || len(x) == 0 || len(y) == 0 {
		return 0
	}
	return callDot(f, n, x, y)
}

// DequantizeRowQ4_1 is dequantize_row_q4_1 over len(y) values (a multiple
// of 32; x holds len(y)/32 blocks of 20 bytes).
func (k *Kernels) DequantizeRowQ4_1(x []byte, y []float32) {
	legacyCallRow(k.mustLegacy().dequantQ4_1, x, y, len(y))
}

// DequantizeRowQ5_0 is dequantize_row_q5_0 over len(y) values (22-byte
// blocks).
func (k *Kernels) DequantizeRowQ5_0(x []byte, y []float32) {
	legacyCallRow(k.mustLegacy().dequantQ5_0, x, y, len(y))
}

// DequantizeRowQ5_1 is dequantize_row_q5_1 over len(y) values (24-byte
// blocks).
func (k *Kernels) DequantizeRowQ5_1(x []byte, y []float32) {
	legacyCallRow(k.mustLegacy().dequantQ5_1, x, y, len(y))
}

// QuantizeRowQ4_1Ref is quantize_row_q4_1_ref; y needs len(x)/32*20 bytes.
func (k *Kernels) QuantizeRowQ4_1Ref(x []float32, y []byte) {
	legacyCallRow(k.mustLegacy().quantQ4_1Ref, x, y, len(x))
}

// QuantizeRowQ5_0Ref is quantize_row_q5_0_ref; y needs len(x)/32*22 bytes.
func (k *Kernels) QuantizeRowQ5_0Ref(x []float32, y []byte) {
	legacyCallRow(k.mustLegacy().quantQ5_0Ref, x, y, len(x))
}

// QuantizeRowQ5_1Ref is quantize_row_q5_1_ref; y needs len(x)/32*24 bytes.
func (k *Kernels) QuantizeRowQ5_1Ref(x []float32, y []byte) {
	legacyCallRow(k.mustLegacy().quantQ5_1Ref, x, y, len(x))
}

// QuantizeRowQ8_1Ref is quantize_row_q8_1_ref (libggml-base.so); y needs
// len(x)/32*36 bytes.
func (k *Kernels) QuantizeRowQ8_1Ref(x []float32, y []byte) {
	legacyCallRow(k.mustLegacy().quantQ8_1Ref, x, y, len(x))
}

// QuantizeRowQ8_1 is the haswell variant's quantize_row_q8_1 (mul_mat's
// activation quantizer for Q4_1 and Q5_1); y needs len(x)/32*36 bytes.
func (k *Kernels) QuantizeRowQ8_1(x []float32, y []byte) {
	legacyCallRow(k.mustLegacy().quantQ8_1, x, y, len(x))
}

// BF16ToFP32Row is ggml_bf16_to_fp32_row (libggml-base.so, BF16's
// to_float) over len(x) values.
func (k *Kernels) BF16ToFP32Row(x []uint16, y []float32) {
	legacyCallRow(k.mustLegacy().bf16ToFP32Row, x, y, len(x))
}

// CPUBF16ToFP32 is the haswell variant's ggml_cpu_bf16_to_fp32 (AVX2) over
// len(x) values.
func (k *Kernels) CPUBF16ToFP32(x []uint16, y []float32) {
	legacyCallRow(k.mustLegacy().cpuBF16ToFP32, x, y, len(x))
}

// FP32ToBF16Row is ggml_fp32_to_bf16_row (libggml-base.so) over len(x)
// values.
func (k *Kernels) FP32ToBF16Row(x []float32, y []uint16) {
	legacyCallRow(k.mustLegacy().fp32ToBF16Row, x, y, len(x))
}

// FP32ToBF16RowRef is ggml_fp32_to_bf16_row_ref (BF16's from_float_ref)
// over len(x) values.
func (k *Kernels) FP32ToBF16RowRef(x []float32, y []uint16) {
	legacyCallRow(k.mustLegacy().fp32ToBF16RowRef, x, y, len(x))
}

// CPUFP32ToBF16 is the haswell variant's ggml_cpu_fp32_to_bf16 (BF16's
// from_float in the CPU backend: mul_mat's activation converter) over len(x)
// values.
func (k *Kernels) CPUFP32ToBF16(x []float32, y []uint16) {
	legacyCallRow(k.mustLegacy().cpuFP32ToBF16, x, y, len(x))
}

// VecDotQ4_1Q8_1 is the haswell variant's ggml_vec_dot_q4_1_q8_1 over n
// values (n/32 Q4_1 blocks against n/32 Q8_1 blocks).
func (k *Kernels) VecDotQ4_1Q8_1(n int, x, y []byte) float32 {
	return legacyCallDot(k.mustLegacy().dotQ4_1, n, x, y)
}

// VecDotQ4_1Q8_1Generic is ggml_vec_dot_q4_1_q8_1_generic of the haswell
// library.
func (k *Kernels) VecDotQ4_1Q8_1Generic(n int, x, y []byte) float32 {
	return legacyCallDot(k.mustLegacy().dotQ4_1Generic, n, x, y)
}

// VecDotQ5_0Q8_0 is the haswell variant's ggml_vec_dot_q5_0_q8_0 over n
// values (n/32 Q5_0 blocks against n/32 Q8_0 blocks).
func (k *Kernels) VecDotQ5_0Q8_0(n int, x, y []byte) float32 {
	return legacyCallDot(k.mustLegacy().dotQ5_0, n, x, y)
}

// VecDotQ5_0Q8_0Generic is ggml_vec_dot_q5_0_q8_0_generic of the haswell
// library.
func (k *Kernels) VecDotQ5_0Q8_0Generic(n int, x, y []byte) float32 {
	return legacyCallDot(k.mustLegacy().dotQ5_0Generic, n, x, y)
}

// VecDotQ5_1Q8_1 is the haswell variant's ggml_vec_dot_q5_1_q8_1 over n
// values (n/32 Q5_1 blocks against n/32 Q8_1 blocks).
func (k *Kernels) VecDotQ5_1Q8_1(n int, x, y []byte) float32 {
	return legacyCallDot(k.mustLegacy().dotQ5_1, n, x, y)
}

// VecDotQ5_1Q8_1Generic is ggml_vec_dot_q5_1_q8_1_generic of the haswell
// library.
func (k *Kernels) VecDotQ5_1Q8_1Generic(n int, x, y []byte) float32 {
	return legacyCallDot(k.mustLegacy().dotQ5_1Generic, n, x, y)
}

// VecDotBF16 is the haswell variant's ggml_vec_dot_bf16 (nrc 1) over
// len(x) values.
func (k *Kernels) VecDotBF16(x, y []uint16) float32 {
	return legacyCallDot(k.mustLegacy().dotBF16, len(x), x, y)
}
