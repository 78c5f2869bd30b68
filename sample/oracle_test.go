package sample

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/testdata"
)

// The sampler oracle: bankml's Chain and the reference's own llama_sampler
// chain (libllama.v0.5.0.so through purego, assembled stage by stage as
// common_sampler_init assembles it) run side by side on the logits the
// reference computes, step by step, the drawn token fed back to both and to
// the reference's decoder. Every case must draw the same tokens and leave
// bit-identical candidate lists (order, ids, logits, probabilities) at every
// step.

// oracleModel is a model the reference decodes for the oracle.
type oracleModel struct {
	name     string
	path     string
	prompt   string
	m        *reference.Model
	suppress []int32
	vocab    *refVocab
}

// refVocab is the reference's vocabulary as a sample.Vocab, so that DRY's
// breaker preprocessing sees exactly llama.cpp's token texts and
// tokenizations (this oracle tests the sampler, not bankml's tokenizer).
type refVocab struct {
	m     *reference.Model
	once  sync.Once
	texts []string
	err   error
}

func (v *refVocab) TokenText(id int32) string {
	v.once.Do(func() {
		v.texts = make([]string, v.m.NVocab())
		for i := range v.texts {
			b, err := v.m.Detokenize([]int32{int32(i)}, false, true)
			if err != nil {
				v.err = err
				return
			}
			v.texts[i] = string(b)
		}
	})
	if v.err != nil || int(id) >= len(v.texts) {
		return ""
	}
	return v.texts[id]
}

func (v *refVocab) Tokenize(text string) []int32 {
	ids, err := v.m.Tokenize(text, false, false)
	if err != nil {
		v.err = err
	}
	return ids
}

var (
	qwen3Once sync.Once
	qwen3Path string
	qwen3Err  error
)

// qwen3Model writes (once per test binary) a tiny synthetic qwen3 model with
// the real Qwen3 vocabulary of 151,936 tokens.
func qwen3Model(t testing.TB) string {
	t.Helper()
	dir := filepath.Dir(testdata.Model(t, "qwen3/tokenizer.json.gz"))
	qwen3Once.Do(func() {
		v, err := synth.Qwen3Vocab(dir, synth.Qwen3NVocab)
		if err != nil {
			qwen3Err = err
			return
		}
		shape, err := synth.Preset("tiny")
		if err != nil {
			qwen3Err = err
			return
		}
		shape.Tied = true
		out := filepath.Join(sharedTemp(), "sample-oracle-qwen3.gguf")
		cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.Q8_0, Embd: gguf.Q8_0, Vocab: v, Seed: 7}
		if _, err := synth.WriteFile(out, cfg); err != nil {
			qwen3Err = err
			return
		}
		qwen3Path = out
	})
	if qwen3Err != nil {
		t.Fatal(qwen3Err)
	}
	return qwen3Path
}

var (
	tempOnce sync.Once
	tempDir  string
)

// sharedTemp is a folder shared by the tests of this binary (removed by
// TestMain).
func sharedTemp() string {
	tempOnce.Do(func() {
		d, err := osMkdirTemp()
		if err == nil {
			tempDir = d
		}
	})
	return tempDir
}

func loadRef(t testing.TB) *reference.Lib {
	t.Helper()
	l, err := reference.Load()
	if errors.Is(err, reference.ErrNotInstalled) {
		testdata.Absent(t, "skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// oracleModels loads the two models of the oracle: stories260K (a real
// trained llama, SentencePiece, 512 tokens) and the synthetic qwen3 model
// with Qwen3's BPE vocabulary.
func oracleModels(t testing.TB) []*oracleModel {
	t.Helper()
	l := loadRef(t)
	ms := []*oracleModel{
		{name: "stories260K", path: testdata.Model(t, "stories260K.gguf"), prompt: "Once upon a time, there was a little"},
		{name: "qwen3-synthetic", path: qwen3Model(t), prompt: "The quick brown fox: \"jumps\" over the lazy dog.\n"},
	}
	for _, om := range ms {
		m, err := l.LoadModel(om.path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		om.m = m
		om.vocab = &refVocab{m: m}
		if om.suppress, err = m.SuppressTokens(); err != nil {
			t.Fatal(err)
		}
		// bankml reads the same suppress list from the file.
		f, err := gguf.Open(om.path)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := SuppressTokens(f, m.NVocab())
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ours) != fmt.Sprint(om.suppress) {
			t.Fatalf("%s: suppress tokens %v, reference %v", om.name, ours, om.suppress)
		}
	}
	return ms
}

// refChain builds the reference's chain for p as common_sampler_init does
// (reference.NewCommonSampler; the model's suppress tokens, checked equal to
// om.suppress by oracleModels, are added there).
func refChain(om *oracleModel, p Params) (*reference.SamplerChain, error) {
	rp, err := refParams(p)
	if err != nil {
		return nil, err
	}
	return om.m.NewCommonSampler(rp)
}

// refParams converts p to the reference's description of a chain: the fields
// by their JSON names, the stages by name, the biases as they are.
func refParams(p Params) (reference.CommonSamplerParams, error) {
	var rp reference.CommonSamplerParams
	b, err := json.Marshal(p)
	if err == nil {
		err = json.Unmarshal(b, &rp)
	}
	for _, st := range p.Samplers {
		rp.Samplers = append(rp.Samplers, st.String())
	}
	for _, lb := range p.LogitBias {
		rp.LogitBias = append(rp.LogitBias, reference.LogitBias{Token: lb.Token, Bias: lb.Bias})
	}
	return rp, err
}

// oracleCase is one seeded generation.
type oracleCase struct {
	name  string
	p     Params
	ties  bool // logits rounded to quarters, so that many candidates tie
	steps int
}

// oracleCases returns the cases for a model: hand-picked ones that reach
// every stage and every sorting path (top-k up to and past the 128-element
// partial sort, full-vocabulary top-p above 1024 candidates, the unsorted
// min-p path, ties), then seeded random combinations.
func oracleCases(nVocab int) []oracleCase {
	def := DefaultParams()
	with := func(f func(p *Params)) Params {
		p := def
		p.Samplers = DefaultSamplers()
		f(&p)
		return p
	}
	cases := []oracleCase{
		{name: "defaults", p: with(func(p *Params) {})},
		{name: "temp 0", p: with(func(p *Params) { p.Temp = 0 })},
		{name: "temp 0.3", p: with(func(p *Params) { p.Temp = 0.3 })},
		{name: "temp 1", p: with(func(p *Params) { p.Temp = 1 })},
		{name: "temp 1.5, no top-k", p: with(func(p *Params) { p.Temp, p.TopK = 1.5, 0 })},
		{name: "top-k 1", p: with(func(p *Params) { p.TopK = 1 })},
		{name: "top-k 128", p: with(func(p *Params) { p.TopK, p.TopP, p.MinP = 128, 1, 0 })},
		{name: "top-k 129 (bucket sort)", p: with(func(p *Params) { p.TopK, p.TopP, p.MinP = 129, 1, 0 })},
		{name: "top-k 500", p: with(func(p *Params) { p.TopK, p.MinP = 500, 0 })},
		{name: "top-p 0.5", p: with(func(p *Params) { p.TopP = 0.5 })},
		{name: "top-p 0.99, no top-k", p: with(func(p *Params) { p.TopP, p.TopK, p.MinP = 0.99, 0, 0 })},
		{name: "top-p 0.7, no top-k, ties", p: with(func(p *Params) { p.TopP, p.TopK = 0.7, 0 }), ties: true},
		{name: "min-p 0.1, no top-k (unsorted)", p: with(func(p *Params) { p.MinP, p.TopK, p.TopP = 0.1, 0, 1 })},
		{name: "min-p 0.2", p: with(func(p *Params) { p.MinP = 0.2 })},
		{name: "typical 0.9", p: with(func(p *Params) { p.TypicalP = 0.9 })},
		{name: "typical 0.5, no top-k", p: with(func(p *Params) { p.TypicalP, p.TopK, p.MinP = 0.5, 0, 0 })},
		{name: "repeat penalty 1.3", p: with(func(p *Params) { p.PenaltyRepeat = 1.3 })},
		{name: "presence and frequency 0.5", p: with(func(p *Params) { p.PenaltyPresent, p.PenaltyFreq = 0.5, 0.5 })},
		{name: "penalties over 16", p: with(func(p *Params) { p.PenaltyRepeat, p.PenaltyFreq, p.PenaltyLastN = 1.1, 0.2, 16 })},
		{name: "DRY 0.8", p: with(func(p *Params) { p.DryMultiplier = 0.8 }), steps: 48},
		{name: "DRY 1.5, allowed 1, last 128", p: with(func(p *Params) { p.DryMultiplier, p.DryAllowedLength, p.DryPenaltyLastN = 1.5, 1, 128 }), steps: 48},
		{name: "DRY base 3, no breakers", p: with(func(p *Params) { p.DryMultiplier, p.DryBase, p.DrySequenceBreakers = 1, 3, nil }), steps: 48},
		{name: "DRY, multi-token breakers", p: with(func(p *Params) {
			p.DryMultiplier, p.DryAllowedLength = 1, 2
			p.DrySequenceBreakers = []string{"\n\n", " the", "Once upon", "lazy dog", "\"jumps\"", "a little"}
		}), steps: 48},
		{name: "DRY base 1.1, allowed 0", p: with(func(p *Params) { p.DryMultiplier, p.DryBase, p.DryAllowedLength = 0.5, 1.1, 0 }), steps: 40},
		{name: "XTC 0.5/0.1", p: with(func(p *Params) { p.XTCProbability, p.XTCThreshold = 0.5, 0.1 })},
		{name: "XTC 1/0.02, min-keep 2", p: with(func(p *Params) { p.XTCProbability, p.XTCThreshold, p.MinKeep, p.MinP = 1, 0.02, 2, 0 })},
		{name: "top-n-sigma 1", p: with(func(p *Params) { p.TopNSigma = 1 })},
		{name: "top-n-sigma 2, no top-k", p: with(func(p *Params) { p.TopNSigma, p.TopK = 2, 0 })},
		{name: "dynatemp 0.5", p: with(func(p *Params) { p.DynatempRange = 0.5 })},
		{name: "dynatemp 0.8, exponent 2, temp 1", p: with(func(p *Params) { p.DynatempRange, p.DynatempExponent, p.Temp = 0.8, 2, 1 })},
		{name: "dynatemp 1.2, no top-k", p: with(func(p *Params) { p.DynatempRange, p.TopK, p.Temp = 1.2, 0, 1.2 })},
		{name: "logit bias", p: with(func(p *Params) {
			// Token nVocab+5 is outside the vocabulary: llama.cpp searches for it
			// and matches nothing.
			p.LogitBias = []LogitBias{{1, 5}, {int32(nVocab - 1), 3}, {13, float32(math.Inf(-1))}, {2, -2}, {1, 1}, {int32(nVocab + 5), 2}}
		})},
		{name: "min-keep 5, top-p 0.3", p: with(func(p *Params) { p.MinKeep, p.TopP = 5, 0.3 })},
		{name: "temperature first", p: with(func(p *Params) { p.Samplers = []Type{Temperature, TopK, TopP, MinP} })},
		{name: "everything, ties", p: with(func(p *Params) {
			p.PenaltyRepeat, p.PenaltyPresent, p.DryMultiplier, p.TopNSigma, p.TypicalP = 1.2, 0.3, 0.7, 1.5, 0.95
			p.XTCProbability, p.XTCThreshold, p.DynatempRange, p.TopK = 0.3, 0.15, 0.3, 64
		}), ties: true},
	}
	r := rand.New(rand.NewPCG(uint64(nVocab), 42))
	for i := 0; len(cases) < 48; i++ {
		p := with(func(p *Params) {
			p.Temp = float32(r.IntN(16)) / 10 // 0 to 1.5
			p.TopK = []int32{0, 1, 5, 40, 100, 128}[r.IntN(6)]
			p.TopP = []float32{1, 0.95, 0.8, 0.5}[r.IntN(4)]
			p.MinP = []float32{0, 0.05, 0.1}[r.IntN(3)]
			p.TypicalP = []float32{1, 1, 0.9, 0.7}[r.IntN(4)]
			p.PenaltyRepeat = []float32{1, 1, 1.1, 1.5}[r.IntN(4)]
			p.PenaltyPresent = []float32{0, 0, 0.4}[r.IntN(3)]
			p.PenaltyFreq = []float32{0, 0, 0.3}[r.IntN(3)]
			p.DryMultiplier = []float32{0, 0, 0.8}[r.IntN(3)]
			if r.IntN(3) == 0 {
				p.XTCProbability, p.XTCThreshold = 0.5, 0.1
			}
			if r.IntN(3) == 0 {
				p.TopNSigma = 1.5
			}
			if r.IntN(3) == 0 {
				p.DynatempRange = 0.4
			}
			p.MinKeep = int32(r.IntN(3))
		})
		cases = append(cases, oracleCase{name: fmt.Sprintf("random %d", i), p: p, ties: r.IntN(4) == 0})
	}
	for i := range cases {
		cases[i].p.Seed = uint32(1000 + 17*i)
		if cases[i].steps == 0 {
			cases[i].steps = 32
		}
	}
	return cases
}

func quarters(l []float32) {
	for i := range l {
		l[i] = float32(math.Round(float64(l[i])*4) / 4)
	}
}

// sameCandidates compares two candidate lists bit for bit.
func sameCandidates(a []TokenData, b []reference.TokenData) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d candidates, reference %d", len(a), len(b))
	}
	for i := range a {
		if a[i].ID != b[i].ID || math.Float32bits(a[i].Logit) != math.Float32bits(b[i].Logit) || math.Float32bits(a[i].P) != math.Float32bits(b[i].P) {
			return fmt.Errorf("candidate %d: %+v, reference %+v", i, a[i], b[i])
		}
	}
	return nil
}

// runCase generates c.steps tokens with both chains and reports the steps
// taken and the first difference.
func runCase(om *oracleModel, c oracleCase) (steps int, rows [][]float32, err error) {
	ours, err := New(c.p, Model{NVocab: om.m.NVocab(), SuppressTokens: om.suppress, Vocab: om.vocab})
	if err != nil {
		return 0, nil, err
	}
	if om.vocab.err != nil {
		return 0, nil, om.vocab.err
	}
	ref, err := refChain(om, c.p)
	if err != nil {
		return 0, nil, err
	}
	defer ref.Free()
	prompt, err := om.m.Tokenize(om.prompt, true, true)
	if err != nil {
		return 0, nil, err
	}
	sess, err := om.m.NewSession(len(prompt)+c.steps, 1)
	if err != nil {
		return 0, nil, err
	}
	defer sess.Close()
	// llama-server's init_sampler: reset, then accept the prompt.
	ours.Reset()
	ref.Reset()
	for _, t := range prompt {
		ours.Accept(t)
		ref.Accept(t)
	}
	if ours.Seed() != ref.Seed() {
		return 0, nil, fmt.Errorf("seed %d, reference %d", ours.Seed(), ref.Seed())
	}
	logits, err := sess.Decode(prompt)
	if err != nil {
		return 0, nil, err
	}
	for step := range c.steps {
		if c.ties {
			quarters(logits)
		}
		if step%8 == 0 {
			rows = append(rows, append([]float32(nil), logits...))
		}
		tok, err := ours.Sample(logits)
		if err != nil {
			return step, rows, err
		}
		ra, err := ref.Apply(logits)
		if err != nil {
			return step, rows, err
		}
		rc, sel := ra.Cands, ra.Selected
		cands, osel := ours.Candidates(false)
		if err := sameCandidates(cands, rc); err != nil || osel != sel || ours.arr.sorted != ra.Sorted {
			return step, rows, fmt.Errorf("step %d: %v (selected %d, reference %d; sorted %v, reference %v)", step, err, osel, sel, ours.arr.sorted, ra.Sorted)
		}
		if rt := rc[sel].ID; rt != tok {
			return step, rows, fmt.Errorf("step %d: token %d, reference %d", step, tok, rt)
		}
		ours.Accept(tok)
		ref.Accept(tok)
		if step+1 < c.steps {
			if logits, err = sess.Decode([]int32{tok}); err != nil {
				return step, rows, err
			}
		}
	}
	return c.steps, rows, nil
}

// oracleRows collects logit rows seen by the oracle, for the logprob test.
var (
	oracleRowsMu sync.Mutex
	oracleRows   = map[string][][]float32{}
)

// TestChainMatchesReferenceSamplers is the sampler oracle (see above).
func TestChainMatchesReferenceSamplers(t *testing.T) {
	ms := oracleModels(t)
	total, ok, steps := 0, 0, 0
	for _, om := range ms {
		for _, c := range oracleCases(om.m.NVocab()) {
			total++
			n, rows, err := runCase(om, c)
			steps += n
			oracleRowsMu.Lock()
			if len(oracleRows[om.name]) < 24 {
				oracleRows[om.name] = append(oracleRows[om.name], rows...)
			}
			oracleRowsMu.Unlock()
			if err != nil {
				t.Errorf("%s, %s (seed %d): %v", om.name, c.name, c.p.Seed, err)
				continue
			}
			ok++
		}
	}
	t.Logf("sampler oracle: %d of %d seeded cases token-identical to libllama's chain, candidate lists bit-identical at all %d steps (2 models)", ok, total, steps)
	if ok != total {
		t.Fatalf("%d of %d cases differ", total-ok, total)
	}
}
