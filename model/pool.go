package model

import (
	"fmt"

	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/quant"
)

// Pooling is the pooling a context of the model uses when asked for pool
// (llama_context's cparams.pooling_type): p itself, or the model's
// {arch}.pooling_type for embed.PoolingUnspecified, or none when the file has
// none. Errors: rank on a model without a ranking head (llama.cpp: "RANK
// pooling requires either cls+cls_b or cls_out+cls_out_b"), or a type outside
// llama.cpp's.
func (m *Model) Pooling(p embed.Pooling) (embed.Pooling, error) {
	if p == embed.PoolingUnspecified {
		if m.HP.Pooling < 0 {
			return embed.PoolingNone, nil
		}
		p = embed.Pooling(m.HP.Pooling)
	}
	switch p {
	case embed.PoolingNone, embed.PoolingMean, embed.PoolingCLS, embed.PoolingLast:
	case embed.PoolingRank:
		if len(m.ClsOut.Planes) == 0 && len(m.Cls.Planes) == 0 {
			return 0, fmt.Errorf("model: pooling rank needs a ranking head (cls or cls.output), which this %s file has not", m.Arch)
		}
	default:
		return 0, fmt.Errorf("model: %w %d", embed.ErrPooling, int(p))
	}
	return p, nil
}

// Pool is llama.cpp's build_pooling (src/llama-graph.cpp) for one input
// evaluated alone in its micro-batch: rows are its n rows of NEmbd values
// (Span.Embd of an evaluation with every row an output), and the result is
// what llama_get_embeddings_seq returns for it:
//   - mean: for each dimension the ggml_vec_dot_f32 of the dimension's n
//     values with n copies of 1/n (the mul_mat of the transposed rows with
//     inp_mean, one column: no tinyBLAS);
//   - cls: the first row; last: the last row;
//   - rank: the first row (qwen3: the last) through the ranking head: bert's cls (+ bias),
//     tanhf, then cls.output (+ bias), each a one-column matmul; qwen3's
//     cls.output then ggml_soft_max; NClsOut values.
//
// Pooling none has no pooled vector: rows are the embeddings. p must be one
// Pooling returned.
func (r *Runner) Pool(p embed.Pooling, rows []float32) ([]float32, error) {
	m := r.m
	d := m.HP.NEmbd
	n := len(rows) / d
	if n == 0 || len(rows) != n*d {
		return nil, fmt.Errorf("model: %d values are not rows of %d", len(rows), d)
	}
	switch p {
	case embed.PoolingMean:
		mean := make([]float32, n)
		inv := 1 / float32(n)
		for i := range mean {
			mean[i] = inv
		}
		col := make([]float32, n)
		out := make([]float32, d)
		for j := range d {
			for i := range n {
				col[i] = rows[i*d+j]
			}
			out[j] = quant.VecDotF32(col, mean)
		}
		return out, nil
	case embed.PoolingCLS:
		return append([]float32(nil), rows[:d]...), nil
	case embed.PoolingLast:
		return append([]float32(nil), rows[(n-1)*d:]...), nil
	case embed.PoolingRank:
		// llm_graph_input_cls: qwen3's rerankers read the last token, bert's the first.
		first := 0
		if m.Arch == "qwen3" {
			first = n - 1
		}
		cur := append([]float32(nil), rows[first*d:(first+1)*d]...)
		one := []quant.ColClass{{N: 1, Index: 0}}
		if len(m.Cls.Planes) > 0 {
			h := make([]float32, m.Cls.Rows())
			r.work.MatMulPlanesAs(m.Cls.Planes, cur, 1, one, h)
			bias(h, m.ClsB)
			for i, v := range h {
				h[i] = fmath.Tanhf(v)
			}
			cur = h
		}
		if len(m.ClsOut.Planes) > 0 {
			o := make([]float32, m.ClsOut.Rows())
			r.work.MatMulPlanesAs(m.ClsOut.Planes, cur, 1, one, o)
			bias(o, m.ClsOutB)
			cur = o
		}
		if m.Arch == "qwen3" {
			softMax(cur)
		}
		return cur, nil
	}
	return nil, fmt.Errorf("model: pooling %s has no pooled vector", p)
}

// softMax is ggml_soft_max of one row in place (ops.cpp
// ggml_compute_forward_soft_max_f32 without mask or scale; vec.cpp
// ggml_vec_soft_max_f32, AVX2): the maximum by ggml's MAX, each exp(x -
// max) by ggml_v_expf on groups of 8 (summed as hsum_float_8 into a
// float64) and glibc expf on the tail, then every value times the float32
// of 1/sum.
func softMax(x []float32) {
	mx := float32(negInf)
	for _, v := range x {
		mx = cmax(mx, v)
	}
	var sum float64
	i := 0
	for ; i+7 < len(x); i += 8 {
		var g [8]float32
		large := false
		for l := range g {
			g[l] = x[i+l] - mx
			large = large || vExpfLarge(g[l])
		}
		for l := range g {
			g[l] = vExpf(g[l], large)
			x[i+l] = g[l]
		}
		sum += float64(hsum8(&g))
	}
	for ; i < len(x); i++ {
		v := fmath.Expf(x[i] - mx)
		sum += float64(v)
		x[i] = v
	}
	s := float32(1.0 / sum)
	for i := range x {
		x[i] *= s
	}
}
