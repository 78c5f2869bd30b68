package model

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
)

// EnvHeavy names the environment variable that, set to 1, runs the oracle
// cases too slow for CI with portable kernels: the bonsai-1.7b shapes in
// every type and every prompt set, and the bonsai-8b files.
const EnvHeavy = "BANKML_ORACLE_HEAVY"

func heavy() bool { return os.Getenv(EnvHeavy) == "1" }

// synthModel names one synthetic model of the oracle tests.
type synthModel struct {
	arch   string
	preset string
	typ    gguf.GGMLType
	yarn   bool // rope.scaling: YaRN, factor 4 over 16384 original positions (Bonsai's settings)
	linear bool // rope.scaling: linear, factor 2
	seed   uint64
}

func (s synthModel) String() string {
	y := ""
	switch {
	case s.yarn:
		y = "-yarn"
	case s.linear:
		y = "-linear"
	}
	return fmt.Sprintf("%s-%s-%s%s", s.arch, s.preset, strings.ToUpper(s.typ.String()), y)
}

// yarnMetadata is the RoPE scaling of Bonsai-8B's GGUF as the forward oracle
// of the seed records it (freq_scale 0.25, n_ctx_orig 16384).
func yarnMetadata(arch string) []gguf.KV {
	return []gguf.KV{
		{Key: arch + ".rope.scaling.type", Value: gguf.StringValue("yarn")},
		{Key: arch + ".rope.scaling.factor", Value: gguf.Float32Value(4)},
		{Key: arch + ".rope.scaling.original_context_length", Value: gguf.Uint32Value(16384)},
	}
}

// testShapes are shapes beyond synth's presets: "tiny-hd128" has the
// bonsai head size (128) with grouped-query attention over one KV head, at a
// cost close to tiny's.
var testShapes = map[string]synth.Shape{
	"tiny-hd128": {NEmbd: 256, NLayer: 2, NFF: 512, NHead: 4, NHeadKV: 1, HeadDim: 128,
		NCtxTrain: 4096, RopeFreqBase: 1e6, RMSEps: 1e-6},
}

// path returns the file of s with the real Qwen3 vocabulary, generating it
// on first use (kept between runs by internal/synthcache).
func (s synthModel) path(t testing.TB) string {
	t.Helper()
	shape, ok := testShapes[s.preset]
	if !ok {
		var err error
		if shape, err = synth.Preset(s.preset); err != nil {
			t.Fatal(err)
		}
	}
	cfg := synth.Config{Arch: s.arch, Shape: shape, Weight: s.typ, Embd: s.typ, Output: s.typ, Vocab: synthcache.Qwen3Vocab(t), Seed: s.seed}
	switch {
	case s.yarn:
		cfg.Metadata = yarnMetadata(s.arch)
	case s.linear:
		cfg.Metadata = []gguf.KV{
			{Key: s.arch + ".rope.scaling.type", Value: gguf.StringValue("linear")},
			{Key: s.arch + ".rope.scaling.factor", Value: gguf.Float32Value(2)},
		}
	}
	return synthcache.File(t, s.String(), cfg)
}

// pair is one synthetic model loaded by bankml and by the reference.
type pair struct {
	name string
	m    *Model
	ref  *reference.Model
}

func loadPair(t testing.TB, lib *reference.Lib, s synthModel) *pair {
	t.Helper()
	path := s.path(t)
	rm, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	return &pair{name: s.String(), m: loadModel(t, path), ref: rm}
}

// tokenize returns the reference's tokens of text (llama_tokenize with
// add_special and parse_special, as llama-server tokenizes a prompt).
func (p *pair) tokenize(t testing.TB, text string) []int32 {
	t.Helper()
	toks, err := p.ref.Tokenize(text, true, true)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

// chatML renders a conversation in Qwen3's ChatML shape with thinking off:
// optional system message, alternating user/assistant turns, and the
// generation prompt with the empty think block Qwen3's template adds
// (earlier assistant turns are rendered without it). It is test input text,
// not an expected value.
func chatML(system string, turns ...string) string {
	var b strings.Builder
	if system != "" {
		b.WriteString("<|im_start|>system\n" + system + "<|im_end|>\n")
	}
	for i, m := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b.WriteString("<|im_start|>" + role + "\n" + m + "<|im_end|>\n")
	}
	b.WriteString("<|im_start|>assistant\n<think>\n\n</think>\n\n")
	return b.String()
}

// longChat returns a user message of about 50·n tokens: n paragraphs of
// plain English (test input).
func longChat(n int) string {
	paras := []string{
		"I am planning a trip through the north of Italy next spring and would like some advice. I will travel by train from Milan to Venice, stopping in Verona and Padua, and I have about ten days in total.",
		"My budget is modest, so I prefer small family hotels to large chains. I enjoy museums, old churches and markets, and I would like to taste the local food in each city rather than eat at tourist restaurants.",
		"Could you suggest how many nights to spend in each place, which sights are worth booking in advance, and whether a regional rail pass would save money compared with buying single tickets as I go?",
		"Please also tell me what the weather is usually like in April, what clothes I should pack, and whether there are any local holidays or festivals during that month that might affect opening hours.",
	}
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(paras[i%len(paras)])
	}
	return b.String()
}
