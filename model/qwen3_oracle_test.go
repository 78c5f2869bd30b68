package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// chatPrompt28 is the user message of the per-layer oracle: rendered by
// chatML it is 28 tokens of the Qwen3 vocabulary (the test checks the count).
const chatPrompt28 = "Name three rivers in Europe, then tell me which of the three is longest."

// layerModels are the synthetic models of TestQwen3LayersMatchReference: the
// four weight types at the tiny and bonsai-1.7b shapes (the 1.7B ones that
// portable kernels cannot afford in CI run under BANKML_ORACLE_HEAVY=1),
// with Bonsai's YaRN scaling, plus tiny files without RoPE scaling and with
// linear scaling, the bonsai head size with 4:1 GQA at a tiny cost, and a
// llama file (NORM RoPE) with YaRN.
func layerModels() []synthModel {
	ms := []synthModel{
		{arch: "qwen3", preset: "tiny", typ: gguf.Q1_0, yarn: true, seed: 1},
		{arch: "qwen3", preset: "tiny", typ: gguf.Q2_0, yarn: true, seed: 2},
		{arch: "qwen3", preset: "tiny", typ: gguf.TQ2_0, yarn: true, seed: 3},
		{arch: "qwen3", preset: "tiny", typ: gguf.F16, yarn: true, seed: 4},
		{arch: "qwen3", preset: "tiny", typ: gguf.Q1_0, seed: 5},
		{arch: "qwen3", preset: "tiny", typ: gguf.Q2_0, linear: true, seed: 6},
		{arch: "qwen3", preset: "tiny-hd128", typ: gguf.Q1_0, yarn: true, seed: 8},
		{arch: "llama", preset: "tiny", typ: gguf.Q2_0, yarn: true, seed: 7},
		{arch: "qwen3", preset: "tiny", typ: gguf.Q8_0, yarn: true, seed: 9}, // the plain Q8_0 kernels, incl. the 151936-row output
		{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.Q2_0, yarn: true, seed: 11},
	}
	if heavy() {
		ms = append(ms,
			synthModel{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.Q1_0, yarn: true, seed: 12},
			synthModel{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.TQ2_0, yarn: true, seed: 13},
			synthModel{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.F16, yarn: true, seed: 14})
	}
	return ms
}

// traced are the tensor names compared by the per-layer oracle: every named
// result of a layer (so a divergence is localised to one op), the output
// norm and the logits.
var traced = []string{"attn_norm", "Qcur_normed", "Kcur_normed", "Qcur", "Kcur", "Vcur", "kqv_out", "ffn_inp", "ffn_norm", "ffn_out", "l_out", "result_norm", "result_output"}

func tracedName(name string) bool {
	base, _, _ := strings.Cut(name, "-")
	return slices.Contains(traced, base)
}

// TestQwen3LayersMatchReference decodes a 28-token chat prompt with every
// position as an output and compares, bit for bit, the l_out rows of every
// layer, the result_norm rows and the logit rows with the tensors the
// reference's graph computes on the same file (recorded through its eval
// callback, haswell CPU backend, 1 thread), plus every other named
// intermediate of each layer.
func TestQwen3LayersMatchReference(t *testing.T) {
	lib := refLib(t)
	for _, s := range layerModels() {
		t.Run(s.String(), func(t *testing.T) {
			p := loadPair(t, lib, s)
			toks := p.tokenize(t, chatML("", chatPrompt28))
			if len(toks) != 28 {
				t.Fatalf("the chat prompt is %d tokens, want 28", len(toks))
			}
			ts, err := p.ref.TraceOutputs(toks, 1, true, tracedName)
			if err != nil {
				t.Fatal(err)
			}
			ref := map[string][]float32{}
			for _, x := range ts {
				ref[x.Name] = x.Data // the last node of a name: Qcur/Kcur after RoPE
			}
			c := newCtx(t, p.m, len(toks), 1)
			rows := map[string][2]int{} // per base name: rows equal, rows compared
			c.trace = func(name string, got []float32) {
				if !tracedName(name) {
					return
				}
				want, ok := ref[name]
				if !ok {
					t.Errorf("the reference has no tensor %q", name)
					return
				}
				if len(want) != len(got) {
					t.Errorf("%s has %d values, reference %d", name, len(got), len(want))
					return
				}
				base, _, _ := strings.Cut(name, "-")
				width := len(got) / len(toks)
				first := -1
				eq := 0
				for r := range len(toks) {
					same := true
					for i := r * width; i < (r+1)*width; i++ {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							same = false
							if first < 0 {
								first = i
							}
							break
						}
					}
					if same {
						eq++
					}
				}
				n := rows[base]
				rows[base] = [2]int{n[0] + eq, n[1] + len(toks)}
				if first >= 0 {
					t.Errorf("%s: %d of %d rows equal; first difference at [%d]: %g (%#x), reference %g (%#x)", name, eq, len(toks),
						first, got[first], math.Float32bits(got[first]), want[first], math.Float32bits(want[first]))
				}
			}
			if _, err := c.DecodeAll(toks); err != nil {
				t.Fatal(err)
			}
			lo, rn, lg := rows["l_out"], rows["result_norm"], rows["result_output"]
			if lo[1] != 28*p.m.HP.NLayer || rn[1] != 28 || lg[1] != 28 {
				t.Errorf("compared %d l_out rows, %d result_norm rows, %d logit rows", lo[1], rn[1], lg[1])
			}
			t.Logf("%s: l_out %d of %d rows, result_norm %d of %d, logits %d of %d bit-equal (and %s)", p.name,
				lo[0], lo[1], rn[0], rn[1], lg[0], lg[1], otherCounts(rows))
		})
	}
}

func otherCounts(rows map[string][2]int) string {
	var parts []string
	for _, n := range traced {
		if r, ok := rows[n]; ok && n != "l_out" && n != "result_norm" && n != "result_output" {
			parts = append(parts, fmt.Sprintf("%s %d/%d", n, r[0], r[1]))
		}
	}
	return strings.Join(parts, ", ")
}
