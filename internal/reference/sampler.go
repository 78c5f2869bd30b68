package reference

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// This file binds libllama's llama_sampler_* API (include/llama.h) so that
// tests can run the reference's own sampler chain on logits the reference
// computed, and a step-by-step decoding session that feeds sampled tokens
// back. The chain is assembled stage by stage by the caller; package sample's
// oracle test assembles it exactly as common_sampler_init does.

// TokenData mirrors llama_token_data {llama_token id; float logit; float p}.
type TokenData struct {
	ID    int32
	Logit float32
	P     float32
}

// llamaTokenDataArray mirrors llama_token_data_array.
type llamaTokenDataArray struct {
	Data     uintptr // llama_token_data *
	Size     uint64  // size_t
	Selected int64
	Sorted   bool
	_        [7]byte
}

// LogitBias mirrors llama_logit_bias {llama_token token; float bias}.
type LogitBias struct {
	Token int32
	Bias  float32
}

// Compile-time checks of the layouts above (a size other than the C one
// makes an array length negative).
var (
	_ [unsafe.Sizeof(llamaTokenDataArray{}) - 32]struct{}
	_ [32 - unsafe.Sizeof(llamaTokenDataArray{})]struct{}
	_ [unsafe.Sizeof(TokenData{}) - 12]struct{}
	_ [12 - unsafe.Sizeof(TokenData{})]struct{}
	_ [unsafe.Sizeof(LogitBias{}) - 8]struct{}
	_ [8 - unsafe.Sizeof(LogitBias{})]struct{}
)

// samplerAPI holds the sampler entry points of libllama.
type samplerAPI struct {
	chainInit      func(noPerf bool) uintptr // struct llama_sampler_chain_params {bool no_perf} by value
	chainAdd       func(chain, smpl uintptr)
	initLogitBias  func(nVocab, n int32, bias *LogitBias) uintptr
	initPenalties  func(nVocab, lastN int32, repeat, freq, present float32) uintptr
	initDry        func(vocab uintptr, mult, base float32, allowed, lastN int32, breakers *uintptr, n uint64) uintptr
	initTopNSigma  func(n float32) uintptr
	initTopK       func(k int32) uintptr
	initTypical    func(p float32, minKeep uint64) uintptr
	initTopP       func(p float32, minKeep uint64) uintptr
	initMinP       func(p float32, minKeep uint64) uintptr
	initXTC        func(p, t float32, minKeep uint64, seed uint32) uintptr
	initTempExt    func(t, delta, exponent float32) uintptr
	initDist       func(seed uint32) uintptr
	apply          func(smpl uintptr, cur *llamaTokenDataArray)
	accept         func(smpl uintptr, tok int32)
	reset          func(smpl uintptr)
	free           func(smpl uintptr)
	getSeed        func(smpl uintptr) uint32
	suppressTokens func(vocab uintptr, n *int32) *int32
	metaValStr     func(model uintptr, key string, buf *byte, size uint64) int32
}

var (
	samplerOnce sync.Once
	samplerFns  *samplerAPI
	samplerErr  error
)

// sampler returns the bound sampler API, binding it on first use from the
// already loaded libllama.
func (l *Lib) sampler() (*samplerAPI, error) {
	samplerOnce.Do(func() {
		h, err := dlopen(filepath.Join(l.dir, libLlama), rtldNow|rtldNoload)
		if err != nil || h == 0 {
			samplerErr = fmt.Errorf("reference: %s is not loaded: %v", libLlama, err)
			return
		}
		s := &samplerAPI{}
		for _, f := range []struct {
			fptr any
			name string
		}{
			{&s.chainInit, "llama_sampler_chain_init"}, {&s.chainAdd, "llama_sampler_chain_add"},
			{&s.initLogitBias, "llama_sampler_init_logit_bias"}, {&s.initPenalties, "llama_sampler_init_penalties"},
			{&s.initDry, "llama_sampler_init_dry"}, {&s.initTopNSigma, "llama_sampler_init_top_n_sigma"},
			{&s.initTopK, "llama_sampler_init_top_k"}, {&s.initTypical, "llama_sampler_init_typical"},
			{&s.initTopP, "llama_sampler_init_top_p"}, {&s.initMinP, "llama_sampler_init_min_p"},
			{&s.initXTC, "llama_sampler_init_xtc"}, {&s.initTempExt, "llama_sampler_init_temp_ext"},
			{&s.initDist, "llama_sampler_init_dist"}, {&s.apply, "llama_sampler_apply"},
			{&s.accept, "llama_sampler_accept"}, {&s.reset, "llama_sampler_reset"}, {&s.free, "llama_sampler_free"},
			{&s.getSeed, "llama_sampler_get_seed"}, {&s.suppressTokens, "llama_vocab_get_suppress_tokens"},
			{&s.metaValStr, "llama_model_meta_val_str"},
		} {
			sym, err := dlsym(h, f.name)
			if err != nil {
				samplerErr = fmt.Errorf("reference: dlsym %s: %w", f.name, err)
				return
			}
			purego.RegisterFunc(f.fptr, sym)
		}
		samplerFns = s
	})
	return samplerFns, samplerErr
}

// SamplerChain is a llama_sampler chain (llama_sampler_chain_init) of the
// reference, built with its Add methods in the order they are called. It is
// not safe for concurrent use; Free releases it.
type SamplerChain struct {
	m     *Model
	api   *samplerAPI
	chain uintptr
	buf   []TokenData
}

// NewSamplerChain starts an empty chain (llama_sampler_chain_init with
// no_perf = false, as common_sampler_init sets it from
// common_params_sampling's default).
func (m *Model) NewSamplerChain() (*SamplerChain, error) {
	api, err := m.lib.sampler()
	if err != nil {
		return nil, err
	}
	return &SamplerChain{m: m, api: api, chain: api.chainInit(false)}, nil
}

func (c *SamplerChain) add(s uintptr) { c.api.chainAdd(c.chain, s) }

// AddLogitBias adds llama_sampler_init_logit_bias(n_vocab, len(b), b).
func (c *SamplerChain) AddLogitBias(b []LogitBias) {
	var p *LogitBias
	if len(b) > 0 {
		p = &b[0]
	}
	var pin runtime.Pinner
	if p != nil {
		pin.Pin(p)
	}
	c.add(c.api.initLogitBias(int32(c.m.nVocab), int32(len(b)), p))
	pin.Unpin()
}

// AddPenalties adds llama_sampler_init_penalties(n_vocab, last_n, repeat,
// freq, present).
func (c *SamplerChain) AddPenalties(lastN int32, repeat, freq, present float32) {
	c.add(c.api.initPenalties(int32(c.m.nVocab), lastN, repeat, freq, present))
}

// AddDry adds llama_sampler_init_dry(vocab, multiplier, base, allowed_length,
// penalty_last_n, breakers) with the model's vocabulary.
func (c *SamplerChain) AddDry(mult, base float32, allowed, lastN int32, breakers []string) {
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := make([]uintptr, len(breakers)+1)
	for i, b := range breakers {
		s := append([]byte(b), 0)
		pin.Pin(&s[0])
		ptrs[i] = uintptr(unsafe.Pointer(&s[0]))
	}
	pin.Pin(&ptrs[0])
	c.m.mu.Lock()
	vocab := c.m.vocab
	c.m.mu.Unlock()
	c.add(c.api.initDry(vocab, mult, base, allowed, lastN, &ptrs[0], uint64(len(breakers))))
}

// AddTopNSigma adds llama_sampler_init_top_n_sigma(n).
func (c *SamplerChain) AddTopNSigma(n float32) { c.add(c.api.initTopNSigma(n)) }

// AddTopK adds llama_sampler_init_top_k(k).
func (c *SamplerChain) AddTopK(k int32) { c.add(c.api.initTopK(k)) }

// AddTypical adds llama_sampler_init_typical(p, min_keep).
func (c *SamplerChain) AddTypical(p float32, minKeep int) {
	c.add(c.api.initTypical(p, uint64(minKeep)))
}

// AddTopP adds llama_sampler_init_top_p(p, min_keep).
func (c *SamplerChain) AddTopP(p float32, minKeep int) { c.add(c.api.initTopP(p, uint64(minKeep))) }

// AddMinP adds llama_sampler_init_min_p(p, min_keep).
func (c *SamplerChain) AddMinP(p float32, minKeep int) { c.add(c.api.initMinP(p, uint64(minKeep))) }

// AddXTC adds llama_sampler_init_xtc(probability, threshold, min_keep, seed).
func (c *SamplerChain) AddXTC(p, t float32, minKeep int, seed uint32) {
	c.add(c.api.initXTC(p, t, uint64(minKeep), seed))
}

// AddTempExt adds llama_sampler_init_temp_ext(temp, delta, exponent).
func (c *SamplerChain) AddTempExt(t, delta, exponent float32) {
	c.add(c.api.initTempExt(t, delta, exponent))
}

// AddDist adds llama_sampler_init_dist(seed).
func (c *SamplerChain) AddDist(seed uint32) { c.add(c.api.initDist(seed)) }

// Applied is the llama_token_data_array a chain left: the candidates (a
// copy, in order, from wherever the array's data pointer ended), the index of
// the selected one and the array's sorted flag.
type Applied struct {
	Cands    []TokenData
	Selected int
	Sorted   bool
}

// Apply runs llama_sampler_apply(chain, cur_p) on a llama_token_data_array
// built from logits as common_sampler's set_logits builds it ({id, logit, 0}
// for every token, selected -1, unsorted) and returns what the chain left.
func (c *SamplerChain) Apply(logits []float32) (Applied, error) {
	if len(logits) != c.m.nVocab {
		return Applied{}, fmt.Errorf("reference: %d logits for a vocabulary of %d", len(logits), c.m.nVocab)
	}
	if cap(c.buf) < len(logits) {
		c.buf = make([]TokenData, len(logits))
	}
	buf := c.buf[:len(logits)]
	for i, l := range logits {
		buf[i] = TokenData{ID: int32(i), Logit: l}
	}
	arr := &llamaTokenDataArray{Data: uintptr(unsafe.Pointer(&buf[0])), Size: uint64(len(buf)), Selected: -1}
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	pin.Pin(arr)
	c.api.apply(c.chain, arr)
	pin.Unpin()
	base := uintptr(unsafe.Pointer(&buf[0]))
	off := (arr.Data - base) / unsafe.Sizeof(TokenData{})
	if arr.Data < base || off+uintptr(arr.Size) > uintptr(len(buf)) {
		return Applied{}, errors.New("reference: llama_sampler_apply moved the candidates outside their buffer")
	}
	out := Applied{Cands: append([]TokenData(nil), buf[off:off+uintptr(arr.Size)]...), Selected: int(arr.Selected), Sorted: arr.Sorted}
	if arr.Selected < 0 || arr.Selected >= int64(len(out.Cands)) {
		return out, fmt.Errorf("reference: no token selected (%d of %d)", arr.Selected, len(out.Cands))
	}
	return out, nil
}

// Accept runs llama_sampler_accept(chain, tok).
func (c *SamplerChain) Accept(tok int32) { c.api.accept(c.chain, tok) }

// Reset runs llama_sampler_reset(chain).
func (c *SamplerChain) Reset() { c.api.reset(c.chain) }

// Seed returns llama_sampler_get_seed(chain).
func (c *SamplerChain) Seed() uint32 { return c.api.getSeed(c.chain) }

// Free releases the chain and its samplers (llama_sampler_free).
func (c *SamplerChain) Free() {
	if c.chain != 0 {
		c.api.free(c.chain)
		c.chain = 0
	}
}

// lockVocab binds the sampler API and takes the model's lock for a
// vocabulary call; unlock releases it.
func (m *Model) lockVocab() (api *samplerAPI, unlock func(), err error) {
	if api, err = m.lib.sampler(); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	if m.ptr == 0 {
		m.mu.Unlock()
		return nil, nil, errClosed
	}
	return api, m.mu.Unlock, nil
}

// SuppressTokens returns llama_vocab_get_suppress_tokens: the model's
// tokenizer.ggml.suppress_tokens as the reference loaded them.
func (m *Model) SuppressTokens() ([]int32, error) {
	api, unlock, err := m.lockVocab()
	if err != nil {
		return nil, err
	}
	defer unlock()
	var n int32
	p := api.suppressTokens(m.vocab, &n)
	if n == 0 || p == nil {
		return nil, nil
	}
	return append([]int32(nil), unsafe.Slice(p, n)...), nil
}

// MetaValStr returns llama_model_meta_val_str(model, key): the metadata
// value as the reference keeps it as a string (false when absent; arrays are
// not kept).
func (m *Model) MetaValStr(key string) (string, bool, error) {
	api, unlock, err := m.lockVocab()
	if err != nil {
		return "", false, err
	}
	defer unlock()
	buf := make([]byte, 256)
	for range 2 {
		n := api.metaValStr(m.ptr, key, &buf[0], uint64(len(buf)))
		switch {
		case n < 0:
			return "", false, nil
		case int(n) < len(buf):
			return string(buf[:n]), true, nil
		}
		buf = make([]byte, n+1)
	}
	return "", false, errors.New("reference: llama_model_meta_val_str: buffer size did not converge")
}
