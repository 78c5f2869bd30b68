package quant

import (
	"encoding/binary"
	"fmt"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
)

// Matrix is a weight matrix in ggml layout: Rows rows (ne[1]) of Cols
// elements (ne[0]) each, stored as consecutive rows of blocks of Type.
// Data is usually a zero-copy view into the memory-mapped model file.
type Matrix struct {
	Name string
	Type gguf.GGMLType
	Rows int
	Cols int
	Data []byte

	packed *packed // Repack's copy for the SIMD kernels (nil: none)
}

// RowBytes is the size of one row in bytes (ggml_row_size).
func (m *Matrix) RowBytes() int { return m.Cols / m.Type.BlockSize() * m.Type.TypeSize() }

// blockKernel is how the reference multiplies a block-quantized weight type:
// the activation format it quantizes columns to, the per-output dot product
// it runs (the same for one column and for many: vec_dot, or tinyBLAS_Q0_AVX
// whose per-output chain is identical), the repacked kernel's chain where the
// CPU_REPACK buffer takes rows%8 == 0 matrices, and the row dequantizer.
type blockKernel struct {
	act     actFormat
	dot     func(w, a []byte, nb int) float32
	repack  func(w, a []byte, nb int) float32 // nil: never repacked on AVX2
	dequant func(src []byte, y []float32)
}

// actFormat is an activation block format: Q8_0 (32 per block) or Q8_K (256).
type actFormat struct {
	block, size int
	quantize    func(x []float32, dst []byte)
}

var (
	actQ8_0 = actFormat{QK8_0, BlockQ8_0Size, QuantizeRowQ8_0}
	actQ8_1 = actFormat{QK8_1, BlockQ8_1Size, QuantizeRowQ8_1}
	actQ8_K = actFormat{QK_K, BlockQ8_KSize, QuantizeRowQ8_K}
)

// blockKernels lists the block types MatMul multiplies, with the path the
// haswell variant takes for each (found by reading ggml-cpu's type traits,
// llamafile_sgemm's dispatch and ggml_repack_get_optimal_repack_type, and
// checked with ggml_mul_mat graphs of the reference). Read-only.
var blockKernels = map[gguf.GGMLType]blockKernel{
	gguf.Q8_0:  {actQ8_0, VecDotQ8_0Q8_0, nil, DequantizeRowQ8_0},
	gguf.Q4_0:  {actQ8_0, VecDotQ4_0Q8_0, RepackDotQ4_0Q8_0, DequantizeRowQ4_0},
	gguf.Q1_0:  {actQ8_0, VecDotQ1_0Q8_0, nil, DequantizeRowQ1_0},
	gguf.Q2_0:  {actQ8_0, VecDotQ2_0Q8_0, nil, DequantizeRowQ2_0},
	gguf.Q4_1:  {actQ8_1, VecDotQ4_1Q8_1, nil, DequantizeRowQ4_1},
	gguf.Q5_0:  {actQ8_0, VecDotQ5_0Q8_0, nil, DequantizeRowQ5_0},
	gguf.Q5_1:  {actQ8_1, VecDotQ5_1Q8_1, nil, DequantizeRowQ5_1},
	gguf.TQ1_0: {actQ8_K, VecDotTQ1_0Q8_K, nil, DequantizeRowTQ1_0},
	gguf.TQ2_0: {actQ8_K, VecDotTQ2_0Q8_K, nil, DequantizeRowTQ2_0},
	gguf.Q2_K:  {actQ8_K, VecDotQ2_KQ8_K, nil, DequantizeRowQ2_K},
	gguf.Q3_K:  {actQ8_K, VecDotQ3_KQ8_K, nil, DequantizeRowQ3_K},
	gguf.Q4_K:  {actQ8_K, VecDotQ4_KQ8_K, nil, DequantizeRowQ4_K}, // repacked rows: see q4KRepackedDot
	gguf.Q5_K:  {actQ8_K, VecDotQ5_KQ8_K, nil, DequantizeRowQ5_K},
	gguf.Q6_K:  {actQ8_K, VecDotQ6_KQ8_K, nil, DequantizeRowQ6_K},
}

// Supported reports whether MatMul and Row handle this matrix's type, with an
// error naming the type otherwise.
func (m *Matrix) Supported() error {
	if _, ok := blockKernels[m.Type]; !ok && m.Type != gguf.F32 && m.Type != gguf.F16 && m.Type != gguf.BF16 {
		return fmt.Errorf("quant: tensor %q: type %s not supported yet", m.Name, m.Type)
	}
	if bs := m.Type.BlockSize(); bs <= 0 || m.Cols%bs != 0 {
		return fmt.Errorf("quant: tensor %q: row length %d is not a multiple of the %s block size %d", m.Name, m.Cols, m.Type, bs)
	}
	if len(m.Data) < m.Rows*m.RowBytes() {
		return fmt.Errorf("quant: tensor %q: %d bytes of data, %d needed", m.Name, len(m.Data), m.Rows*m.RowBytes())
	}
	return nil
}

// Row dequantizes row i into dst (len Cols), as ggml's get_rows does
// (the type's to_float).
func (m *Matrix) Row(i int, dst []float32) {
	rb := m.RowBytes()
	src := m.Data[i*rb : (i+1)*rb]
	switch m.Type {
	case gguf.F32:
		for j := range m.Cols {
			dst[j] = f32At(src, j)
		}
	case gguf.F16:
		for j := range m.Cols {
			dst[j] = FP16ToFP32(binary.LittleEndian.Uint16(src[2*j:]))
		}
	case gguf.BF16:
		BF16ToFP32Row(uint16View(src), dst[:m.Cols])
	default:
		blockKernels[m.Type].dequant(src, dst[:m.Cols])
	}
}

func f32At(b []byte, i int) float32 {
	return float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

// MatMul computes out[j*Rows+i] = dot(row i of w, column j of x) for the n
// activation columns x[j*Cols:(j+1)*Cols], taking for each type and shape the
// arithmetic ggml_compute_forward_mul_mat of the reference takes on an AVX2
// machine:
//
//   - F32: tinyBLAS (TinyDotF32) when n >= 2, Cols%8 == 0 and Rows%4 == 0,
//     else ggml_vec_dot_f32 (VecDotF32);
//   - F16 and BF16: the activations are rounded to f16 (bf16) first; then
//     tinyBLAS (TinyDotF16, TinyDotBF16) under the same conditions, else
//     ggml_vec_dot_f16 (ggml_vec_dot_bf16);
//   - block types (blockKernels): each column is quantized to the type's
//     activation format (Q8_0 for Q8_0, Q4_0, Q5_0, Q1_0, Q2_0; Q8_1 for
//     Q4_1, Q5_1; Q8_K for TQ1_0, TQ2_0, Q2_K, Q3_K), then every output runs
//     the type's vec_dot chain (tinyBLAS_Q0_AVX, used for Q8_0/Q4_0/Q5_0 with
//     2+ columns, agrees with it per output); Q4_0 with Rows%8 == 0 lives in the CPU_REPACK buffer and runs
//     the repacked q4_0_8x8 kernels (RepackDotQ4_0Q8_0).
//
// The pool's workers share the rows (contiguous ranges, pool.For); each
// output is computed by one worker from its row and column alone, so the
// result does not depend on the pool's size (a nil pool runs on the calling
// goroutine). Call Supported first: MatMul panics on types it does not handle.
func MatMul(w *Matrix, x []float32, n int, out []float32, pool *parallel.Pool) {
	k, m := w.Cols, w.Rows
	rb := w.RowBytes()
	var dot func(i, j int) float32
	switch w.Type {
	case gguf.F32:
		wf := float32View(w.Data[:m*rb])
		if n >= 2 && k%8 == 0 && m%4 == 0 {
			dot = func(i, j int) float32 { return TinyDotF32(wf[i*k:(i+1)*k], x[j*k:(j+1)*k]) }
		} else {
			dot = func(i, j int) float32 { return VecDotF32(wf[i*k:(i+1)*k], x[j*k:(j+1)*k]) }
		}
	case gguf.F16:
		wh := uint16View(w.Data[:m*rb])
		xh := make([]uint16, n*k)
		FP32ToFP16Row(x[:n*k], xh)
		if n >= 2 && k%8 == 0 && m%4 == 0 {
			dot = func(i, j int) float32 { return TinyDotF16(wh[i*k:(i+1)*k], xh[j*k:(j+1)*k]) }
		} else {
			dot = func(i, j int) float32 { return VecDotF16(wh[i*k:(i+1)*k], xh[j*k:(j+1)*k]) }
		}
	case gguf.BF16:
		wb := uint16View(w.Data[:m*rb])
		xb := make([]uint16, n*k)
		FP32ToBF16Row(x[:n*k], xb)
		if n >= 2 && k%8 == 0 && m%4 == 0 {
			dot = func(i, j int) float32 { return TinyDotBF16(wb[i*k:(i+1)*k], xb[j*k:(j+1)*k]) }
		} else {
			dot = func(i, j int) float32 { return VecDotBF16(wb[i*k:(i+1)*k], xb[j*k:(j+1)*k]) }
		}
	case gguf.Q4_K:
		if m%8 == 0 {
			dot = q4KRepackedDot(w, x, n)
			break
		}
		fallthrough
	default:
		bk, ok := blockKernels[w.Type]
		if !ok {
			panic(fmt.Sprintf("quant: MatMul on unsupported type %s", w.Type))
		}
		act := bk.act
		if k%act.block != 0 {
			panic(fmt.Sprintf("quant: MatMul: row length %d is not a multiple of the activation block %d", k, act.block))
		}
		qb := k / act.block * act.size
		xq := make([]byte, n*qb)
		for j := range n {
			act.quantize(x[j*k:(j+1)*k], xq[j*qb:(j+1)*qb])
		}
		kernel := bk.dot
		if bk.repack != nil && m%8 == 0 {
			kernel = bk.repack
		}
		wnb := k / w.Type.BlockSize()
		dot = func(i, j int) float32 { return kernel(w.Data[i*rb:(i+1)*rb], xq[j*qb:(j+1)*qb], wnb) }
	}
	pool.For(m, func(i0, i1 int) {
		for j := range n {
			o := out[j*m : (j+1)*m]
			for i := i0; i < i1; i++ {
				o[i] = dot(i, j)
			}
		}
	})
}

// q4KRepackedDot is the reference's path for Q4_K weights with a row count
// that is a multiple of 8 (the CPU_REPACK buffer's q4_K_8x8 layout): the
// columns in whole groups of four are quantized by ggml_quantize_mat_q8_K_4x8
// and run ggml_gemm_q4_K_8x8_q8_K; the n%4 columns left run
// ggml_gemv_q4_K_8x8_q8_K on quantize_row_q8_K's activations.
func q4KRepackedDot(w *Matrix, x []float32, n int) func(i, j int) float32 {
	k, rb := w.Cols, w.RowBytes()
	nb := k / QK_K
	qb := nb * BlockQ8_KSize
	gemmCols := n - n%4
	xq := make([]byte, n*qb)
	for j := range n {
		if j < gemmCols {
			QuantizeRowQ8_K4x8(x[j*k:(j+1)*k], xq[j*qb:(j+1)*qb])
		} else {
			QuantizeRowQ8_K(x[j*k:(j+1)*k], xq[j*qb:(j+1)*qb])
		}
	}
	return func(i, j int) float32 {
		if j < gemmCols {
			return RepackGemmQ4_KQ8_K(w.Data[i*rb:(i+1)*rb], xq[j*qb:(j+1)*qb], nb)
		}
		return RepackGemvQ4_KQ8_K(w.Data[i*rb:(i+1)*rb], xq[j*qb:(j+1)*qb], nb)
	}
}
