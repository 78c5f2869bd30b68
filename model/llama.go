package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
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
			if val, present := f.Get(arch + "." + key); present {
				return 0, fmt.Errorf("model: metadata %s.%s has type %s, want an integer", arch, key, val.Type)
			}
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
	float := func(key string, def float64, required bool) (float32, error) {
		v, ok := f.GetFloat64(arch + "." + key)
		if !ok {
			if val, present := f.Get(arch + "." + key); present {
				return 0, fmt.Errorf("model: metadata %s.%s has type %s, want a float", arch, key, val.Type)
			}
			if required {
				return 0, fmt.Errorf("model: metadata %s.%s missing", arch, key)
			}
			v = def
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fmt.Errorf("model: metadata %s.%s = %g, want a finite value >= 0", arch, key, v)
		}
		return float32(v), nil
	}
	if hp.RMSEps, err = float("attention.layer_norm_rms_epsilon", 0, true); err != nil {
		return nil, err
	}
	if hp.FreqBase, err = float("rope.freq_base", 10000, false); err != nil {
		return nil, err
	}
	if hp.FreqBase == 0 {
		return nil, fmt.Errorf("model: metadata %s.rope.freq_base is 0", arch)
	}
	if st, ok := f.GetString(arch + ".rope.scaling.type"); ok && st != "none" {
		return nil, fmt.Errorf("model: rope scaling %q: %w", st, ErrUnsupported)
	}
	if fs, ok := f.GetFloat64(arch + ".rope.scaling.factor"); ok && fs != 0 && fs != 1 {
		return nil, fmt.Errorf("model: rope scaling factor %g: %w", fs, ErrUnsupported)
	}

	m := &Model{Arch: arch}
	used := map[string]bool{}
	mat := func(name string, cols, rows int, optional bool) (*quant.Matrix, error) {
		t, ok := f.Tensor(name)
		used[name] = ok
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
		used[name] = ok
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
	// Like llama.cpp's loader, refuse tensors the graph does not use (a wrong
	// block_count, rope factors, biases this graph would ignore).
	if countTrue(used) != len(f.Tensors) {
		for _, t := range f.Tensors {
			if !used[t.Name] {
				return nil, fmt.Errorf("model: tensor %q is not used by the %s graph (%d layers): %w", t.Name, arch, hp.NLayer, ErrUnsupported)
			}
		}
	}
	m.HP = hp
	return m, nil
}

// Context is one sequence's state: its KV cache (f16, as llama.cpp's default
// type_k/type_v) and the number of positions already evaluated.
type Context struct {
	m           *Model
	nCtx        int // cells usable, as asked
	nCells      int // cells allocated: nCtx padded to 256 as llama.cpp pads n_ctx
	nPast       int
	k, v        [][]uint16     // per layer: nCells × nkv f16 values, zero where unwritten
	pool        *parallel.Pool // matmul workers, owned; released by Close
	attnThreads int
	theta       float32
	// trace, when set (tests), receives intermediate results under
	// llama.cpp's tensor names (cb names such as "Qcur-0").
	trace func(name string, data []float32)
}

func (c *Context) emit(name string, il int, data []float32) {
	if c.trace != nil {
		if il >= 0 {
			name = fmt.Sprintf("%s-%d", name, il)
		}
		c.trace(name, append([]float32(nil), data...))
	}
}

// kvPad is llama.cpp's KV padding: n_ctx and the KV length seen by attention
// (n_kv) are multiples of 256.
const kvPad = 256

// maxCtx bounds the context size (llama.cpp's n_ctx is a uint32).
const maxCtx = 1 << 30

// NewContext makes an empty context of nCtx cells that runs matmuls on a
// pool of threads workers (started here, stopped by Close; results do not
// depend on the pool's size). The reference's split-KV attention depends on its
// thread count; NewContext mirrors a reference running on the same number of
// threads (see SetAttnThreads). It refuses a size below 1 or above 2^30, or a
// KV cache larger than the machine's memory, naming the bytes needed.
func (m *Model) NewContext(nCtx, threads int) (*Context, error) {
	if nCtx < 1 || nCtx > maxCtx {
		return nil, fmt.Errorf("model: context size %d outside [1, %d]", nCtx, maxCtx)
	}
	nkv := m.HP.NHeadKV * m.HP.HeadDim
	nCells := (nCtx + kvPad - 1) / kvPad * kvPad
	kvBytes := uint64(m.HP.NLayer) * 2 * uint64(nCells) * uint64(nkv) * 2
	if mem := physicalMemory(); mem != 0 && kvBytes > mem {
		return nil, fmt.Errorf("model: a KV cache of %d cells needs %.1f GiB, more than this machine's %.1f GiB", nCtx, float64(kvBytes)/(1<<30), float64(mem)/(1<<30))
	}
	threads = max(1, threads)
	c := &Context{m: m, nCtx: nCtx, nCells: nCells, attnThreads: threads}
	c.k = make([][]uint16, m.HP.NLayer)
	c.v = make([][]uint16, m.HP.NLayer)
	for i := range c.k {
		c.k[i] = make([]uint16, c.nCells*nkv)
		c.v[i] = make([]uint16, c.nCells*nkv)
	}
	c.theta = fmath.Powf(m.HP.FreqBase, -2.0/float32(m.HP.NRot))
	c.pool = parallel.New(threads)
	return c, nil
}

// Close stops the context's matmul workers. The context must not be used
// afterwards; closing twice is harmless.
func (c *Context) Close() { c.pool.Close() }

// SetAttnThreads sets the thread count of the reference being mirrored by the
// split-KV attention kernel (single-row decode over 512 or more KV cells),
// whose chunking depends on it. It defaults to the context's thread count and
// is independent of the matmul pool's size.
func (c *Context) SetAttnThreads(n int) { c.attnThreads = max(1, n) }

// NPast is the number of positions held in the KV cache.
func (c *Context) NPast() int { return c.nPast }

// NCtx is the context size in tokens.
func (c *Context) NCtx() int { return c.nCtx }

// NUbatch is llama.cpp's default micro-batch size (n_ubatch).
const NUbatch = 512

// Decode evaluates tokens at the next positions and returns the logits of the
// last one (NVocab floats). Prompts longer than NUbatch are split into
// micro-batches, as llama.cpp does. It fails, naming the reason, on an empty
// batch, a token outside the vocabulary or a context overflow.
func (c *Context) Decode(tokens []int32) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, errors.New("model: decode of an empty batch")
	}
	if c.nPast+len(tokens) > c.nCtx {
		return nil, fmt.Errorf("model: %d tokens after %d cached exceed the context of %d", len(tokens), c.nPast, c.nCtx)
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= c.m.HP.NVocab {
			return nil, fmt.Errorf("model: token id %d outside the vocabulary of %d", t, c.m.HP.NVocab)
		}
	}
	var logits []float32
	for len(tokens) > 0 {
		n := min(len(tokens), NUbatch)
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
	scale := 1 / fmath.Sqrtf(float32(hd))
	for il, l := range m.Layers {
		for j := range n {
			rmsNormMul(cur[j*d:(j+1)*d], x[j*d:(j+1)*d], l.AttnNorm, hp.RMSEps)
		}
		c.emit("attn_norm", il, cur)
		quant.MatMul(l.Wq, cur, n, q, c.pool)
		quant.MatMul(l.Wk, cur, n, k, c.pool)
		quant.MatMul(l.Wv, cur, n, v, c.pool)
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
		c.emit("Qcur", il, q)
		c.emit("Kcur", il, k)
		c.emit("Vcur", il, v)
		c.attention(attn, q, c.k[il], c.v[il], n, scale)
		c.emit("kqv_out", il, attn)
		quant.MatMul(l.Wo, attn, n, o, c.pool)
		c.emit("attn_out", il, o)
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
		c.emit("ffn_inp", il, xr[:rows*d])
		for j := range rows {
			rmsNormMul(cur[j*d:(j+1)*d], xr[j*d:(j+1)*d], l.FFNNorm, hp.RMSEps)
		}
		c.emit("ffn_norm", il, cur[:rows*d])
		gate := make([]float32, rows*hp.NFF)
		up := make([]float32, rows*hp.NFF)
		quant.MatMul(l.FFNGate, cur[:rows*d], rows, gate, c.pool)
		quant.MatMul(l.FFNUp, cur[:rows*d], rows, up, c.pool)
		c.emit("ffn_gate", il, gate)
		c.emit("ffn_up", il, up)
		for j := range rows { // ggml_vec_swiglu_f32 runs row by row
			r := gate[j*hp.NFF : (j+1)*hp.NFF]
			swiglu(r, r, up[j*hp.NFF:(j+1)*hp.NFF])
		}
		c.emit("ffn_swiglu", il, gate)
		quant.MatMul(l.FFNDown, gate, rows, or[:rows*d], c.pool)
		c.emit("ffn_out", il, or[:rows*d])
		for i := range rows * d {
			xr[i] = or[i] + xr[i]
		}
		c.emit("l_out", il, xr[:rows*d])
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
	c.emit("result_norm", -1, nrm)
	logits := make([]float32, hp.NVocab)
	quant.MatMul(m.Output, nrm, 1, logits, c.pool)
	return logits
}

// attention runs flash attention for the n query rows of this micro-batch
// (positions nPast..nPast+n-1, already in the cache) with the kernel the
// reference picks: split-KV for one row when the padded KV length reaches
// 512, the tiled kernel for 64 rows or more (head size a multiple of 8), the
// one-row kernel otherwise.
func (c *Context) attention(out, q []float32, kc, vc []uint16, n int, scale float32) {
	hp := c.m.HP
	hd := hp.HeadDim
	nq, nkv := hp.NHead*hd, hp.NHeadKV*hd
	used := c.nPast + n
	nek1 := min(c.nCells, max(kvPad, (used+kvPad-1)/kvPad*kvPad))
	qh, vkq16 := make([]uint16, hd), make([]uint16, hd)
	vkq, kq := make([]float32, hd), make([]float32, faTile)
	for j := range n {
		for h := range hp.NHead {
			hk := h / (hp.NHead / hp.NHeadKV)
			a := attnRow{
				q:     q[j*nq+h*hd : j*nq+(h+1)*hd],
				k:     func(ic int) []uint16 { return kc[ic*nkv+hk*hd : ic*nkv+(hk+1)*hd] },
				v:     func(ic int) []uint16 { return vc[ic*nkv+hk*hd : ic*nkv+(hk+1)*hd] },
				nKV:   c.nPast + j + 1, // the causal mask
				scale: scale,
			}
			o := out[j*nq+h*hd : j*nq+(h+1)*hd]
			switch {
			case n == 1 && nek1 >= 512:
				a.splitKV(o, nek1, c.attnThreads, qh, vkq16)
			case n >= faTile && hd%8 == 0:
				a.tiled(o, kq, vkq)
			default:
				m, s := a.oneChunk(0, a.nKV, vkq, qh, vkq16)
				_ = m
				normalize(o, vkq, s)
			}
		}
	}
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
