package model

import (
	"fmt"
	"reflect"

	"github.com/bankml/bankml/quant"
)

// Layer holds one block's weights: the union of what the registered
// architectures bind (llama.cpp's llama_layer), each field tagged with its
// GGUF tensor name after "blk.N."; an architecture binds the fields its
// tensor list names (arch.layer) and leaves the others zero. Vectors (norms,
// biases, bitnet's one-value scales) are float32 copies; projections are
// Linears.
type Layer struct {
	AttnNorm     []float32 `gguf:"attn_norm.weight"`
	AttnQNorm    []float32 `gguf:"attn_q_norm.weight"` // qwen3, gemma3: HeadDim values
	AttnKNorm    []float32 `gguf:"attn_k_norm.weight"`
	Wq           Linear    `gguf:"attn_q.weight"`
	Wk           Linear    `gguf:"attn_k.weight"`
	Wv           Linear    `gguf:"attn_v.weight"`
	Wqkv         Linear    `gguf:"attn_qkv.weight"` // phi3: Q, K and V in one matrix
	Bq           []float32 `gguf:"attn_q.bias"`
	Bk           []float32 `gguf:"attn_k.bias"`
	Bv           []float32 `gguf:"attn_v.bias"`
	Sq           []float32 `gguf:"attn_q.scale"` // bitnet: one value
	Sk           []float32 `gguf:"attn_k.scale"`
	Sv           []float32 `gguf:"attn_v.scale"`
	AttnSubNorm  []float32 `gguf:"attn_sub_norm.weight"` // bitnet
	Wo           Linear    `gguf:"attn_output.weight"`
	Bo           []float32 `gguf:"attn_output.bias"`
	So           []float32 `gguf:"attn_output.scale"`
	AttnPostNorm []float32 `gguf:"post_attention_norm.weight"` // gemma3
	AttnOutNorm  []float32 `gguf:"attn_output_norm.weight"`    // bert
	AttnOutNormB []float32 `gguf:"attn_output_norm.bias"`
	FFNNorm      []float32 `gguf:"ffn_norm.weight"`
	FFNGate      Linear    `gguf:"ffn_gate.weight"`
	SGate        []float32 `gguf:"ffn_gate.scale"`
	FFNUp        Linear    `gguf:"ffn_up.weight"` // phi3: gate and up, 2*n_ff rows
	BUp          []float32 `gguf:"ffn_up.bias"`
	SUp          []float32 `gguf:"ffn_up.scale"`
	FFNSubNorm   []float32 `gguf:"ffn_sub_norm.weight"` // bitnet: n_ff values
	FFNDown      Linear    `gguf:"ffn_down.weight"`
	BDown        []float32 `gguf:"ffn_down.bias"`
	SDown        []float32 `gguf:"ffn_down.scale"`
	FFNPostNorm  []float32 `gguf:"post_ffw_norm.weight"` // gemma3
	OutNorm      []float32 `gguf:"layer_output_norm.weight"`
	OutNormB     []float32 `gguf:"layer_output_norm.bias"`
}

// dim is a symbolic tensor dimension, resolved against the hyperparameters.
type dim uint8

const (
	dNone   dim = iota
	dEmbd       // n_embd
	dQ          // n_head*head_dim
	dKV         // n_head_kv*head_dim
	dQKV        // n_head*head_dim + 2*n_head_kv*head_dim (phi3's fused QKV)
	dFF         // n_ff
	dFF2        // 2*n_ff (phi3's fused gate and up)
	dHead       // head_dim
	dRot2       // n_rot/2 (rope factors)
	dOne        // 1 (bitnet's scales)
	dVocab      // n_vocab: the rows of token_embd
	dCtx        // n_ctx_train (bert's positions)
	dTypes      // token types (bert)
	dClsOut     // the ranking head's labels
)

// size is d's value for hp.
func (d dim) size(hp *Hparams) int {
	switch d {
	case dEmbd:
		return hp.NEmbd
	case dQ:
		return hp.NHead * hp.HeadDim
	case dKV:
		return hp.NHeadKV * hp.HeadDim
	case dQKV:
		return (hp.NHead + 2*hp.NHeadKV) * hp.HeadDim
	case dFF:
		return hp.NFF
	case dFF2:
		return 2 * hp.NFF
	case dHead:
		return hp.HeadDim
	case dRot2:
		return hp.NRot / 2
	case dOne:
		return 1
	case dVocab:
		return hp.NVocab
	case dCtx:
		return hp.NCtxTrain
	case dTypes:
		return hp.NTokenTypes
	case dClsOut:
		return hp.NClsOut
	}
	return 0
}

// tensor declares one tensor an architecture binds: its GGUF name (after
// "blk.N." for a layer's), its shape (ne0, and ne1 for a matrix), and
// whether the file may leave it out (llama.cpp's TENSOR_NOT_REQUIRED).
type tensor struct {
	name     string
	ne0, ne1 dim
	optional bool
}

// opt marks t optional.
func (t tensor) opt() tensor { t.optional = true; return t }

// vecT and matT declare a vector of n values and a ne0 × ne1 matrix.
func vecT(name string, n dim) tensor        { return tensor{name: name, ne0: n} }
func matT(name string, ne0, ne1 dim) tensor { return tensor{name: name, ne0: ne0, ne1: ne1} }

// bindFields binds the tensors ts, named prefix+t.name, into the fields of
// the struct dst points to whose gguf tags are t.name: a []float32 field
// takes a vector (every type quant reads, copied as float32), a Linear a
// projection (one tensor, or its PTQTP planes), a *quant.Matrix a matrix read
// by rows. A declared tensor with no such field is a programming error
// (panic); a missing required tensor or a wrong shape is an error naming it.
func (tb tensorBinder) bindFields(dst any, prefix string, ts []tensor, hp *Hparams) error {
	v := reflect.ValueOf(dst).Elem()
	fields := map[string]reflect.Value{}
	for i := range v.NumField() {
		if tag := v.Type().Field(i).Tag.Get("gguf"); tag != "" {
			fields[tag] = v.Field(i)
		}
	}
	for _, t := range ts {
		f, ok := fields[t.name]
		if !ok {
			panic(fmt.Sprintf("model: no field tagged %q in %s", t.name, v.Type()))
		}
		name := prefix + t.name
		if t.optional {
			if _, present := tb.f.Tensor(name); !present && !tb.hasPlanes(name) {
				continue
			}
		}
		switch f.Interface().(type) {
		case []float32:
			x, err := tb.vec(name, t.ne0.size(hp))
			if err != nil {
				return err
			}
			f.Set(reflect.ValueOf(x))
		case Linear:
			l, err := tb.linear(name, t.ne0.size(hp), t.ne1.size(hp), false)
			if err != nil {
				return err
			}
			f.Set(reflect.ValueOf(*l))
		case *quant.Matrix:
			if err := tb.noPlanes(name); err != nil {
				return err
			}
			m, err := tb.mat(name, t.ne0.size(hp), t.ne1.size(hp), false)
			if err != nil {
				return err
			}
			f.Set(reflect.ValueOf(m))
		default:
			panic(fmt.Sprintf("model: field %q has type %s", t.name, f.Type()))
		}
	}
	return nil
}

// linears lists l's bound projections (those with planes), in field order.
func (l *Layer) linears() []*Linear {
	var out []*Linear
	for _, p := range []*Linear{&l.Wq, &l.Wk, &l.Wv, &l.Wqkv, &l.Wo, &l.FFNGate, &l.FFNUp, &l.FFNDown} {
		if len(p.Planes) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// qkvTensors are the attention projections of llama_model_base::create_tensor_qkv, which most loaders call:
// a fused attn_qkv or the three attn_q, attn_k and attn_v, each with an optional bias (biases beside a fused
// matrix too, which llama.cpp concatenates); qkvCheck requires one of the two forms.
var qkvTensors = []tensor{
	matT("attn_qkv.weight", dEmbd, dQKV).opt(),
	matT("attn_q.weight", dEmbd, dQ).opt(), matT("attn_k.weight", dEmbd, dKV).opt(), matT("attn_v.weight", dEmbd, dKV).opt(),
	vecT("attn_q.bias", dQ).opt(), vecT("attn_k.bias", dKV).opt(), vecT("attn_v.bias", dKV).opt(),
}

// qkvCheck refuses a layer with neither the fused attn_qkv nor all three of attn_q, attn_k and attn_v, or
// with both forms, naming the layer and what it holds.
func qkvCheck(m *Model) error {
	for i := range m.Layers {
		l := &m.Layers[i]
		var have []string
		for _, p := range []struct {
			l    *Linear
			name string
		}{{&l.Wqkv, "attn_qkv"}, {&l.Wq, "attn_q"}, {&l.Wk, "attn_k"}, {&l.Wv, "attn_v"}} {
			if len(p.l.Planes) > 0 {
				have = append(have, p.name)
			}
		}
		fused := len(l.Wqkv.Planes) > 0
		if (fused && len(have) != 1) || (!fused && len(have) != 3) {
			return fmt.Errorf("model: layer %d of the %s graph needs blk.%d.attn_qkv.weight or all of attn_q, attn_k and attn_v; it has %v", i, m.Arch, i, have)
		}
	}
	return nil
}

// with returns ts followed by more (a new slice).
func with(ts []tensor, more ...tensor) []tensor {
	return append(append([]tensor(nil), ts...), more...)
}
