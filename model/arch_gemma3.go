package model

import (
	"fmt"

	"github.com/bankml/bankml/fmath"
)

// gemma3 (src/models/gemma3.cpp): the token embeddings scaled by sqrt(n_embd),
// per-head Q/K RMS norms, Q scaled by f_attention_scale before attention,
// RMS norms after the attention and after the feed-forward, a GeGLU
// feed-forward, sliding-window attention on most layers (their own RoPE base
// and no RoPE scaling) and soft-capped logits.
func init() {
	register(&arch{name: "gemma3", rope: ropeNeox, hparams: gemma3Hparams, inputs: gemma3Inputs, block: blockGemma3, check: qkvCheck,
		layer: with([]tensor{vecT("attn_norm.weight", dEmbd)}, with(qkvTensors,
			matT("attn_output.weight", dQ, dEmbd),
			vecT("post_attention_norm.weight", dEmbd),
			vecT("attn_k_norm.weight", dHead), vecT("attn_q_norm.weight", dHead),
			vecT("ffn_norm.weight", dEmbd),
			matT("ffn_gate.weight", dEmbd, dFF), matT("ffn_up.weight", dEmbd, dFF), matT("ffn_down.weight", dFF, dEmbd),
			vecT("post_ffw_norm.weight", dEmbd),
		)...)})
}

// gemma3Hparams is llama_model_gemma3::load_arch_hparams: the sliding window
// (attention.sliding_window; when > 0, llama_model_base::load_swa_pattern:
// sliding_window_pattern as one value N, default 6, making layer il slide
// unless il % N == N-1 — an array of per-layer flags is refused), the
// sliding layers' rope.freq_base_swa (default 10000), final_logit_softcapping
// (default 0) and f_attention_scale: 1/sqrtf(head_dim), or for the 27B shape
// (62 layers) 1/sqrtf(n_embd/n_head).
func gemma3Hparams(md meta, hp *Hparams) error {
	var err error
	if _, ok := md.f.Get(md.arch + ".attention.sliding_window"); ok {
		if hp.NSWA, err = md.uint("attention.sliding_window", 0, false); err != nil {
			return err
		}
	}
	if hp.NSWA > 0 {
		if _, isArr := md.f.GetArray(md.arch + ".attention.sliding_window_pattern"); isArr {
			return fmt.Errorf("model: metadata %s.attention.sliding_window_pattern as per-layer flags: %w", md.arch, ErrUnsupported)
		}
		pattern := 6
		if v, ok := md.f.GetUint64(md.arch + ".attention.sliding_window_pattern"); ok {
			pattern = int(v)
		} else if v, ok := md.f.Get(md.arch + ".attention.sliding_window_pattern"); ok {
			return fmt.Errorf("model: metadata %s.attention.sliding_window_pattern has type %s, want an integer", md.arch, v.Type)
		}
		hp.SWA = make([]bool, hp.NLayer)
		for il := range hp.SWA { // llama_hparams::set_swa_pattern, dense_first false
			hp.SWA[il] = pattern == 0 || il%pattern < pattern-1
		}
		if hp.FreqBaseSWA, err = md.float("rope.freq_base_swa", 10000, false); err != nil {
			return err
		}
	}
	if hp.LogitSoftcap, err = md.float("final_logit_softcapping", 0, false); err != nil {
		return err
	}
	if hp.NLayer == 62 { // LLM_TYPE_27B
		hp.AttnScale = 1 / fmath.Sqrtf(float32(hp.NEmbd/hp.NHead))
	} else {
		hp.AttnScale = 1 / fmath.Sqrtf(float32(hp.HeadDim))
	}
	return nil
}

// gemma3Inputs scales the token embeddings by sqrtf(n_embd) (inp_scaled).
func gemma3Inputs(p *pass) {
	x := p.x[:p.n*p.hp.NEmbd]
	scaleRows(x, fmath.Sqrtf(float32(p.hp.NEmbd)))
	p.emit("inp_scaled", -1, x)
}

func blockGemma3(p *pass, il int, l *Layer) {
	d := p.hp.NEmbd
	cur := p.norm("attn_norm", il, p.buf(bCur, p.n*d), p.x[:p.n*d], l.AttnNorm, nil)
	q, k, v := p.qkv(il, cur, l)
	p.qkNorm(il, q, k, l)
	p.ropeStore(il, q, k, v)
	scaleRows(q[:p.n*p.hp.NHead*p.hp.HeadDim], p.hp.AttnScale)
	a := p.attend(il, q, 1)
	o := p.linear(&l.Wo, a, bO)
	o, ok := p.prune(o)
	if !ok {
		return
	}
	o = p.norm("attn_post_norm", il, o, o, l.AttnPostNorm, nil)
	p.add("sa_out", il, p.x, o)
	cur = p.norm("ffn_norm", il, p.buf(bCur, p.n*d), p.x[:p.n*d], l.FFNNorm, nil)
	act := p.ffnGLU(il, cur, l, true)
	f := p.down("ffn_out", il, act, l)
	f = p.norm("ffn_post_norm", il, f, f, l.FFNPostNorm, nil)
	p.add("l_out", il, p.x, f)
}
