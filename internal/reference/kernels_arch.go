package reference

import (
	"fmt"
	"unsafe"
)

// GeluTableF16 returns a copy of ggml_table_gelu_f16, the GELU table that
// ggml_cpu_init fills in the haswell CPU library (ggml-cpu.c): 65,536 halves,
// the GELU of every half value.
func (k *Kernels) GeluTableF16() ([]uint16, error) {
	sym, err := dlsym(k.cpu, "ggml_table_gelu_f16")
	if err != nil || sym == 0 {
		return nil, fmt.Errorf("reference: symbol ggml_table_gelu_f16: %v", err)
	}
	return append([]uint16(nil), unsafe.Slice((*uint16)(cPointer(sym)), 1<<16)...), nil
}
