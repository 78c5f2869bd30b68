package reference

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The pooling types of enum llama_pooling_type (include/llama.h).
const (
	PoolingUnspecified = -1 // LLAMA_POOLING_TYPE_UNSPECIFIED: the model's {arch}.pooling_type
	PoolingNone        = 0
	PoolingMean        = 1
	PoolingCLS         = 2
	PoolingLast        = 3
	PoolingRank        = 4
)

// embedAPI is the part of libllama the embedding oracles call, bound on first
// use (the symbols are exported by the libllama that Load opened).
type embedAPI struct {
	getEmbeddingsSeq func(ctx uintptr, seq int32) *float32
	getEmbeddingsIth func(ctx uintptr, i int32) *float32
	poolingType      func(ctx uintptr) int32
	modelNEmbd       func(model uintptr) int32
	modelNClsOut     func(model uintptr) uint32
}

var (
	embedOnce sync.Once
	embedFns  embedAPI
	embedErr  error
)

func (l *Lib) embedAPI() (*embedAPI, error) {
	embedOnce.Do(func() {
		h, err := dlopen(filepath.Join(l.dir, libLlama), rtldNow|rtldGlobal)
		if err != nil {
			embedErr = fmt.Errorf("reference: dlopen %s: %w", libLlama, err)
			return
		}
		for _, b := range []struct {
			fptr any
			name string
		}{
			{&embedFns.getEmbeddingsSeq, "llama_get_embeddings_seq"},
			{&embedFns.getEmbeddingsIth, "llama_get_embeddings_ith"},
			{&embedFns.poolingType, "llama_pooling_type"},
			{&embedFns.modelNEmbd, "llama_model_n_embd"},
			{&embedFns.modelNClsOut, "llama_model_n_cls_out"},
		} {
			sym, err := dlsym(h, b.name)
			if err != nil {
				embedErr = fmt.Errorf("reference: dlsym %s: %w", b.name, err)
				return
			}
			purego.RegisterFunc(b.fptr, sym)
		}
	})
	if embedErr != nil {
		return nil, embedErr
	}
	return &embedFns, nil
}

// Embedding is what [Model.Embed] returns.
type Embedding struct {
	// Pooling is the context's pooling type (llama_pooling_type): the one
	// asked, or the model's when PoolingUnspecified was.
	Pooling int
	// Pooled is llama_get_embeddings_seq(ctx, 0) when Pooling is not
	// PoolingNone: n_embd values (n_cls_out for PoolingRank).
	Pooled []float32
	// Rows are llama_get_embeddings_ith(ctx, i) for every token i when
	// Pooling is PoolingNone: n_embd values each.
	Rows [][]float32
}

// Embed evaluates prompt as sequence 0 of a fresh context with embeddings
// on, as llama-server's --embeddings slot computes an embedding task:
// llama_context_default_params with embeddings = true, pooling_type =
// pooling (PoolingUnspecified: the model's), n_ctx = len(prompt) padded to
// 256, n_batch = n_ubatch = max(512, len(prompt)) (one micro-batch when the
// prompt fits, as llama-server sets n_batch = n_ubatch for embeddings and
// non-causal attention needs), every token an output, n_threads =
// n_threads_batch = threads. It returns the pooled vector or every token's
// row (see Embedding), copied.
func (m *Model) Embed(prompt []int32, pooling, threads int) (*Embedding, error) {
	api, err := m.lib.embedAPI()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx, err := m.newEmbedContext(prompt, pooling, threads, 0)
	if err != nil {
		return nil, err
	}
	defer m.lib.llamaFree(ctx)
	if err := m.decodeSuffix(ctx, prompt, len(prompt)); err != nil {
		return nil, err
	}
	return m.embeddings(api, ctx, len(prompt))
}

// newEmbedContext makes Embed's context; cb, when not 0, is the eval
// callback (TraceEmbed). The caller holds m.mu and frees the context.
func (m *Model) newEmbedContext(prompt []int32, pooling, threads int, cb uintptr) (uintptr, error) {
	return m.newContextWith(prompt, len(prompt), threads, func(p *llamaContextParams) {
		p.Embeddings = true
		p.PoolingType = int32(pooling)
		p.NBatch = max(512, uint32(len(prompt)))
		p.NUbatch = p.NBatch
		p.CbEval = cb
	})
}

// embeddings copies the embeddings of a context that evaluated n tokens.
func (m *Model) embeddings(api *embedAPI, ctx uintptr, n int) (*Embedding, error) {
	e := &Embedding{Pooling: int(api.poolingType(ctx))}
	nEmbd := int(api.modelNEmbd(m.ptr))
	if e.Pooling == PoolingNone {
		for i := range n {
			p := api.getEmbeddingsIth(ctx, int32(i))
			if p == nil {
				return nil, fmt.Errorf("reference: llama_get_embeddings_ith(%d) returned NULL", i)
			}
			e.Rows = append(e.Rows, append([]float32(nil), unsafe.Slice(p, nEmbd)...))
		}
		return e, nil
	}
	p := api.getEmbeddingsSeq(ctx, 0)
	if p == nil {
		return nil, errors.New("reference: llama_get_embeddings_seq(0) returned NULL")
	}
	if e.Pooling == PoolingRank {
		nEmbd = int(api.modelNClsOut(m.ptr))
	}
	e.Pooled = append([]float32(nil), unsafe.Slice(p, nEmbd)...)
	return e, nil
}

// TraceEmbed is Embed with an eval callback observing the graph's nodes
// (keep as in TraceOutputs; nil keeps every node): the nodes' values in
// evaluation order, and the embedding.
func (m *Model) TraceEmbed(prompt []int32, pooling, threads int, keep func(name string) bool) ([]Tensor, *Embedding, error) {
	api, err := m.lib.embedAPI()
	if err != nil {
		return nil, nil, err
	}
	traceOnce.Do(func() { theTracer.cb = purego.NewCallback(theTracer.callback) })
	tr := &theTracer
	tr.mu.Lock()
	defer tr.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	tr.tensors, tr.keep = nil, keep
	defer func() { tr.keep = nil }()
	ctx, err := m.newEmbedContext(prompt, pooling, threads, tr.cb)
	if err != nil {
		return nil, nil, err
	}
	defer m.lib.llamaFree(ctx)
	if err := m.decodeSuffix(ctx, prompt, len(prompt)); err != nil {
		return nil, nil, err
	}
	e, err := m.embeddings(api, ctx, len(prompt))
	if err != nil {
		return nil, nil, err
	}
	out := tr.tensors
	tr.tensors = nil
	return out, e, nil
}

var (
	normOnce sync.Once
	normFn   func(inp, out *float32, n, norm int32)
	normErr  error
)

// EmbdNormalize calls libllama-common's common_embd_normalize(inp, out,
// len(inp), norm) (common/common.cpp; the C++ symbol
// _Z21common_embd_normalizePKfPfii takes plain pointers and ints) and
// returns out.
func (l *Lib) EmbdNormalize(inp []float32, norm int) ([]float32, error) {
	normOnce.Do(func() {
		h, err := dlopen(filepath.Join(l.dir, "libllama-common.so"), rtldNow|rtldGlobal)
		if err != nil {
			normErr = fmt.Errorf("reference: dlopen libllama-common.so: %w", err)
			return
		}
		sym, err := dlsym(h, "_Z21common_embd_normalizePKfPfii")
		if err != nil {
			normErr = fmt.Errorf("reference: dlsym common_embd_normalize: %w", err)
			return
		}
		purego.RegisterFunc(&normFn, sym)
	})
	if normErr != nil {
		return nil, normErr
	}
	if len(inp) == 0 {
		return []float32{}, nil
	}
	out := make([]float32, len(inp))
	normFn(&inp[0], &out[0], int32(len(inp)), int32(norm))
	return out, nil
}
