package model

import (
	"fmt"

	"github.com/bankml/bankml/fmath"
)

// phi3 (src/models/phi3.cpp): Q, K and V from one fused attn_qkv (or three
// projections), NEOX RoPE with the rope factors of LongRoPE (the short ones
// while the context is within rope.scaling.original_context_length, the long
// ones beyond), Q scaled by 1/sqrt(head_dim) before attention, and a SwiGLU
// feed-forward whose gate and up are one ffn_up of 2*n_ff rows (gate first).
// Its sliding window is ignored, as llama.cpp ignores it.
func init() {
	register(&arch{name: "phi3", rope: ropeNeox, hparams: phi3Hparams, check: phi3Check, block: blockPhi3,
		head: []tensor{vecT("rope_factors_long.weight", dRot2).opt(), vecT("rope_factors_short.weight", dRot2).opt()},
		layer: with([]tensor{vecT("attn_norm.weight", dEmbd)}, with(qkvTensors,
			matT("attn_output.weight", dQ, dEmbd),
			vecT("ffn_norm.weight", dEmbd),
			matT("ffn_down.weight", dFF, dEmbd), matT("ffn_up.weight", dEmbd, dFF2),
		)...)})
}

// phi3Hparams: Q is scaled by 1/sqrtf(head_dim) in the graph.
func phi3Hparams(_ meta, hp *Hparams) error {
	hp.AttnScale = 1 / fmath.Sqrtf(float32(hp.HeadDim))
	return nil
}

// phi3Check is qkvCheck, and the rope factors come in pairs.
func phi3Check(m *Model) error {
	if err := qkvCheck(m); err != nil {
		return err
	}
	if (m.RopeLong == nil) != (m.RopeShort == nil) {
		return fmt.Errorf("model: rope_factors_long.weight and rope_factors_short.weight come together")
	}
	return nil
}

func blockPhi3(p *pass, il int, l *Layer) {
	d, hp := p.hp.NEmbd, p.hp
	cur := p.norm("attn_norm", il, p.buf(bCur, p.n*d), p.x[:p.n*d], l.AttnNorm, nil)
	q, k, v := p.qkv(il, cur, l)
	p.ropeStore(il, q, k, v)
	scaleRows(q[:p.n*hp.NHead*hp.HeadDim], hp.AttnScale)
	p.emit("Qcur", il, q[:p.n*hp.NHead*hp.HeadDim]) // phi3.cpp names the scaled Q Qcur too
	a := p.attend(il, q, 1)
	o := p.linear(&l.Wo, a, bO)
	o, ok := p.prune(o)
	if !ok {
		return
	}
	p.add("ffn_inp", il, p.x, o)
	cur = p.norm("ffn_norm", il, p.buf(bCur, p.n*d), p.x[:p.n*d], l.FFNNorm, nil)
	up := p.linear(&l.FFNUp, cur, bUp)
	p.emit("ffn_up", il, up)
	act := p.buf(bGate, p.n*hp.NFF)
	p.glu(false, act, up, up[hp.NFF:], hp.NFF, 2*hp.NFF)
	p.emit("ffn_swiglu", il, act)
	f := p.down("ffn_out", il, act, l)
	p.add("l_out", il, p.x, f)
}
