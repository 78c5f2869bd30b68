package model

// bitnet (src/models/bitnet.cpp, BitNet b1.58): llama's blocks with an RMS
// sub-norm on the attention output before its projection and on the
// feed-forward's activation before ffn_down, each projection multiplied by
// its optional one-value scale ("<name>.scale": ggml_mul after the matmul,
// for up and gate before the gate), NEOX RoPE, a SwiGLU feed-forward
// (LLM_FFN_SILU: the reference's graph, whatever the trained activation),
// and the logits from token_embd (no output tensor).
func init() {
	register(&arch{name: "bitnet", rope: ropeNeox, noOutput: true, block: blockBitnet,
		layer: []tensor{
			vecT("attn_norm.weight", dEmbd), vecT("attn_sub_norm.weight", dEmbd),
			matT("attn_q.weight", dEmbd, dQ), vecT("attn_q.scale", dOne).opt(),
			matT("attn_k.weight", dEmbd, dKV), vecT("attn_k.scale", dOne).opt(),
			matT("attn_v.weight", dEmbd, dKV), vecT("attn_v.scale", dOne).opt(),
			matT("attn_output.weight", dQ, dEmbd), vecT("attn_output.scale", dOne).opt(),
			vecT("ffn_norm.weight", dEmbd), vecT("ffn_sub_norm.weight", dFF),
			matT("ffn_gate.weight", dEmbd, dFF), vecT("ffn_gate.scale", dOne).opt(),
			matT("ffn_down.weight", dFF, dEmbd), vecT("ffn_down.scale", dOne).opt(),
			matT("ffn_up.weight", dEmbd, dFF), vecT("ffn_up.scale", dOne).opt(),
		}})
}

func blockBitnet(p *pass, il int, l *Layer) {
	d, nff := p.hp.NEmbd, p.hp.NFF
	cur := p.norm("attn_norm", il, p.buf(bCur, p.n*d), p.x[:p.n*d], l.AttnNorm, nil)
	q, k, v := p.qkv(il, cur, l)
	p.ropeStore(il, q, k, v)
	a := p.attend(il, q, p.defaultScale())
	a = p.norm("attn_sub_norm", il, a, a, l.AttnSubNorm, nil)
	o := p.linear(&l.Wo, a, bO)
	scaleBy(o, l.So)
	p.emit("attn_out", il, o)
	o, ok := p.prune(o)
	if !ok {
		return
	}
	p.add("ffn_inp", il, p.x, o)
	cur = p.norm("ffn_norm", il, p.buf(bCur, p.n*d), p.x[:p.n*d], l.FFNNorm, nil)
	act := p.ffnGLU(il, cur, l, false)
	p.emit("ffn_sub_out", il, act[:p.n*nff])
	act = p.norm("ffn_sub_norm", il, act, act[:p.n*nff], l.FFNSubNorm, nil)
	f := p.down("ffn_down", il, act, l)
	p.add("l_out", il, p.x, f)
}
