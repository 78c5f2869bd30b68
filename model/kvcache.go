package model

import (
	"fmt"
	"strings"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

// CacheTypes are the data types of a context's K and V cache cells
// (llama_context_params' type_k and type_v; llama.cpp's -ctk and -ctv):
// gguf.F16 (the default), gguf.Q8_0 or gguf.Q4_0, each independently. The
// zero value is F16 for both.
type CacheTypes struct {
	K, V gguf.GGMLType
}

// cacheTypesLlama are the names llama.cpp's -ctk/-ctv accept
// (common/arg.cpp's kv_cache_types); CacheTypeNames those bankml runs.
var cacheTypesLlama = []string{"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}

// CacheTypeNames are the cache types bankml runs, by ggml name.
var CacheTypeNames = []string{"f16", "q8_0", "q4_0"}

// ParseCacheType returns the cache type named s (ggml's type name, as
// llama.cpp's -ctk/-ctv take it: kv_cache_type_from_str). It refuses a name
// llama.cpp does not take ("Unsupported cache type", listing llama.cpp's) and
// one llama.cpp takes that bankml does not run (f32, bf16, q4_1, iq4_nl,
// q5_0, q5_1), naming the allowed ones. Its errors read as a flag value's
// (no "model: " before them): the caller names the flag they came from.
func ParseCacheType(s string) (gguf.GGMLType, error) {
	switch s {
	case "f16":
		return gguf.F16, nil
	case "q8_0":
		return gguf.Q8_0, nil
	case "q4_0":
		return gguf.Q4_0, nil
	}
	for _, n := range cacheTypesLlama {
		if n == s {
			return 0, fmt.Errorf("cache type %s is not supported by bankml (allowed: %s)", s, strings.Join(CacheTypeNames, ", "))
		}
	}
	return 0, fmt.Errorf("unsupported cache type %q (allowed: %s; llama.cpp takes %s)", s,
		strings.Join(CacheTypeNames, ", "), strings.Join(cacheTypesLlama, ", "))
}

func (t CacheTypes) norm() CacheTypes {
	if t.K == 0 {
		t.K = gguf.F16
	}
	if t.V == 0 {
		t.V = gguf.F16
	}
	return t
}

// quantized reports whether either cache type is not F16.
func (t CacheTypes) quantized() bool { return t.K != gguf.F16 || t.V != gguf.F16 }

// CheckCacheTypes refuses types bankml does not run and, as
// llama_init_from_model does (flash attention is always on in bankml, as
// llama.cpp's auto turns it on for a quantized V cache), a quantized type
// whose block size does not divide the head size, with llama.cpp's message.
// The zero type is F16.
func (m *Model) CheckCacheTypes(t CacheTypes) error {
	return checkCacheTypes(m.HP.HeadDim, t.norm())
}

// CheckFileCacheTypes is CheckCacheTypes from f's header alone, before the
// weights are read: package admit refuses a cache type the heads do not fit
// before it hashes the file. f's architecture must pass CheckArchitecture.
func CheckFileCacheTypes(f *gguf.File, t CacheTypes) error {
	if _, ok := archs[f.Architecture()]; !ok {
		return CheckArchitecture(f)
	}
	hp, err := readHparams(f)
	if err != nil {
		return err
	}
	return checkCacheTypes(hp.HeadDim, t.norm())
}

// FileHparams reads the hyperparameters of f's registered architecture from its header alone (no tensor data
// read), with Load's checks of them; an architecture no graph runs is refused as CheckArchitecture refuses it.
func FileHparams(f *gguf.File) (Hparams, error) {
	if _, ok := archs[f.Architecture()]; !ok {
		return Hparams{}, CheckArchitecture(f)
	}
	return readHparams(f)
}

// checkCacheTypes is the rule of CheckCacheTypes for a head size of headDim.
func checkCacheTypes(headDim int, t CacheTypes) error {
	for _, x := range []struct {
		kv string
		t  gguf.GGMLType
	}{{"K", t.K}, {"V", t.V}} {
		switch x.t {
		case gguf.F16, gguf.Q8_0, gguf.Q4_0:
		default:
			return fmt.Errorf("%s cache type %s is not supported by bankml (allowed: %s)", x.kv, x.t, strings.Join(CacheTypeNames, ", "))
		}
		if bs := x.t.BlockSize(); headDim%bs != 0 {
			return fmt.Errorf("%s cache type %s with block size %d does not divide n_embd_head_%s=%d",
				x.kv, x.t, bs, strings.ToLower(x.kv), headDim)
		}
	}
	return nil
}

// kvRot is the Hadamard rotation llama.cpp puts around a quantized cache
// (llama_kv_cache's attn_rot_k and attn_rot_v, src/llama-kv-cache.cpp): K's
// rotation when type_k is quantized and the head size is a multiple of 64,
// of size nrotK, the largest power of two (at least 64) dividing the head
// size (build_input_k_rot); V's when type_v is quantized and the head size
// is a multiple of 64, of size 64 (build_input_v_rot). 0: none.
type kvRot struct{ k, v int }

func (m *Model) kvRotation(t CacheTypes) kvRot {
	var r kvRot
	hd := m.HP.HeadDim
	if t.K != gguf.F16 && hd > 0 && hd%64 == 0 {
		n := 64
		for hd%(2*n) == 0 {
			n *= 2
		}
		r.k = n
	}
	if t.V != gguf.F16 && hd > 0 && hd%64 == 0 {
		r.v = 64
	}
	return r
}

// fwht is llama_mul_mat_hadamard (src/llama-impl.h) as the CPU backend
// computes it (the GGML_HINT_SRC0_IS_HADAMARD mul_mat runs
// ggml_compute_forward_fwht, ggml-cpu/ops.cpp): x in place, in rows of n
// values (a power of two), each multiplied by 1/sqrtf(n) and then
// transformed by the butterflies (u+v, u-v) of lengths 1, 2, ..., n/2 in
// order — each result one rounding, the SIMD passes' fma(v, -1, u) being
// u-v exactly. len(x) must be a multiple of n.
func fwht(x []float32, n int) {
	scale := 1 / fmath.Sqrtf(float32(n))
	for c := 0; c+n <= len(x); c += n {
		row := x[c : c+n : c+n]
		for j := range row {
			row[j] *= scale
		}
		for l := 1; l < n; l <<= 1 {
			for i := 0; i < n; i += 2 * l {
				a, b := row[i:i+l], row[i+l:i+2*l]
				for j := range a {
					u, v := a[j], b[j]
					a[j], b[j] = u+v, u-v
				}
			}
		}
	}
}

// rowBytes is the bytes of n values of cache type t.
func rowBytes(t gguf.GGMLType, n int) int {
	return n / t.BlockSize() * t.TypeSize()
}

// quantizeRow is the from_float of ggml-cpu's type traits for cache type t,
// which ggml_set_rows uses to write a cell: quantize_row_q8_0 (the haswell
// build's, quant.QuantizeRowQ8_0) or quantize_row_q4_0 (its reference
// quantizer, quant.QuantizeRowQ4_0).
func quantizeRow(t gguf.GGMLType, x []float32, dst []byte) {
	switch t {
	case gguf.Q8_0:
		quant.QuantizeRowQ8_0(x, dst)
	case gguf.Q4_0:
		quant.QuantizeRowQ4_0(x, dst)
	default:
		panic("model: quantizeRow of " + t.String())
	}
}

// dequantizeRow is to_float of ggml's type traits for cache type t
// (dequantize_row_q8_0, dequantize_row_q4_0): flash attention's V widening.
func dequantizeRow(t gguf.GGMLType, src []byte, y []float32) {
	switch t {
	case gguf.Q8_0:
		quant.DequantizeRowQ8_0(src, y)
	case gguf.Q4_0:
		quant.DequantizeRowQ4_0(src, y)
	default:
		panic("model: dequantizeRow of " + t.String())
	}
}
