package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/sample"
)

// archModel is one synthetic model of the architectures added to llama and
// qwen3: the tiny preset with synth.ForArch's settings (gemma3's window of 16
// on every other layer, phi3's fused QKV and rope factors, bitnet's scales,
// bert's types and mean pooling), every weight of one type, and a real
// vocabulary from ../shared/models/vocab (vocab "": synth's byte-level BPE).
type archModel struct {
	arch  string
	typ   gguf.GGMLType
	vocab string
	seed  uint64
	// mod changes the shape (e.g. a ranking head); its name is tag.
	mod func(*synth.Shape)
	tag string
	// preset is synth's preset ("": tiny).
	preset string
}

func (a archModel) String() string {
	s := fmt.Sprintf("%s-%s-%s", a.arch, a.presetName(), strings.ToUpper(a.typ.String()))
	if a.vocab != "" {
		s += "-" + a.vocab
	}
	if a.tag != "" {
		s += "-" + a.tag
	}
	return s
}

// path returns the model's file, generating it on first use (internal/synthcache).
func (a archModel) presetName() string {
	if a.preset == "" {
		return "tiny"
	}
	return a.preset
}

func (a archModel) path(t testing.TB) string {
	t.Helper()
	shape, err := synth.Preset(a.presetName())
	if err != nil {
		t.Fatal(err)
	}
	shape = synth.ForArch(a.arch, shape)
	if a.mod != nil {
		a.mod(&shape)
	}
	cfg := synth.Config{Arch: a.arch, Shape: shape, Weight: a.typ, Embd: a.typ, Output: a.typ, Seed: a.seed}
	switch a.vocab {
	case "":
	case "qwen3": // the real Qwen3 (Qwen2.5) tokenizer, 151,936 ids
		cfg.Vocab = synthcache.Qwen3Vocab(t)
	default:
		if cfg.Vocab, err = synth.VocabFromGGUF(testdata.Model(t, "vocab/ggml-vocab-"+a.vocab+".gguf")); err != nil {
			t.Fatal(err)
		}
	}
	return synthcache.File(t, a.String(), cfg)
}

func (a archModel) load(t testing.TB, lib *reference.Lib) *pair {
	t.Helper()
	path := a.path(t)
	rm, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	return &pair{name: a.String(), m: loadModel(t, path), ref: rm}
}

// archModels are the oracle's files: each new architecture in two weight
// types or more.
var archModels = []archModel{
	{arch: "qwen2", typ: gguf.F16, seed: 31}, {arch: "qwen2", typ: gguf.Q8_0, seed: 32}, {arch: "qwen2", typ: gguf.Q2_0, seed: 33},
	{arch: "gemma3", typ: gguf.F16, vocab: "llama-spm", seed: 41}, {arch: "gemma3", typ: gguf.Q8_0, vocab: "llama-spm", seed: 42},
	{arch: "phi3", typ: gguf.F16, vocab: "phi-3", seed: 51}, {arch: "phi3", typ: gguf.Q8_0, vocab: "phi-3", seed: 52},
	{arch: "phi3", typ: gguf.TQ2_0, vocab: "phi-3", seed: 53},
	{arch: "bitnet", typ: gguf.TQ1_0, vocab: "gpt-2", seed: 61}, {arch: "bitnet", typ: gguf.TQ2_0, vocab: "gpt-2", seed: 62},
	{arch: "bitnet", typ: gguf.F16, vocab: "gpt-2", seed: 63},
	{arch: "bert", typ: gguf.F16, vocab: "bert-bge", seed: 71}, {arch: "bert", typ: gguf.Q8_0, vocab: "bert-bge", seed: 72},
}

func init() {
	if heavy() { // real-scale shapes and the real Qwen vocabulary (BANKML_ORACLE_HEAVY=1)
		archModels = append(archModels,
			archModel{arch: "qwen2", typ: gguf.Q2_0, vocab: "qwen3", seed: 34},
			archModel{arch: "qwen2", typ: gguf.Q8_0, vocab: "qwen3", seed: 35, preset: "bonsai-1.7b"},
			archModel{arch: "gemma3", typ: gguf.Q8_0, vocab: "llama-spm", seed: 43, preset: "bonsai-1.7b"},
			archModel{arch: "phi3", typ: gguf.TQ2_0, vocab: "phi-3", seed: 54, preset: "bonsai-1.7b"},
			archModel{arch: "bitnet", typ: gguf.TQ2_0, vocab: "gpt-2", seed: 64, preset: "bonsai-1.7b"},
			archModel{arch: "bert", typ: gguf.F16, vocab: "bert-bge", seed: 74, preset: "bonsai-1.7b"})
	}
}

// archPrompts are the oracle's prompts: short, past gemma3's window of 16,
// and past the tiled attention kernel's 64 rows.
var archPrompts = []string{
	"Once upon a time",
	"The little dog was sad because it could not find its ball in the garden, so it asked the cat for help.",
	longText(6),
}

// archTraced are the per-layer names compared (those the reference's graphs
// name; a name absent from the reference's trace is not compared).
var archTraced = []string{"inp_scaled", "inp_embd", "inp_norm", "attn_norm", "Qcur_normed", "Kcur_normed", "Qcur", "Kcur", "Vcur",
	"kqv_out", "attn_out", "attn_sub_norm", "attn_post_norm", "sa_out", "ffn_inp", "ffn_norm", "ffn_up", "ffn_up_b", "ffn_gate",
	"ffn_up_s", "ffn_gate_s", "ffn_gelu", "ffn_geglu", "ffn_swiglu", "ffn_sub_out", "ffn_sub_norm", "ffn_down", "ffn_out",
	"ffn_post_norm", "l_out", "result_norm", "result_embd", "result_output"}

func archTracedName(name string) bool {
	base, _, _ := strings.Cut(name, "-")
	return slices.Contains(archTraced, base)
}

// TestArchitecturesLayersMatchReference decodes each prompt with every
// position an output (bert: evaluates it into embeddings) and compares, bit
// for bit and row by row, every named intermediate of every layer, the
// final norm (bert: the last layer's rows) and the logits with the tensors
// the reference's graph computes on the same file (its eval callback,
// haswell CPU backend, 1 thread).
func TestArchitecturesLayersMatchReference(t *testing.T) {
	lib := refLib(t)
	for _, a := range archModels {
		t.Run(a.String(), func(t *testing.T) {
			p := a.load(t, lib)
			total := map[string][2]int{}
			for _, text := range archPrompts {
				toks := p.tokenize(t, text)
				var ts []reference.Tensor
				var err error
				if p.m.Encoder() {
					ts, _, err = p.ref.TraceEmbed(toks, reference.PoolingUnspecified, 1, archTracedName)
				} else {
					ts, err = p.ref.TraceOutputs(toks, 1, true, archTracedName)
				}
				if err != nil {
					t.Fatal(err)
				}
				ref := map[string][]float32{}
				for _, x := range ts {
					ref[x.Name] = x.Data // the last node of a name
				}
				c := newCtx(t, p.m, len(toks), 1)
				// The last value of each name, as the reference's last node of a name.
				mine := map[string][]float32{}
				var order []string
				c.trace = func(name string, got []float32) {
					if _, ok := mine[name]; !ok {
						order = append(order, name)
					}
					mine[name] = got
				}
				if p.m.Encoder() {
					if _, err := embedRows(c, toks); err != nil {
						t.Fatal(err)
					}
				} else if _, err := c.DecodeAll(toks); err != nil {
					t.Fatal(err)
				}
				for _, name := range order {
					got := mine[name]
					want, ok := ref[name]
					if !ok || !archTracedName(name) {
						continue
					}
					base, _, _ := strings.Cut(name, "-")
					if len(want) != len(got) {
						t.Errorf("%d tokens: %s has %d values, reference %d", len(toks), name, len(got), len(want))
						continue
					}
					width := len(got) / len(toks)
					eq, first := 0, -1
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
					n := total[base]
					total[base] = [2]int{n[0] + eq, n[1] + len(toks)}
					if first >= 0 {
						t.Errorf("%d tokens: %s: %d of %d rows equal; first difference at [%d]: %g (%#x), reference %g (%#x)", len(toks), name,
							eq, len(toks), first, got[first], math.Float32bits(got[first]), want[first], math.Float32bits(want[first]))
					}
				}
			}
			last := "result_output"
			if p.m.Encoder() {
				last = "result_embd"
			}
			if total["l_out"][1] == 0 && !p.m.Encoder() || total[last][1] == 0 {
				t.Fatalf("nothing compared: %v", total)
			}
			var parts []string
			for _, n := range archTraced {
				if r, ok := total[n]; ok {
					parts = append(parts, fmt.Sprintf("%s %d/%d", n, r[0], r[1]))
				}
			}
			t.Logf("%s: rows bit-equal: %s", p.name, strings.Join(parts, ", "))
		})
	}
}

// embedRows evaluates toks in c as an embedding input (one micro-batch,
// every row an output) and returns the rows' final hidden states.
func embedRows(c *Context, toks []int32) ([]float32, error) {
	sp := []Span{{Ctx: c, Tokens: toks, UBatch: len(toks), Outputs: len(toks), Embed: true}}
	if err := c.r.Decode(sp); err != nil {
		return nil, err
	}
	return sp[0].Embd, nil
}

// TestArchitecturesGreedyMatchesReference: greedy continuations of the
// decoders, 24 tokens from each prompt, token-identical to the reference's.
func TestArchitecturesGreedyMatchesReference(t *testing.T) {
	lib := refLib(t)
	n := 0
	for _, a := range archModels {
		if a.arch == "bert" {
			continue
		}
		t.Run(a.String(), func(t *testing.T) {
			p := a.load(t, lib)
			for _, text := range archPrompts {
				toks := p.tokenize(t, text)
				want, err := p.ref.Greedy(toks, 24, 1)
				if err != nil {
					t.Fatal(err)
				}
				got := greedy(t, p.m, toks, 24)
				if !slices.Equal(got, want) {
					t.Errorf("%d-token prompt: bankml %v, reference %v", len(toks), got, want)
					continue
				}
				n++
			}
		})
	}
	t.Logf("%d continuations token-identical", n)
}

// TestEmbeddingsMatchReference: the pooled embedding of each pooling type
// (none: every row) of a bert file and a qwen3 file, bit-equal to
// llama_get_embeddings_seq / _ith of a reference context with embeddings on.
func TestEmbeddingsMatchReference(t *testing.T) {
	lib := refLib(t)
	models := []archModel{
		{arch: "bert", typ: gguf.F16, vocab: "bert-bge", seed: 71},
		{arch: "bert", typ: gguf.Q8_0, vocab: "bert-bge", seed: 73, tag: "rank", mod: func(s *synth.Shape) { s.Classifier = 1 }},
		{arch: "qwen3", typ: gguf.Q8_0, seed: 81, tag: "rank", mod: func(s *synth.Shape) { s.Classifier = 2 }},
	}
	n, total := 0, 0
	for _, a := range models {
		t.Run(a.String(), func(t *testing.T) {
			p := a.load(t, lib)
			r, err := p.m.NewRunner(1)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			pools := []embed.Pooling{embed.PoolingNone, embed.PoolingMean, embed.PoolingCLS, embed.PoolingLast}
			if a.tag == "rank" {
				pools = append(pools, embed.PoolingRank)
			}
			for _, pool := range pools {
				for _, text := range archPrompts {
					toks := p.tokenize(t, text)
					total++
					want, err := p.ref.Embed(toks, int(pool), 1)
					if err != nil {
						t.Fatal(err)
					}
					c, err := r.NewContext(len(toks))
					if err != nil {
						t.Fatal(err)
					}
					rows, err := embedRows(c, toks)
					if err != nil {
						t.Fatal(err)
					}
					var got, exp []float32
					if pool == embed.PoolingNone {
						got = rows
						for _, row := range want.Rows {
							exp = append(exp, row...)
						}
					} else {
						if got, err = r.Pool(pool, rows); err != nil {
							t.Fatal(err)
						}
						exp = want.Pooled
					}
					if len(got) != len(exp) {
						t.Errorf("%s, %d tokens: %d values, reference %d", pool, len(toks), len(got), len(exp))
						continue
					}
					bad := -1
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(exp[i]) {
							bad = i
							break
						}
					}
					if bad >= 0 {
						t.Errorf("%s, %d tokens: [%d] = %g, reference %g", pool, len(toks), bad, got[bad], exp[bad])
						continue
					}
					n++
				}
			}
		})
	}
	t.Logf("%d of %d embeddings bit-equal to the reference's", n, total)
}

// TestArchitecturesLongContextsMatchReference: long runs of the decoders
// where the attention takes its other paths with a sliding window (gemma3: a
// prompt of two micro-batches, the tiled kernel past the window, decodes
// through split-KV past 256 cells) and phi3's long rope factors (a context of
// 2048 past the 1024 positions of rope.scaling.original_context_length):
// the prompt's logits bit-equal and the greedy continuation token-identical
// to the reference's session of the same context size.
func TestArchitecturesLongContextsMatchReference(t *testing.T) {
	lib := refLib(t)
	for _, tc := range []struct {
		m         archModel
		sentences int
		n, nCtx   int
	}{
		{archModel{arch: "gemma3", typ: gguf.Q8_0, vocab: "llama-spm", seed: 42}, 48, 24, 0},
		{archModel{arch: "gemma3", typ: gguf.F16, vocab: "llama-spm", seed: 41}, 1, 300, 0},
		{archModel{arch: "phi3", typ: gguf.Q8_0, vocab: "phi-3", seed: 52}, 8, 24, 2048},
		{archModel{arch: "qwen2", typ: gguf.Q2_0, seed: 33}, 1, 300, 0},
	} {
		t.Run(fmt.Sprintf("%s %d sentences %d tokens", tc.m, tc.sentences, tc.n), func(t *testing.T) {
			p := tc.m.load(t, lib)
			toks := p.tokenize(t, longText(tc.sentences))
			nCtx := max(tc.nCtx, len(toks)+tc.n)
			s, err := p.ref.NewSession(nCtx, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			wantLogits, err := s.Decode(toks)
			if err != nil {
				t.Fatal(err)
			}
			want, err := s.Generate(wantLogits, tc.n, false)
			if err != nil {
				t.Fatal(err)
			}
			c := newCtx(t, p.m, nCtx, 1)
			logits, err := c.Decode(toks)
			if err != nil {
				t.Fatal(err)
			}
			for i := range logits {
				if math.Float32bits(logits[i]) != math.Float32bits(wantLogits[i]) {
					t.Fatalf("%d-token prompt: logit %d = %g, reference %g", len(toks), i, logits[i], wantLogits[i])
				}
			}
			for i := range want {
				best := sample.Greedy(logits)
				if best != want[i] {
					t.Fatalf("%d-token prompt: token %d: bankml %d, reference %d", len(toks), i, best, want[i])
				}
				if i+1 < len(want) {
					if logits, err = c.Decode([]int32{best}); err != nil {
						t.Fatal(err)
					}
				}
			}
			t.Logf("%s: %d-token prompt's logits bit-equal, %d tokens identical (context %d)", p.name, len(toks), len(want), nCtx)
		})
	}
}

// TestFusedAndBiasedProjectionsMatchReference: create_tensor_qkv's other forms on the graphs that take
// them: llama with one fused attn_qkv, phi3 with three separate projections, and bert with a fused attn_qkv;
// every layer's output and the logits (bert: embedding) bit-equal to the reference's.
func TestFusedAndBiasedProjectionsMatchReference(t *testing.T) {
	lib := refLib(t)
	for _, a := range []archModel{
		{arch: "llama", typ: gguf.Q8_0, seed: 91, tag: "fused", mod: func(s *synth.Shape) { s.FusedQKV = true; s.NHeadKV = s.NHead }},
		{arch: "phi3", typ: gguf.Q8_0, vocab: "phi-3", seed: 92, tag: "separate", mod: func(s *synth.Shape) { s.FusedQKV = false }},
		{arch: "bert", typ: gguf.F16, vocab: "bert-bge", seed: 93, tag: "fused", mod: func(s *synth.Shape) { s.FusedQKV = true }},
	} {
		t.Run(a.String(), func(t *testing.T) {
			p := a.load(t, lib)
			toks := p.tokenize(t, archPrompts[1])
			c := newCtx(t, p.m, len(toks), 1)
			if p.m.Encoder() {
				rows, err := embedRows(c, toks)
				if err != nil {
					t.Fatal(err)
				}
				want, err := p.ref.Embed(toks, int(embed.PoolingNone), 1)
				if err != nil {
					t.Fatal(err)
				}
				var exp []float32
				for _, r := range want.Rows {
					exp = append(exp, r...)
				}
				if !slices.EqualFunc(rows, exp, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) {
					t.Fatal("rows differ from the reference's")
				}
				return
			}
			got, err := c.Decode(toks)
			if err != nil {
				t.Fatal(err)
			}
			want, err := p.ref.PromptLogits(toks, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) {
				t.Fatal("logits differ from the reference's")
			}
			if g, w := greedy(t, p.m, toks, 16), mustGreedy(t, p, toks, 16); !slices.Equal(g, w) {
				t.Fatalf("greedy %v, reference %v", g, w)
			}
		})
	}
}

func mustGreedy(t *testing.T, p *pair, toks []int32, n int) []int32 {
	t.Helper()
	w, err := p.ref.Greedy(toks, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
