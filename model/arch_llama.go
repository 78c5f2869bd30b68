package model

// llama, qwen3 and qwen2: pre-norm decoders with RMS norms, grouped-query
// attention with RoPE and a SwiGLU feed-forward (src/models/llama.cpp,
// qwen3.cpp, qwen2.cpp); qwen3 adds per-head Q/K norms, qwen2 Q/K/V biases.

// llamaLayer is the block of src/models/llama.cpp's loader (create_tensor_qkv: fused or separate Q/K/V,
// optional biases).
var llamaLayer = with([]tensor{vecT("attn_norm.weight", dEmbd)}, with(qkvTensors,
	matT("attn_output.weight", dQ, dEmbd),
	vecT("ffn_norm.weight", dEmbd),
	matT("ffn_gate.weight", dEmbd, dFF), matT("ffn_up.weight", dEmbd, dFF), matT("ffn_down.weight", dFF, dEmbd),
)...)

func init() {
	// src/models/llama.cpp: RMSNorm, RoPE NORM, GQA, SwiGLU.
	register(&arch{name: "llama", rope: ropeNorm, layer: llamaLayer, check: qkvCheck, block: blockLlama})
	// src/models/qwen3.cpp: as llama plus per-head Q/K RMSNorm, RoPE NEOX.
	register(&arch{name: "qwen3", rope: ropeNeox, block: blockLlama, check: qkvCheck,
		layer: with(llamaLayer, vecT("attn_q_norm.weight", dHead), vecT("attn_k_norm.weight", dHead)),
		head:  []tensor{matT("cls.output.weight", dEmbd, dClsOut).opt()}})
	// src/models/qwen2.cpp: llama's blocks (its files carry Q/K/V biases), RoPE NEOX.
	register(&arch{name: "qwen2", rope: ropeNeox, block: blockLlama, check: qkvCheck, layer: llamaLayer})
}

// blockLlama is one block of llama, qwen3 and qwen2: x += Wo·attn(rope(q, k),
// v) of norm(x), then x += down(silu(gate)·up) of norm(x).
func blockLlama(p *pass, il int, l *Layer) {
	d := p.hp.NEmbd
	cur := p.norm("attn_norm", il, p.buf(bCur, p.n*d), p.x[:p.n*d], l.AttnNorm, nil)
	q, k, v := p.qkv(il, cur, l)
	if l.AttnQNorm != nil {
		p.qkNorm(il, q, k, l)
	}
	p.ropeStore(il, q, k, v)
	a := p.attend(il, q, p.defaultScale())
	o := p.linear(&l.Wo, a, bO)
	bias(o, l.Bo)
	p.emit("attn_out", il, o)
	o, ok := p.prune(o)
	if !ok {
		return
	}
	p.add("ffn_inp", il, p.x, o)
	cur = p.norm("ffn_norm", il, p.buf(bCur, p.n*d), p.x[:p.n*d], l.FFNNorm, nil)
	act := p.ffnGLU(il, cur, l, false)
	f := p.down("ffn_out", il, act, l)
	p.add("l_out", il, p.x, f)
}
