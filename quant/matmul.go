package quant

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/bankml/bankml/gguf"
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

	pk *packSlot // Repack's copy for the SIMD kernels (nil or empty: none)
}

// packSlot holds a Matrix's packed copy. Copies of the Matrix value share it,
// and Repack publishes the copy atomically, so a matrix whose slot was
// reserved (ReservePack) can be packed by one goroutine while others run
// MatMul on it: each MatMul reads either the plain rows or the packed copy
// (the same bits), and once published the copy stays.
type packSlot struct{ p atomic.Pointer[packed] }

// packedRows returns the published packed copy, or nil.
func (m *Matrix) packedRows() *packed {
	if m.pk == nil {
		return nil
	}
	return m.pk.p.Load()
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
	gguf.Q4_K:  {actQ8_K, VecDotQ4_KQ8_K, nil, DequantizeRowQ4_K}, // repacked rows: see Work.quantizeQ4KRepack
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
