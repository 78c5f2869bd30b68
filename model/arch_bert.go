package model

import (
	"fmt"

	"github.com/bankml/bankml/gguf"
)

// bert (src/models/bert.cpp): an encoder. The input is the token embedding
// plus row 0 of the token types plus the absolute position's embedding,
// layer-normed; each block runs non-causal attention over the whole input
// (Q/K/V and output biases), then layer norm of the residual, a GELU
// feed-forward with biases and layer norm of the residual; the output is the
// last block's rows (result_embd), pooled by the model's pooling type, with
// an optional ranking head (cls, tanh, cls.output).
func init() {
	register(&arch{name: "bert", encoder: true, normEps: true, noOutputNorm: true, check: bertCheck,
		inputs: bertInputs, block: blockBert,
		input: []tensor{
			matT("token_types.weight", dEmbd, dTypes).opt(),
			matT("position_embd.weight", dEmbd, dCtx),
			vecT("token_embd_norm.weight", dEmbd), vecT("token_embd_norm.bias", dEmbd),
		},
		head: []tensor{
			matT("cls.weight", dEmbd, dEmbd).opt(), vecT("cls.bias", dEmbd).opt(),
			matT("cls.output.weight", dEmbd, dClsOut).opt(), vecT("cls.output.bias", dClsOut).opt(),
		},
		layer: with(qkvTensors,
			matT("attn_output.weight", dQ, dEmbd), vecT("attn_output.bias", dEmbd).opt(),
			vecT("attn_output_norm.weight", dEmbd), vecT("attn_output_norm.bias", dEmbd),
			matT("ffn_up.weight", dEmbd, dFF), vecT("ffn_up.bias", dFF).opt(),
			matT("ffn_down.weight", dFF, dEmbd), vecT("ffn_down.bias", dEmbd).opt(),
			vecT("layer_output_norm.weight", dEmbd), vecT("layer_output_norm.bias", dEmbd),
		)})
}

// bertCheck: llama.cpp refuses a bert file without token types ("model needs
// to define token type count"); the graph adds row 0 of token_types as an F32
// vector.
func bertCheck(m *Model) error {
	if err := qkvCheck(m); err != nil {
		return err
	}
	if m.HP.NTokenTypes == 0 {
		return fmt.Errorf("model: bert needs tokenizer.ggml.token_type_count (llama.cpp: \"model needs to define token type count\")")
	}
	if m.TokTypes != nil && m.TokTypes.Type != gguf.F32 {
		return fmt.Errorf("model: token_types.weight is %s; the graph adds its row 0 to F32 activations, which ggml does for F32 only: %w", m.TokTypes.Type, ErrUnsupported)
	}
	return nil
}

// bertInputs adds row 0 of the token types (every token is "sentence A") and
// each row's absolute position embedding (get_rows by position) to the token
// embeddings (inp_embd), then the input layer norm (inp_norm).
func bertInputs(p *pass) {
	m, d := p.m, p.hp.NEmbd
	x := p.x[:p.n*d]
	if m.TokTypes != nil {
		t0 := p.buf(bSub, d)
		m.TokTypes.Row(0, t0)
		addBias(x, t0)
	}
	pos := p.buf(bCur, d)
	for j, row := range p.rows {
		m.PosEmbd.Row(row.pos, pos)
		xr := x[j*d : (j+1)*d]
		for i := range xr {
			xr[i] = pos[i] + xr[i]
		}
	}
	p.emit("inp_embd", -1, x)
	p.norm("inp_norm", 0, x, x, m.TokNorm, m.TokNormB)
}

func blockBert(p *pass, il int, l *Layer) {
	d := p.hp.NEmbd
	q, k, v := p.qkv(il, p.x[:p.n*d], l)
	p.ropeStore(il, q, k, v) // no RoPE: stores K and V for the attention
	a := p.attendAs("", il, q, p.defaultScale())
	o := p.linear(&l.Wo, a, bO)
	bias(o, l.Bo)
	p.emit("kqv_out", il, o)
	o, ok := p.prune(o)
	if !ok {
		return
	}
	p.add("", il, o, p.x)
	cur := p.norm("ffn_inp", il, p.buf(bCur, p.n*d), o[:p.n*d], l.AttnOutNorm, l.AttnOutNormB)
	up := p.linear(&l.FFNUp, cur, bUp)
	p.emit("ffn_up", il, up)
	if l.BUp != nil {
		bias(up, l.BUp)
		p.emit("ffn_up_b", il, up)
	}
	gelu(up, up)
	p.emit("ffn_gelu", il, up)
	f := p.linear(&l.FFNDown, up, bO)
	if l.BDown != nil {
		p.emit("ffn_down", il, f)
		bias(f, l.BDown)
	}
	p.emit("ffn_out", il, f)
	p.add("", il, f, cur)
	p.norm("", il, p.x[:p.n*d], f[:p.n*d], l.OutNorm, l.OutNormB)
}
