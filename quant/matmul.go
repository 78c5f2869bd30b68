package quant

import (
	"encoding/binary"
	"fmt"
	"sync"

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
}

// RowBytes is the size of one row in bytes (ggml_row_size).
func (m *Matrix) RowBytes() int { return m.Cols / m.Type.BlockSize() * m.Type.TypeSize() }

// Supported reports whether MatMul and Row handle this matrix's type, with an
// error naming the type otherwise.
func (m *Matrix) Supported() error {
	switch m.Type {
	case gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0:
	default:
		return fmt.Errorf("quant: tensor %q: type %s not supported yet", m.Name, m.Type)
	}
	if bs := m.Type.BlockSize(); m.Cols%bs != 0 {
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
	case gguf.Q8_0:
		DequantizeRowQ8_0(src, dst[:m.Cols])
	case gguf.Q4_0:
		DequantizeRowQ4_0(src, dst[:m.Cols])
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
//   - F16: the activations are rounded to f16 first; then tinyBLAS
//     (TinyDotF16) under the same conditions, else ggml_vec_dot_f16;
//   - Q8_0, Q4_0: the activations are quantized with quantize_row_q8_0; Q4_0
//     with Rows%8 == 0 lives in the CPU_REPACK buffer and runs the repacked
//     q4_0_8x8 kernels (RepackDotQ4_0Q8_0); otherwise the 8-lane chain of
//     vec_dot / tinyBLAS_Q0_AVX, which agree per output.
//
// threads goroutines share the rows; each output is computed by one
// goroutine from its row and column alone, so the result does not depend on
// threads. Call Supported first: MatMul panics on types it does not handle.
func MatMul(w *Matrix, x []float32, n int, out []float32, threads int) {
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
	case gguf.Q8_0, gguf.Q4_0:
		nb := k / QK8_0
		qb := nb * BlockQ8_0Size
		xq := make([]byte, n*qb)
		for j := range n {
			QuantizeRowQ8_0(x[j*k:(j+1)*k], xq[j*qb:(j+1)*qb])
		}
		kernel := VecDotQ8_0Q8_0
		if w.Type == gguf.Q4_0 {
			kernel = VecDotQ4_0Q8_0
			if m%8 == 0 {
				kernel = RepackDotQ4_0Q8_0
			}
		}
		dot = func(i, j int) float32 { return kernel(w.Data[i*rb:(i+1)*rb], xq[j*qb:(j+1)*qb], nb) }
	default:
		panic(fmt.Sprintf("quant: MatMul on unsupported type %s", w.Type))
	}
	parallelRows(m, threads, func(i0, i1 int) {
		for j := range n {
			o := out[j*m : (j+1)*m]
			for i := i0; i < i1; i++ {
				o[i] = dot(i, j)
			}
		}
	})
}

// parallelRows splits [0, m) into at most threads contiguous ranges.
func parallelRows(m, threads int, f func(i0, i1 int)) {
	if threads <= 1 || m < 2*threads {
		f(0, m)
		return
	}
	var wg sync.WaitGroup
	for t := range threads {
		i0, i1 := m*t/threads, m*(t+1)/threads
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i0, i1)
		}()
	}
	wg.Wait()
}
