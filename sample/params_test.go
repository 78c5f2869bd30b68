package sample

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

func TestGreedyTakesFirstMaximum(t *testing.T) {
	for _, tc := range []struct {
		logits []float32
		want   int32
	}{
		{[]float32{1, 3, 2}, 1},
		{[]float32{5, 5, 1}, 0},
		{[]float32{-1, -2, -1}, 0},
		{[]float32{0}, 0},
	} {
		if got := Greedy(tc.logits); got != tc.want {
			t.Errorf("Greedy(%v) = %d, want %d", tc.logits, got, tc.want)
		}
	}
}

// TestSamplerNamesParseAsLlamaCpp: the names, aliases and letters of
// common_sampler_types_from_names / _from_chars, unknown ones reported.
func TestSamplerNamesParseAsLlamaCpp(t *testing.T) {
	got, unknown := ParseSamplerNames([]string{"top_k", "Top-P", "minp", "nucleus", "temp", "TYP", "typ_p", "dry",
		"penalties", "top-n-sigma", "xtc", "bogus", "temperature"})
	want := []Type{TopK, TopP, MinP, TopP, Temperature, TypicalP, TypicalP, Dry, Penalties, TopNSigma, XTC, Temperature}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(unknown, []string{"bogus"}) {
		t.Errorf("names: %v (unknown %q), want %v", got, unknown, want)
	}
	types, bad := ParseSamplerChars("edskypmxtz")
	if !reflect.DeepEqual(types, DefaultSamplers()) || string(bad) != "z" {
		t.Errorf("chars: %v (unknown %q), want %v", types, bad, DefaultSamplers())
	}
	for _, ty := range DefaultSamplers() {
		if ty.String() == "" {
			t.Errorf("type %d has no name", ty)
		}
	}
}

// TestCheckRefusesWhatIsNotReproduced: mirostat, llguidance grammars,
// adaptive-p, infill and backend sampling are refused naming the parameter; llama.cpp's
// own invalid values are refused as invalid.
func TestCheckRefusesWhatIsNotReproduced(t *testing.T) {
	for _, tc := range []struct {
		param string
		set   func(p *Params)
		want  error
	}{
		{"mirostat", func(p *Params) { p.Mirostat = 2 }, ErrUnsupported},
		{"grammar", func(p *Params) { p.Grammar = "%llguidance {}\nstart: %json {}" }, ErrUnsupported},
		{"grammar", func(p *Params) { p.GrammarType = 7 }, ErrInvalid},
		{"grammar_triggers", func(p *Params) { p.GrammarTriggers = []GrammarTrigger{{Type: 9}} }, ErrInvalid},
		{"backend_sampling", func(p *Params) { p.BackendSampling = true }, ErrUnsupported},
		{"samplers", func(p *Params) { p.Samplers = append(p.Samplers, AdaptiveP) }, ErrUnsupported},
		{"samplers", func(p *Params) { p.Samplers = []Type{Infill} }, ErrUnsupported},
		{"repeat_penalty", func(p *Params) { p.PenaltyRepeat = 0 }, ErrInvalid},
		{"repeat_penalty", func(p *Params) { p.PenaltyRepeat = 1e-39 }, ErrInvalid}, // 1/x is infinite
		{"frequency_penalty", func(p *Params) { p.PenaltyFreq = float32(math.Inf(1)) }, ErrInvalid},
		{"presence_penalty", func(p *Params) { p.PenaltyPresent = float32(math.NaN()) }, ErrInvalid},
		{"temperature", func(p *Params) { p.Temp = float32(math.NaN()) }, ErrInvalid},
		{"logit_bias", func(p *Params) { p.LogitBias = []LogitBias{{1, float32(math.Inf(1))}} }, ErrInvalid},
	} {
		p := DefaultParams()
		tc.set(&p)
		err := p.Check()
		var pe *ParamError
		if !errors.Is(err, tc.want) || !errors.As(err, &pe) || pe.Param != tc.param {
			t.Errorf("%s: %v, want a %v naming %s", tc.param, err, tc.want, tc.param)
		}
		if _, err := New(p, Model{NVocab: 8}); !errors.Is(err, tc.want) {
			t.Errorf("New with bad %s: %v", tc.param, err)
		}
	}
	p := DefaultParams()
	p.LogitBias = []LogitBias{{3, float32(math.Inf(-1))}}
	if err := p.Check(); err != nil {
		t.Errorf("defaults with a ban: %v", err)
	}
}

// TestServerLimitsClampOrRefuse: server-schema.cpp's soft limits clamp, its
// hard limits refuse, and dry_base < 1 takes the server's default.
func TestServerLimitsClampOrRefuse(t *testing.T) {
	def := DefaultParams()
	p := def
	p.TopK, p.TopP, p.MinP, p.Temp, p.XTCThreshold, p.Mirostat, p.DryBase = -5, 1.5, -0.5, -1, 2, 7, 0.5
	if err := p.ApplyServerLimits(def); err != nil {
		t.Fatal(err)
	}
	if p.TopK != 0 || p.TopP != 1 || p.MinP != 0 || p.Temp != 0 || p.XTCThreshold != 1 || p.Mirostat != 2 || p.DryBase != 1.75 {
		t.Errorf("clamped to %+v", p)
	}
	for _, set := range []func(p *Params){
		func(p *Params) { p.PenaltyLastN = -1 }, func(p *Params) { p.DryPenaltyLastN = -1 },
		func(p *Params) { p.MinKeep = -1 }, func(p *Params) { p.AdaptiveDecay = 1 },
	} {
		p := def
		set(&p)
		if err := p.ApplyServerLimits(def); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", p, err)
		}
	}
}

// TestSeedsAreFixedOrRandom: a fixed seed gives the same draws after Reset;
// DefaultSeed draws a seed, reported by Seed.
func TestSeedsAreFixedOrRandom(t *testing.T) {
	logits := make([]float32, 64)
	for i := range logits {
		logits[i] = float32(i%7) / 3
	}
	p := DefaultParams()
	p.Seed, p.TopK = 1234, 0
	c, err := New(p, Model{NVocab: len(logits)})
	if err != nil {
		t.Fatal(err)
	}
	if c.Seed() != 1234 {
		t.Errorf("Seed() = %d", c.Seed())
	}
	draw := func() []int32 {
		var out []int32
		for range 20 {
			tok, err := c.Sample(logits)
			if err != nil {
				t.Fatal(err)
			}
			c.Accept(tok)
			out = append(out, tok)
		}
		return out
	}
	a := draw()
	c.Reset()
	if b := draw(); !reflect.DeepEqual(a, b) {
		t.Errorf("after Reset: %v, first %v", b, a)
	}
	p.Seed = DefaultSeed
	seeds := map[uint32]bool{}
	for range 4 {
		c, err := New(p, Model{NVocab: len(logits)})
		if err != nil {
			t.Fatal(err)
		}
		seeds[c.Seed()] = true
	}
	if len(seeds) < 2 {
		t.Errorf("DefaultSeed gave the same seed four times: %v", seeds)
	}
	if _, err := c.Sample(logits[:10]); err == nil {
		t.Error("a short logits row was accepted")
	}
}

// TestRingKeepsTheLastN: the penalty history forgets the oldest token once
// full, as llama.cpp's ring_buffer does.
func TestRingKeepsTheLastN(t *testing.T) {
	s := &penalties{lastN: 3, repeat: 2, prev: newRing(3), count: map[int32]int{}}
	for _, tok := range []int32{1, 2, 1, 3, 4} {
		s.accept(tok)
	}
	if want := map[int32]int{1: 1, 3: 1, 4: 1}; !reflect.DeepEqual(s.count, want) {
		t.Errorf("counts %v, want %v", s.count, want)
	}
	if s.prev.rat(0) != 4 || s.prev.rat(2) != 1 {
		t.Errorf("ring %v", s.prev)
	}
}
