package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

var negInf = math.Inf(-1)

// ErrUnsupported marks a model the runtime cannot run yet (architecture,
// tensor type, hyperparameter); errors.Is works through the wrapping.
var ErrUnsupported = errors.New("not supported yet")

// Hparams are the hyperparameters of a llama-family model, read from GGUF
// metadata with llama.cpp's key names and defaults.
type Hparams struct {
	NEmbd     int     // {arch}.embedding_length
	NLayer    int     // {arch}.block_count
	NFF       int     // {arch}.feed_forward_length
	NHead     int     // {arch}.attention.head_count
	NHeadKV   int     // {arch}.attention.head_count_kv (default NHead)
	HeadDim   int     // {arch}.attention.key_length (default NEmbd/NHead)
	NRot      int     // {arch}.rope.dimension_count (default HeadDim)
	NCtxTrain int     // {arch}.context_length
	RMSEps    float32 // {arch}.attention.layer_norm_rms_epsilon
	FreqBase  float32 // {arch}.rope.freq_base (default 10000)
	NVocab    int     // rows of token_embd.weight
}

// Layer holds one transformer block's weights.
type Layer struct {
	AttnNorm, FFNNorm       []float32
	Wq, Wk, Wv, Wo          *quant.Matrix
	FFNGate, FFNUp, FFNDown *quant.Matrix
}

// Model is a loaded llama-graph model whose weights are views into the
// memory-mapped GGUF file (nothing is copied but the f32 norm vectors).
type Model struct {
	Arch       string
	HP         Hparams
	TokEmbd    *quant.Matrix
	Output     *quant.Matrix
	OutputNorm []float32
	Layers     []Layer
}

// Load binds the tensors and hyperparameters of f to a Model. It refuses, with
// an error wrapping ErrUnsupported that names the reason, an architecture other
// than llama, a tensor type quant cannot multiply, or RoPE scaling; a missing
// tensor or a shape that disagrees with the hyperparameters is an error too.
func Load(f *gguf.File) (*Model, error) {
	arch := f.Architecture()
	if arch != "llama" {
		if arch == "" {
			return nil, fmt.Errorf("model: general.architecture missing")
		}
		return nil, fmt.Errorf("model: architecture %q: %w", arch, ErrUnsupported)
	}
	u := func(key string, def int, required bool) (int, error) {
		v, ok := f.GetUint64(arch + "." + key)
		if !ok {
			if required {
				return 0, fmt.Errorf("model: metadata %s.%s missing", arch, key)
			}
			return def, nil
		}
		if v == 0 || v > 1<<24 {
			return 0, fmt.Errorf("model: metadata %s.%s = %d out of range", arch, key, v)
		}
		return int(v), nil
	}
	var hp Hparams
	var err error
	if hp.NEmbd, err = u("embedding_length", 0, true); err != nil {
		return nil, err
	}
	if hp.NLayer, err = u("block_count", 0, true); err != nil {
		return nil, err
	}
	if hp.NFF, err = u("feed_forward_length", 0, true); err != nil {
		return nil, err
	}
	if hp.NHead, err = u("attention.head_count", 0, true); err != nil {
		return nil, err
	}
	if hp.NHeadKV, err = u("attention.head_count_kv", hp.NHead, false); err != nil {
		return nil, err
	}
	if hp.NEmbd%hp.NHead != 0 || hp.NHead%hp.NHeadKV != 0 {
		return nil, fmt.Errorf("model: %d heads, %d kv heads, n_embd %d do not divide", hp.NHead, hp.NHeadKV, hp.NEmbd)
	}
	if hp.HeadDim, err = u("attention.key_length", hp.NEmbd/hp.NHead, false); err != nil {
		return nil, err
	}
	if vl, _ := u("attention.value_length", hp.HeadDim, false); vl != hp.HeadDim {
		return nil, fmt.Errorf("model: value_length %d != key_length %d: %w", vl, hp.HeadDim, ErrUnsupported)
	}
	if hp.NRot, err = u("rope.dimension_count", hp.HeadDim, false); err != nil {
		return nil, err
	}
	if hp.NRot != hp.HeadDim || hp.NRot%2 != 0 {
		return nil, fmt.Errorf("model: rope.dimension_count %d with head size %d: %w", hp.NRot, hp.HeadDim, ErrUnsupported)
	}
	if hp.NCtxTrain, err = u("context_length", 2048, false); err != nil {
		return nil, err
	}
	eps, ok := f.GetFloat64(arch + ".attention.layer_norm_rms_epsilon")
	if !ok {
		return nil, fmt.Errorf("model: metadata %s.attention.layer_norm_rms_epsilon missing", arch)
	}
	hp.RMSEps = float32(eps)
	hp.FreqBase = 10000
	if fb, ok := f.GetFloat64(arch + ".rope.freq_base"); ok {
		hp.FreqBase = float32(fb)
	}
	if st, ok := f.GetString(arch + ".rope.scaling.type"); ok && st != "none" {
		return nil, fmt.Errorf("model: rope scaling %q: %w", st, ErrUnsupported)
	}
	if fs, ok := f.GetFloat64(arch + ".rope.scaling.factor"); ok && fs != 0 && fs != 1 {
		return nil, fmt.Errorf("model: rope scaling factor %g: %w", fs, ErrUnsupported)
	}

	m := &Model{Arch: arch}
	mat := func(name string, cols, rows int, optional bool) (*quant.Matrix, error) {
		t, ok := f.Tensor(name)
		if !ok {
			if optional {
				return nil, nil
			}
			return nil, fmt.Errorf("model: tensor %q missing", name)
		}
		if len(t.Ne) != 2 || t.Ne[0] != int64(cols) || (rows > 0 && t.Ne[1] != int64(rows)) {
			return nil, fmt.Errorf("model: tensor %q: shape %v, want [%d %d]", name, t.Ne, cols, rows)
		}
		q := &quant.Matrix{Name: name, Type: t.Type, Cols: cols, Rows: int(t.Ne[1]), Data: f.TensorData(t)}
		if err := q.Supported(); err != nil {
			return nil, fmt.Errorf("model: %w: %w", err, ErrUnsupported)
		}
		return q, nil
	}
	vec := func(name string, n int) ([]float32, error) {
		t, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("model: tensor %q missing", name)
		}
		if t.NElements() != int64(n) {
			return nil, fmt.Errorf("model: tensor %q: %d elements, want %d", name, t.NElements(), n)
		}
		q := &quant.Matrix{Name: name, Type: t.Type, Cols: n, Rows: 1, Data: f.TensorData(t)}
		if err := q.Supported(); err != nil {
			return nil, fmt.Errorf("model: %w: %w", err, ErrUnsupported)
		}
		out := make([]float32, n)
		q.Row(0, out)
		return out, nil
	}
	if m.TokEmbd, err = mat("token_embd.weight", hp.NEmbd, 0, false); err != nil {
		return nil, err
	}
	hp.NVocab = m.TokEmbd.Rows
	if m.OutputNorm, err = vec("output_norm.weight", hp.NEmbd); err != nil {
		return nil, err
	}
	if m.Output, err = mat("output.weight", hp.NEmbd, hp.NVocab, true); err != nil {
		return nil, err
	}
	if m.Output == nil { // tied embeddings
		m.Output = m.TokEmbd
	}
	nq, nkv := hp.NHead*hp.HeadDim, hp.NHeadKV*hp.HeadDim
	m.Layers = make([]Layer, hp.NLayer)
	for i := range m.Layers {
		l := &m.Layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		if l.AttnNorm, err = vec(p+"attn_norm.weight", hp.NEmbd); err != nil {
			return nil, err
		}
		if l.FFNNorm, err = vec(p+"ffn_norm.weight", hp.NEmbd); err != nil {
			return nil, err
		}
		for _, b := range []struct {
			dst        **quant.Matrix
			name       string
			cols, rows int
		}{
			{&l.Wq, "attn_q.weight", hp.NEmbd, nq},
			{&l.Wk, "attn_k.weight", hp.NEmbd, nkv},
			{&l.Wv, "attn_v.weight", hp.NEmbd, nkv},
			{&l.Wo, "attn_output.weight", nq, hp.NEmbd},
			{&l.FFNGate, "ffn_gate.weight", hp.NEmbd, hp.NFF},
			{&l.FFNUp, "ffn_up.weight", hp.NEmbd, hp.NFF},
			{&l.FFNDown, "ffn_down.weight", hp.NFF, hp.NEmbd},
		} {
			if *b.dst, err = mat(p+b.name, b.cols, b.rows, false); err != nil {
				return nil, err
			}
		}
	}
	m.HP = hp
	return m, nil
}

// Context is one sequence's state: its KV cache (f16, as llama.cpp's default
// type_k/type_v) and the number of positions already evaluated.
type Context struct {
	m       *Model
	nCtx    int
	nPast   int
	k, v    [][]uint16 // per layer: nCtx cells × nkv f16 values
	threads int
	theta   float32
}

// NewContext makes an empty context of nCtx cells that runs matmuls on
// threads goroutines.
func (m *Model) NewContext(nCtx, threads int) *Context {
	nkv := m.HP.NHeadKV * m.HP.HeadDim
	c := &Context{m: m, nCtx: nCtx, threads: max(1, threads)}
	c.k = make([][]uint16, m.HP.NLayer)
	c.v = make([][]uint16, m.HP.NLayer)
	for i := range c.k {
		c.k[i] = make([]uint16, nCtx*nkv)
		c.v[i] = make([]uint16, nCtx*nkv)
	}
	c.theta = fmath.Powf(m.HP.FreqBase, -2.0/float32(m.HP.NRot))
	return c
}

// NPast is the number of positions held in the KV cache.
func (c *Context) NPast() int { return c.nPast }

// NUbatch is llama.cpp's default micro-batch size (n_ubatch).
const NUbatch = 512

// maxOneChunkKV is the largest padded KV length for which the reference's
// single-row decode uses flash_attn_ext_f16_one_chunk (nek1 < 512, with KV
// lengths padded to 256).
const maxOneChunkKV = 256

// Decode evaluates tokens at the next positions and returns the logits of the
// last one (NVocab floats). Prompts longer than NUbatch are split into
// micro-batches. It fails if the context would overflow, or when the
// reference would switch to an attention kernel not mirrored yet (a
// micro-batch of 64 or more rows, or a KV cache past 256 cells).
func (c *Context) Decode(tokens []int32) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, errors.New("model: decode of an empty batch")
	}
	if c.nPast+len(tokens) > c.nCtx {
		return nil, fmt.Errorf("model: %d tokens past %d cached exceed the context of %d", len(tokens), c.nPast, c.nCtx)
	}
	var logits []float32
	for len(tokens) > 0 {
		n := min(len(tokens), NUbatch)
		if n >= 64 {
			return nil, fmt.Errorf("model: micro-batch of %d rows would use the reference's tiled flash attention: %w", n, ErrUnsupported)
		}
		if c.nPast+n > maxOneChunkKV {
			return nil, fmt.Errorf("model: KV cache of %d cells would use the reference's split-KV attention: %w", c.nPast+n, ErrUnsupported)
		}
		for _, t := range tokens[:n] {
			if t < 0 || int(t) >= c.m.HP.NVocab {
				return nil, fmt.Errorf("model: token id %d outside the vocabulary of %d", t, c.m.HP.NVocab)
			}
		}
		logits = c.ubatch(tokens[:n], len(tokens) == n)
		tokens = tokens[n:]
	}
	return logits, nil
}

// ubatch runs one micro-batch through the graph; logits are computed for its
// last token only when wantLogits.
func (c *Context) ubatch(tokens []int32, wantLogits bool) []float32 {
	m, hp := c.m, c.m.HP
	n := len(tokens)
	d, hd := hp.NEmbd, hp.HeadDim
	nq, nkv := hp.NHead*hd, hp.NHeadKV*hd
	x := make([]float32, n*d)
	for j, t := range tokens {
		m.TokEmbd.Row(int(t), x[j*d:(j+1)*d])
	}
	cur := make([]float32, n*d)
	q := make([]float32, n*nq)
	k := make([]float32, n*nkv)
	v := make([]float32, n*nkv)
	attn := make([]float32, n*nq)
	o := make([]float32, n*d)
	cache := make([]float32, hp.NRot)
	qh := make([]uint16, hd)
	vkq := make([]uint16, hd)
	scale := 1 / fmath.Sqrtf(float32(hd))
	for il, l := range m.Layers {
		for j := range n {
			rmsNormMul(cur[j*d:(j+1)*d], x[j*d:(j+1)*d], l.AttnNorm, hp.RMSEps)
		}
		quant.MatMul(l.Wq, cur, n, q, c.threads)
		quant.MatMul(l.Wk, cur, n, k, c.threads)
		quant.MatMul(l.Wv, cur, n, v, c.threads)
		for j := range n {
			pos := c.nPast + j
			ropeCache(cache, pos, hp.NRot, c.theta)
			for h := range hp.NHead {
				ropeNormal(q[j*nq+h*hd:j*nq+(h+1)*hd], cache, hp.NRot)
			}
			for h := range hp.NHeadKV {
				ropeNormal(k[j*nkv+h*hd:j*nkv+(h+1)*hd], cache, hp.NRot)
			}
			quant.FP32ToFP16Row(k[j*nkv:(j+1)*nkv], c.k[il][pos*nkv:(pos+1)*nkv])
			quant.FP32ToFP16Row(v[j*nkv:(j+1)*nkv], c.v[il][pos*nkv:(pos+1)*nkv])
		}
		kc, vc := c.k[il], c.v[il]
		for j := range n {
			nKV := c.nPast + j + 1 // causal mask
			for h := range hp.NHead {
				hk := h / (hp.NHead / hp.NHeadKV)
				kr := func(ic int) []uint16 { return kc[ic*nkv+hk*hd : ic*nkv+(hk+1)*hd] }
				vr := func(ic int) []uint16 { return vc[ic*nkv+hk*hd : ic*nkv+(hk+1)*hd] }
				flashAttnRow(attn[j*nq+h*hd:j*nq+(h+1)*hd], q[j*nq+h*hd:j*nq+(h+1)*hd], kr, vr, nKV, scale, qh, vkq)
			}
		}
		quant.MatMul(l.Wo, attn, n, o, c.threads)
		// On the last layer llama.cpp keeps only the rows whose logits are
		// wanted (inp_out_ids) before the residual and the feed-forward.
		rows := n
		xr, or := x, o
		if il == hp.NLayer-1 && wantLogits && n > 1 {
			rows = 1
			xr, or = x[(n-1)*d:], o[(n-1)*d:]
		}
		for i := range rows * d {
			xr[i] = or[i] + xr[i]
		}
		for j := range rows {
			rmsNormMul(cur[j*d:(j+1)*d], xr[j*d:(j+1)*d], l.FFNNorm, hp.RMSEps)
		}
		gate := make([]float32, rows*hp.NFF)
		up := make([]float32, rows*hp.NFF)
		quant.MatMul(l.FFNGate, cur[:rows*d], rows, gate, c.threads)
		quant.MatMul(l.FFNUp, cur[:rows*d], rows, up, c.threads)
		swiglu(gate, gate, up)
		quant.MatMul(l.FFNDown, gate, rows, or[:rows*d], c.threads)
		for i := range rows * d {
			xr[i] = or[i] + xr[i]
		}
		if rows != n {
			x = xr[:d]
		}
	}
	c.nPast += n
	if !wantLogits {
		return nil
	}
	last := x[len(x)-d:]
	nrm := make([]float32, d)
	rmsNormMul(nrm, last, m.OutputNorm, hp.RMSEps)
	logits := make([]float32, hp.NVocab)
	quant.MatMul(m.Output, nrm, 1, logits, c.threads)
	return logits
}
