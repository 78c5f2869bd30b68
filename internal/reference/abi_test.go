package reference

import (
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// The expected layouts below were derived by hand from llama.h /
// ggml-backend.h of llama.cpp v0.5.0 (commit de3ff81) under the System V
// x86-64 ABI: pointers and size_t 8 bytes/8-aligned, int32_t/uint32_t/enums/
// float 4 bytes, bool 1 byte, struct size rounded up to its largest
// alignment (8).
//
// llama_model_params: devices@0, tensor_buft_overrides@8, n_gpu_layers@16,
// split_mode@20, load_mode@24, lazy_mode@28, main_gpu@32, (4 padding),
// tensor_split@40, progress_callback@48, progress_callback_user_data@56,
// kv_overrides@64, six bools @72..77, (2 padding) -> 80.
//
// llama_context_params: nine 32-bit counts @0..32, five enums @36..52, six
// floats @56..76, yarn_orig_ctx@80, defrag_thold@84, cb_eval@88,
// cb_eval_user_data@96, type_k@104, type_v@108, abort_callback@112,
// abort_callback_data@120, six bools @128..133, (2 padding), samplers@136,
// n_samplers@144, ctx_other@152 -> 160.
//
// llama_batch: n_tokens@0, (4 padding), six pointers @8..48 -> 56.
func TestABILayout(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("layouts are derived for amd64")
	}
	type want struct {
		size    uintptr
		offsets map[string]uintptr
	}
	cases := []struct {
		typ  reflect.Type
		want want
	}{
		{reflect.TypeFor[llamaModelParams](), want{80, map[string]uintptr{
			"Devices": 0, "TensorBuftOverrides": 8, "NGPULayers": 16, "SplitMode": 20, "LoadMode": 24,
			"LazyMode": 28, "MainGPU": 32, "TensorSplit": 40, "ProgressCallback": 48,
			"ProgressCallbackUserData": 56, "KVOverrides": 64, "VocabOnly": 72, "CheckTensors": 73,
			"UseExtraBufts": 74, "NoHost": 75, "NoAlloc": 76, "LoadMTP": 77,
		}}},
		{reflect.TypeFor[llamaContextParams](), want{160, map[string]uintptr{
			"NCtx": 0, "NBatch": 4, "NUbatch": 8, "NSeqMax": 12, "NRsSeq": 16, "NOutputsMax": 20,
			"NOutputsMaxPerSeq": 24, "NThreads": 28, "NThreadsBatch": 32, "CtxType": 36,
			"RopeScalingType": 40, "PoolingType": 44, "AttentionType": 48, "FlashAttnType": 52,
			"RopeFreqBase": 56, "RopeFreqScale": 60, "YarnExtFactor": 64, "YarnAttnFactor": 68,
			"YarnBetaFast": 72, "YarnBetaSlow": 76, "YarnOrigCtx": 80, "DefragThold": 84,
			"CbEval": 88, "CbEvalUserData": 96, "TypeK": 104, "TypeV": 108, "AbortCallback": 112,
			"AbortCallbackData": 120, "Embeddings": 128, "OffloadKQV": 129, "NoPerf": 130,
			"OpOffload": 131, "SwaFull": 132, "KVUnified": 133, "Samplers": 136, "NSamplers": 144,
			"CtxOther": 152,
		}}},
		{reflect.TypeFor[llamaBatch](), want{56, map[string]uintptr{
			"NTokens": 0, "Token": 8, "Embd": 16, "Pos": 24, "NSeqID": 32, "SeqID": 40, "Logits": 48,
		}}},
		{reflect.TypeFor[ggmlBackendFeature](), want{16, map[string]uintptr{"Name": 0, "Value": 8}}},
	}
	for _, c := range cases {
		if c.typ.Size() != c.want.size {
			t.Errorf("unsafe.Sizeof(%s) = %d, want %d", c.typ.Name(), c.typ.Size(), c.want.size)
		}
		named := 0
		for i := range c.typ.NumField() {
			f := c.typ.Field(i)
			if f.Name == "_" {
				continue
			}
			named++
			off, ok := c.want.offsets[f.Name]
			if !ok {
				t.Errorf("%s.%s: unexpected field", c.typ.Name(), f.Name)
				continue
			}
			if f.Offset != off {
				t.Errorf("%s.%s at offset %d, want %d", c.typ.Name(), f.Name, f.Offset, off)
			}
		}
		if named != len(c.want.offsets) {
			t.Errorf("%s has %d named fields, want %d", c.typ.Name(), named, len(c.want.offsets))
		}
	}
	// The same sizes, spelled as the brief asks.
	if s := unsafe.Sizeof(llamaModelParams{}); s != 80 {
		t.Errorf("unsafe.Sizeof(llamaModelParams{}) = %d", s)
	}
	if s := unsafe.Sizeof(llamaContextParams{}); s != 160 {
		t.Errorf("unsafe.Sizeof(llamaContextParams{}) = %d", s)
	}
	if s := unsafe.Sizeof(llamaBatch{}); s != 56 {
		t.Errorf("unsafe.Sizeof(llamaBatch{}) = %d", s)
	}
}

// TestDefaultParams checks the mirrors against the library itself: the
// defaults returned by value through purego must equal the initialisers in
// llama_model_default_params (src/llama-model.cpp) and
// llama_context_default_params (src/llama-context.cpp). A shifted field would
// show up here.
func TestDefaultParams(t *testing.T) {
	l := loadOrSkip(t)

	mp := l.llamaModelDefaultParams()
	wantM := llamaModelParams{
		NGPULayers: -1, SplitMode: 1 /* LAYER */, LoadMode: -1 /* AUTO */, LazyMode: 1, /* AUTO */
		UseExtraBufts: true,
	}
	if mp != wantM {
		t.Errorf("llama_model_default_params() = %+v\nwant %+v", mp, wantM)
	}

	cp := l.llamaContextDefaultParams()
	wantC := llamaContextParams{
		NCtx: 512, NBatch: 2048, NUbatch: 512, NSeqMax: 1, NRsSeq: 0, NOutputsMax: 0, NOutputsMaxPerSeq: 1,
		NThreads: 4, NThreadsBatch: 4, // GGML_DEFAULT_N_THREADS
		CtxType: 0, RopeScalingType: -1, PoolingType: -1, AttentionType: -1, FlashAttnType: llamaFlashAttnAuto,
		RopeFreqBase: 0, RopeFreqScale: 0, YarnExtFactor: -1, YarnAttnFactor: -1, YarnBetaFast: -1, YarnBetaSlow: -1,
		YarnOrigCtx: 0, DefragThold: -1,
		TypeK: 1, TypeV: 1, // GGML_TYPE_F16
		Embeddings: false, OffloadKQV: true, NoPerf: true, OpOffload: true, SwaFull: true, KVUnified: false,
	}
	if cp != wantC {
		t.Errorf("llama_context_default_params() = %+v\nwant %+v", cp, wantC)
	}
}
