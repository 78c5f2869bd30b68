package reference

import "structs"

// This file mirrors the C structs of llama.h (llama.cpp v0.5.0, the squashed
// commit de3ff81 shipped in node-llama-cpp@3.22.1 as llama/gitRelease.bundle)
// that cross the purego boundary by value. Field order, types and padding
// follow the header exactly for linux/amd64 (System V, LP64); explicit "_"
// fields spell out the padding the C compiler inserts. abi_test.go checks the
// sizes and offsets against values derived from the header by hand.
//
// C pointers are held as uintptr: they point into C memory (or into Go memory
// pinned for the duration of a call), never to Go-managed objects that the
// garbage collector must see.

// llamaModelParams mirrors struct llama_model_params (80 bytes).
type llamaModelParams struct {
	_                        structs.HostLayout
	Devices                  uintptr // ggml_backend_dev_t *
	TensorBuftOverrides      uintptr // const struct llama_model_tensor_buft_override *
	NGPULayers               int32
	SplitMode                int32 // enum llama_split_mode
	LoadMode                 int32 // enum llama_load_mode
	LazyMode                 int32 // enum llama_lazy_mode
	MainGPU                  int32
	_                        [4]byte
	TensorSplit              uintptr // const float *
	ProgressCallback         uintptr // llama_progress_callback
	ProgressCallbackUserData uintptr // void *
	KVOverrides              uintptr // const struct llama_model_kv_override *
	VocabOnly                bool
	CheckTensors             bool
	UseExtraBufts            bool
	NoHost                   bool
	NoAlloc                  bool
	LoadMTP                  bool
	_                        [2]byte
}

// llamaContextParams mirrors struct llama_context_params (160 bytes).
type llamaContextParams struct {
	_                 structs.HostLayout
	NCtx              uint32
	NBatch            uint32
	NUbatch           uint32
	NSeqMax           uint32
	NRsSeq            uint32
	NOutputsMax       uint32
	NOutputsMaxPerSeq uint32
	NThreads          int32
	NThreadsBatch     int32
	CtxType           int32 // enum llama_context_type
	RopeScalingType   int32 // enum llama_rope_scaling_type
	PoolingType       int32 // enum llama_pooling_type
	AttentionType     int32 // enum llama_attention_type
	FlashAttnType     int32 // enum llama_flash_attn_type
	RopeFreqBase      float32
	RopeFreqScale     float32
	YarnExtFactor     float32
	YarnAttnFactor    float32
	YarnBetaFast      float32
	YarnBetaSlow      float32
	YarnOrigCtx       uint32
	DefragThold       float32
	CbEval            uintptr // ggml_backend_sched_eval_callback
	CbEvalUserData    uintptr // void *
	TypeK             int32   // enum ggml_type
	TypeV             int32   // enum ggml_type
	AbortCallback     uintptr // ggml_abort_callback
	AbortCallbackData uintptr // void *
	Embeddings        bool
	OffloadKQV        bool
	NoPerf            bool
	OpOffload         bool
	SwaFull           bool
	KVUnified         bool
	_                 [2]byte
	Samplers          uintptr // struct llama_sampler_seq_config *
	NSamplers         uint64  // size_t
	CtxOther          uintptr // struct llama_context *
}

// llamaBatch mirrors struct llama_batch (56 bytes).
type llamaBatch struct {
	_       structs.HostLayout
	NTokens int32
	_       [4]byte
	Token   uintptr // llama_token *
	Embd    uintptr // float *
	Pos     uintptr // llama_pos *
	NSeqID  uintptr // int32_t *
	SeqID   uintptr // llama_seq_id **
	Logits  uintptr // int8_t *
}

// ggmlBackendFeature mirrors struct ggml_backend_feature (16 bytes) of
// ggml-backend.h.
type ggmlBackendFeature struct {
	_     structs.HostLayout
	Name  *byte
	Value *byte
}

// Enum values from llama.h / ggml.h used by this package.
const (
	llamaLoadModeMmap   = 1  // LLAMA_LOAD_MODE_MMAP
	llamaSplitModeNone  = 0  // LLAMA_SPLIT_MODE_NONE
	llamaFlashAttnAuto  = -1 // LLAMA_FLASH_ATTN_TYPE_AUTO
	ggmlLogLevelWarn    = 3  // GGML_LOG_LEVEL_WARN
	ggmlLogLevelError   = 4  // GGML_LOG_LEVEL_ERROR
	ggmlLogLevelCont    = 5  // GGML_LOG_LEVEL_CONT
	llamaTokenizeFailed = -2147483648
)
