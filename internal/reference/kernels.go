package reference

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/bankml/bankml/internal/cpuvariant"
	"github.com/ebitengine/purego"
)

// Kernels are single ggml CPU kernels of the reference, called directly: the
// row converters of libggml-base.so and the dot products and activation
// quantizer of the process's CPU variant (ProcessVariant; haswell by
// default) after ggml_cpu_init. They are the
// oracle of package quant's kernel tests. Safe for concurrent use.
type Kernels struct {
	base, cpu uintptr // dlopen handles of libggml-base.so and libggml-cpu-<variant>.so
	variant   cpuvariant.Variant

	fp16ToFP32     func(h uint16) float32
	fp32ToFP16     func(f float32) uint16
	dequantQ8_0    func(x unsafe.Pointer, y unsafe.Pointer, k int64)
	dequantQ4_0    func(x unsafe.Pointer, y unsafe.Pointer, k int64)
	quantizeQ8_0   func(x unsafe.Pointer, y unsafe.Pointer, k int64)
	vecDotF32      func(n int32, s unsafe.Pointer, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32)
	vecDotF16      func(n int32, s unsafe.Pointer, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32)
	vecDotQ8_0Q8_0 func(n int32, s unsafe.Pointer, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32)
	vecDotQ4_0Q8_0 func(n int32, s unsafe.Pointer, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32)
	swiglu         func(n int32, y, x, g unsafe.Pointer)
}

var (
	kernelsOnce sync.Once
	kernels     *Kernels
	kernelsErr  error
)

// LoadKernels opens the reference's libggml-base.so and the process's CPU
// variant (libggml-cpu-haswell.so unless [EnvVariant] names another; found
// by Dir) and binds the kernels; it returns an error wrapping
// ErrNotInstalled when the reference is absent.
func LoadKernels() (*Kernels, error) {
	kernelsOnce.Do(func() { kernels, kernelsErr = loadKernels() })
	return kernels, kernelsErr
}

func loadKernels() (*Kernels, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("reference: kernels need linux/amd64: %w", ErrNotInstalled)
	}
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	base, err := dlopen(filepath.Join(dir, libGGMLBase), rtldNow|rtldGlobal)
	if err != nil {
		return nil, fmt.Errorf("reference: %s: %w", libGGMLBase, err)
	}
	v, err := ProcessVariant()
	if err != nil {
		return nil, err
	}
	if err := CanExecute(v); err != nil {
		return nil, err
	}
	cpu, err := dlopen(filepath.Join(dir, v.Library()), rtldNow|rtldGlobal)
	if err != nil {
		return nil, fmt.Errorf("reference: %s: %w", v.Library(), err)
	}
	k := &Kernels{base: base, cpu: cpu, variant: v}
	bind := func(fptr any, h uintptr, name string) error {
		sym, err := dlsym(h, name)
		if err != nil {
			return fmt.Errorf("reference: symbol %s: %w", name, err)
		}
		purego.RegisterFunc(fptr, sym)
		return nil
	}
	var cpuInit func()
	for _, b := range []struct {
		fptr any
		h    uintptr
		name string
	}{
		{&k.fp16ToFP32, base, "ggml_fp16_to_fp32"},
		{&k.fp32ToFP16, base, "ggml_fp32_to_fp16"},
		{&k.dequantQ8_0, base, "dequantize_row_q8_0"},
		{&k.dequantQ4_0, base, "dequantize_row_q4_0"},
		{&cpuInit, cpu, "ggml_cpu_init"},
		{&k.quantizeQ8_0, cpu, "quantize_row_q8_0"},
		{&k.vecDotF32, cpu, "ggml_vec_dot_f32"},
		{&k.vecDotF16, cpu, "ggml_vec_dot_f16"},
		{&k.vecDotQ8_0Q8_0, cpu, "ggml_vec_dot_q8_0_q8_0"},
		{&k.vecDotQ4_0Q8_0, cpu, "ggml_vec_dot_q4_0_q8_0"},
		{&k.swiglu, cpu, "ggml_vec_swiglu_f32"},
	} {
		if err := bind(b.fptr, b.h, b.name); err != nil {
			return nil, err
		}
	}
	cpuInit()
	return k, nil
}

// Variant is the CPU variant whose library the kernels come from.
func (k *Kernels) Variant() cpuvariant.Variant { return k.variant }

// FP16ToFP32 is ggml_fp16_to_fp32.
func (k *Kernels) FP16ToFP32(h uint16) float32 { return k.fp16ToFP32(h) }

// FP32ToFP16 is ggml_fp32_to_fp16.
func (k *Kernels) FP32ToFP16(f float32) uint16 { return k.fp32ToFP16(f) }

// DequantizeRowQ8_0 is dequantize_row_q8_0 over len(y) values (a multiple of 32).
func (k *Kernels) DequantizeRowQ8_0(x []byte, y []float32) {
	callRow(k.dequantQ8_0, x, y, len(y))
}

// DequantizeRowQ4_0 is dequantize_row_q4_0 over len(y) values (a multiple of 32).
func (k *Kernels) DequantizeRowQ4_0(x []byte, y []float32) {
	callRow(k.dequantQ4_0, x, y, len(y))
}

// QuantizeRowQ8_0 is the haswell variant's quantize_row_q8_0; y needs
// len(x)/32*34 bytes.
func (k *Kernels) QuantizeRowQ8_0(x []float32, y []byte) {
	callRow(k.quantizeQ8_0, x, y, len(x))
}

// VecDotF32 is ggml_vec_dot_f32 (nrc 1) of the haswell variant.
func (k *Kernels) VecDotF32(x, y []float32) float32 {
	return callDot(k.vecDotF32, len(x), x, y)
}

// VecDotF16 is ggml_vec_dot_f16 (nrc 1) of the haswell variant.
func (k *Kernels) VecDotF16(x, y []uint16) float32 {
	return callDot(k.vecDotF16, len(x), x, y)
}

// VecDotQ8_0Q8_0 is ggml_vec_dot_q8_0_q8_0 over n values (n/32 blocks each).
func (k *Kernels) VecDotQ8_0Q8_0(n int, x, y []byte) float32 {
	return callDot(k.vecDotQ8_0Q8_0, n, x, y)
}

// VecDotQ4_0Q8_0 is ggml_vec_dot_q4_0_q8_0 over n values.
func (k *Kernels) VecDotQ4_0Q8_0(n int, x, y []byte) float32 {
	return callDot(k.vecDotQ4_0Q8_0, n, x, y)
}

// SwiGLU is ggml_vec_swiglu_f32: y = silu(x)*g over len(y) values.
func (k *Kernels) SwiGLU(y, x, g []float32) {
	k.swiglu(int32(len(y)), unsafe.Pointer(&y[0]), unsafe.Pointer(&x[0]), unsafe.Pointer(&g[0]))
	runtime.KeepAlive(x)
	runtime.KeepAlive(g)
}

// Bind sets fptr, a pointer to a Go func variable of the C function's
// signature (purego conventions), to the exported symbol name of the haswell
// CPU library, or of libggml-base.so when the CPU library does not export it.
// Format families bind their kernels with it in their own files
// (kernels_*.go), lazily, so one missing symbol fails only its tests.
func (k *Kernels) Bind(fptr any, name string) error {
	for _, h := range []uintptr{k.cpu, k.base} {
		if sym, err := dlsym(h, name); err == nil && sym != 0 {
			purego.RegisterFunc(fptr, sym)
			return nil
		}
	}
	return fmt.Errorf("reference: symbol %s not exported by %s or %s", name, k.variant.Library(), libGGMLBase)
}

// OpenVariant dlopens another CPU variant of the reference (e.g.
// "libggml-cpu-x64.so", the no-FMA build) for kernels whose float order
// differs between variants; bind its symbols with BindIn.
func (k *Kernels) OpenVariant(lib string) (uintptr, error) {
	dir, err := Dir()
	if err != nil {
		return 0, err
	}
	h, err := dlopen(filepath.Join(dir, lib), rtldNow)
	if err != nil {
		return 0, fmt.Errorf("reference: %s: %w", lib, err)
	}
	return h, nil
}

// BindIn is Bind on a handle returned by OpenVariant.
func (k *Kernels) BindIn(h uintptr, fptr any, name string) error {
	sym, err := dlsym(h, name)
	if err != nil || sym == 0 {
		return fmt.Errorf("reference: symbol %s: %v", name, err)
	}
	purego.RegisterFunc(fptr, sym)
	return nil
}
