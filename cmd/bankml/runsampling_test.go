package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/grammar"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/sample"
)

// parseCLI parses args as run does (llamaArgs, then kong) into a fresh cli.
func parseCLI(args ...string) (*cli, error) {
	var cl cli
	parser, err := kong.New(&cl, kong.Vars{"nproc": "1", "version": "test"}, kong.WithHyphenPrefixedParameters(true))
	if err != nil {
		return nil, err
	}
	args, _, err = llamaArgs(args, valueFlags(parser.Model, args[0]))
	if err == nil {
		_, err = parser.Parse(args)
	}
	return &cl, err
}

// TestRunSamplingFlags checks that run's llama.cpp sampling flags set sample.Params as arg.cpp's handlers
// set common_params_sampling (arg.cpp:1982–2308), from llama-cli's defaults, with arg.cpp's refusals and
// warnings.
func TestRunSamplingFlags(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		args []string
		want func(p *sample.Params) // the changes from sample.DefaultParams
		warn string                 // in the warnings
		err  string                 // in the error
	}{
		{[]string{}, func(p *sample.Params) {}, "", ""},
		{[]string{"--min-p", "0.1", "--top-nsigma", "1.5", "--xtc-probability", "0.5", "--xtc-threshold", "0.2", "--typical", "0.9"},
			func(p *sample.Params) {
				p.MinP, p.TopNSigma, p.XTCProbability, p.XTCThreshold, p.TypicalP = 0.1, 1.5, 0.5, 0.2, 0.9
			}, "", ""},
		{[]string{"--repeat-last-n", "16", "--repeat-penalty", "1.1", "--presence-penalty", "-0.5", "--frequency-penalty", "0.25"},
			func(p *sample.Params) {
				p.PenaltyLastN, p.PenaltyRepeat, p.PenaltyPresent, p.PenaltyFreq = 16, 1.1, -0.5, 0.25
			}, "", ""},
		{[]string{"--dry-multiplier", "0.8", "--dry-base", "2", "--dry-allowed-length", "-3", "--dry-penalty-last-n", "0"},
			func(p *sample.Params) {
				p.DryMultiplier, p.DryBase, p.DryAllowedLength, p.DryPenaltyLastN = 0.8, 2, -3, 0
			}, "", ""},
		{[]string{"--dry-base", "0.5"}, func(p *sample.Params) {}, "--dry-base 0.5 ignored: below 1", ""}, // arg.cpp:2130
		{[]string{"--dry-base", "nan"}, func(p *sample.Params) {}, "--dry-base NaN ignored: not a number, as llama.cpp ignores it", ""},
		{[]string{"--dry-base", "-inf"}, func(p *sample.Params) {}, "--dry-base -Inf ignored: below 1", ""},
		{[]string{"--dry-sequence-breaker", "-x", "--dry-sequence-breaker", "\n"}, func(p *sample.Params) { p.DrySequenceBreakers = []string{"-x", "\n"} }, "", ""},
		{[]string{"--dry-sequence-breaker", "a", "--dry-sequence-breaker", "none", "--dry-sequence-breaker", "b"}, func(p *sample.Params) { p.DrySequenceBreakers = []string{"b"} }, "", ""},
		{[]string{"--dry-sequence-breaker", "none"}, func(p *sample.Params) { p.DrySequenceBreakers = []string{} }, "", ""},
		{[]string{"--dynatemp-range", "0.3", "--dynatemp-exp", "2", "--mirostat", "0", "--mirostat-lr", "0.2", "--mirostat-ent", "4", "--adaptive-target", "0.5", "--adaptive-decay", "0.5"},
			func(p *sample.Params) {
				p.DynatempRange, p.DynatempExponent, p.MirostatEta, p.MirostatTau, p.AdaptiveTarget, p.AdaptiveDecay = 0.3, 2, 0.2, 4, 0.5, 0.5
			}, "", ""},
		{[]string{"--samplers", "top_k;TEMP;nope;min-p"}, func(p *sample.Params) { p.Samplers = []sample.Type{sample.TopK, sample.Temperature, sample.MinP} },
			"--samplers: unable to match sampler by name 'nope': skipped", ""},
		{[]string{"--sampling-seq", "kzt"}, func(p *sample.Params) { p.Samplers = []sample.Type{sample.TopK, sample.Temperature} },
			"--sampler-seq: unable to match sampler by char 'z': skipped", ""},
		{[]string{"-l", "15+1.5", "--logit-bias", "7-inf", "-l", "-1+-2"}, func(p *sample.Params) {
			p.LogitBias = []sample.LogitBias{{Token: 15, Bias: 1.5}, {Token: 7, Bias: -inf}, {Token: -1, Bias: -2}}
		}, "", ""},
		// arg.cpp's refusals.
		{[]string{"--repeat-last-n", "-1"}, nil, "", "--repeat-last-n: value -1 out of range [0, 2147483647] (llama.cpp refuses a negative repeat-last-n)"}, // arg.cpp:2078
		{[]string{"--dry-penalty-last-n", "-1"}, nil, "", "--dry-penalty-last-n: value -1 out of range [0, 2147483647]"},                                    // arg.cpp:2151
		{[]string{"--repeat-penalty", "0"}, nil, "", "--repeat-penalty: penalty_repeat must be finite and greater than 0"},                                  // arg.cpp:2091
		{[]string{"--presence-penalty", "inf"}, nil, "", "--presence-penalty: penalty_present must be finite"},                                              // arg.cpp:2105
		{[]string{"--frequency-penalty", "nan"}, nil, "", "--frequency-penalty: penalty_freq must be finite"},                                               // arg.cpp:2116
		// Check's refusals name the flag, not sample.Params' field.
		{[]string{"--min-p", "nan"}, nil, "", "--min-p: NaN is not a finite number (invalid sampling parameter)"},
		{[]string{"--dynatemp-exp", "inf"}, nil, "", "--dynatemp-exp: +Inf is not a finite number"},
		{[]string{"--typical", "-inf"}, nil, "", "--typical: -Inf is not a finite number"},
		{[]string{"-l", "15"}, nil, "", `-l/--logit-bias "15": invalid input format`}, // arg.cpp:2255
		{[]string{"-l", "15*1"}, nil, "", `-l/--logit-bias "15*1": invalid input format`},
		{[]string{"-l", "x+1"}, nil, "", `-l/--logit-bias "x+1": invalid input format`},
		{[]string{"-l", "15+one"}, nil, "", `-l/--logit-bias "15+one": invalid input format`},
		{[]string{"--min-p", "0.1x"}, nil, "", "--min-p"}, // whole numbers (llamaflags.go's deliberate difference)
		{[]string{"--samplers", "k", "--sampler-seq", "k"}, nil, "", "--samplers and --sampler-seq both set the sampler order"},
		// What bankml does not reproduce, refused as serve refuses it per request (sample.Params.Check).
		{[]string{"--mirostat", "2"}, nil, "", "--mirostat: mirostat 2 is not implemented"},
		// A schema no value meets is refused before generation, as serve refuses it (grammar.SchemaDocument.Satisfiable).
		{[]string{"-j", `{"type":"integer","minimum":5,"maximum":1}`}, nil, "", "-j/--json-schema: JSON schema error at #: no integer meets minimum 5 and maximum 1"},
		{[]string{"-j", `{"type":"string","minLength":3,"maxLength":1}`}, nil, "", "-j/--json-schema: JSON schema error at #:"},
		{[]string{"--samplers", "adaptive_p"}, nil, "", "--samplers/--sampler-seq: the adaptive_p sampler is not implemented"},
	} {
		cl, err := parseCLI(append([]string{"run", "m.gguf"}, c.args...)...)
		var w bytes.Buffer
		p := sample.DefaultParams()
		if err == nil {
			if err = cl.Run.Sampling.apply(&p, &w); err == nil {
				err = cl.Run.nameParam(p.Check(), nil)
			}
		}
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.err)
			}
			continue
		case err != nil:
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		want := sample.DefaultParams()
		c.want(&want)
		if !reflect.DeepEqual(p, want) {
			t.Errorf("%q:\n got %+v\nwant %+v", c.args, p, want)
		}
		if !strings.Contains(w.String(), c.warn) || (c.warn == "") != (w.Len() == 0) {
			t.Errorf("%q: warnings %q, want %q", c.args, w.String(), c.warn)
		}
	}
}

// TestDrawsAtRandom checks when run's chain draws at random (and run prints its seed): temp > 0, a
// dynamic temperature range, XTC before the temperature stage, or no temperature stage.
func TestDrawsAtRandom(t *testing.T) {
	for _, c := range []struct {
		what   string
		set    func(p *sample.Params)
		random bool
	}{
		{"temp 0.8", func(p *sample.Params) {}, true},
		{"temp 0", func(p *sample.Params) { p.Temp = 0 }, false},
		{"temp 0, repeat penalty", func(p *sample.Params) { p.Temp, p.PenaltyRepeat = 0, 1.5 }, false},
		{"temp 0, dynatemp-range 0.5", func(p *sample.Params) { p.Temp, p.DynatempRange = 0, 0.5 }, true},
		{"temp 0, xtc", func(p *sample.Params) { p.Temp, p.XTCProbability = 0, 0.5 }, true},
		{"temp 0, xtc off by threshold", func(p *sample.Params) { p.Temp, p.XTCProbability, p.XTCThreshold = 0, 0.5, 0.6 }, false},
		{"temp 0, xtc after temperature", func(p *sample.Params) {
			p.Temp, p.XTCProbability, p.Samplers = 0, 0.5, []sample.Type{sample.Temperature, sample.XTC}
		}, false},
		{"temp 0, no temperature stage", func(p *sample.Params) { p.Temp, p.Samplers = 0, []sample.Type{sample.TopK} }, true},
	} {
		p := sample.DefaultParams()
		c.set(&p)
		if got := drawsAtRandom(p); got != c.random {
			t.Errorf("%s: drawsAtRandom = %v, want %v", c.what, got, c.random)
		}
	}
}

// TestRunPrintsTheSeed runs `bankml run` on stories260K and checks that the "seed:" line is on standard
// error exactly when the chain draws at random with a random seed (-s -1), as llama-cli prints its
// sampler seed (tools/completion/completion.cpp:452).
func TestRunPrintsTheSeed(t *testing.T) {
	model := storiesPath(t)
	for _, c := range []struct {
		args []string
		seed bool
	}{
		{[]string{"--temp", "0"}, false},
		{[]string{"--temp", "0", "--repeat-penalty", "1.5"}, false},
		{[]string{"--temp", "0.8"}, true},
		{[]string{"--temp", "0.8", "-s", "3"}, false},
		{[]string{"--temp", "0", "--dynatemp-range", "2"}, true},
		{[]string{"--temp", "0", "--xtc-probability", "0.5"}, true},
		{[]string{"--temp", "0", "--samplers", "top_k"}, true},
	} {
		code, _, stderr := runCLI(append([]string{"run", model, "-p", "Once upon a time", "-n", "2", "-t", "1", "-c", "256"}, c.args...)...)
		if code != 0 {
			t.Errorf("%q: exit %d: %s", c.args, code, stderr)
			continue
		}
		if got := strings.Contains(stderr, "\nseed: ") || strings.HasPrefix(stderr, "seed: "); got != c.seed {
			t.Errorf("%q: seed line printed %v, want %v: %s", c.args, got, c.seed, stderr)
		}
	}
}

// TestRunSamplingMatchesTheReference (oracle) runs `bankml run` on stories260K with llama-cli's sampling
// flags and compares its text with the reference's: its common_sampler chain built from the same
// common_params_sampling (llama-cli's defaults and the flags as arg.cpp sets them, written out here from
// arg.cpp), driven over the reference's own decode as a llama-server slot (reftest.Generate: the prompt
// accepted as history, then sample, accept, decode). The first rows are greedy (--temp 0): their penalties
// must change the plain greedy continuation, which the test checks too, or it could not fail.
func TestRunSamplingMatchesTheReference(t *testing.T) {
	model := storiesPath(t)
	rm := func() *reference.Model {
		lib := reftest.Lib(t)
		m, err := lib.LoadModel(model)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		return m
	}()
	const n = 40
	const story, twice = "Once upon a time", "Once upon a time, there was a little girl named Lily. Once upon a time"
	eog := []sample.LogitBias{}
	for id := range rm.NVocab() {
		if refEOG(rm, int32(id)) {
			eog = append(eog, sample.LogitBias{Token: int32(id), Bias: float32(math.Inf(-1))})
		}
	}
	// The grammar flags (arg.cpp:2265-2300): a user grammar and a JSON schema, inline and from a file. The
	// schema's GBNF is json_schema_to_grammar's (grammar.FromJSONSchema, byte-identical to it by package
	// grammar's oracle).
	const list, obj = "root ::= (\"- \" [a-z]+ \"\\n\")+\n", `{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}`
	objGBNF, err := grammar.FromJSONSchema([]byte(obj), true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	listFile, objFile := filepath.Join(dir, "list.gbnf"), filepath.Join(dir, "obj.json")
	if err := os.WriteFile(listFile, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(objFile, []byte(obj), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		prompt    string
		args      []string
		set       func(p *sample.Params)
		notGreedy bool // the text must differ from the plain greedy continuation
	}{
		{story, []string{"--temp", "0", "--grammar", list}, func(p *sample.Params) { p.Temp, p.Grammar, p.GrammarType = 0, list, sample.GrammarUser }, true},
		{story, []string{"--temp", "0.8", "-s", "9", "--grammar-file", listFile}, func(p *sample.Params) { p.Seed, p.Grammar, p.GrammarType = 9, list, sample.GrammarUser }, false},
		{story, []string{"--temp", "0", "-j", obj}, func(p *sample.Params) { p.Temp, p.Grammar, p.GrammarType = 0, objGBNF, sample.GrammarOutputFormat }, true},
		{story, []string{"--temp", "1", "-s", "4", "-jf", objFile}, func(p *sample.Params) {
			p.Temp, p.Seed, p.Grammar, p.GrammarType = 1, 4, objGBNF, sample.GrammarOutputFormat
		}, false},
		{story, []string{"--temp", "0", "--repeat-penalty", "1.5"}, func(p *sample.Params) { p.Temp, p.PenaltyRepeat = 0, 1.5 }, true},
		{story, []string{"--temp", "0", "--presence-penalty", "1", "--frequency-penalty", "0.5", "--repeat-last-n", "16"},
			func(p *sample.Params) { p.Temp, p.PenaltyPresent, p.PenaltyFreq, p.PenaltyLastN = 0, 1, 0.5, 16 }, true},
		{twice, []string{"--temp", "0", "--dry-multiplier", "5", "--dry-base", "3", "--dry-allowed-length", "1", "--dry-sequence-breaker", "none"},
			func(p *sample.Params) {
				p.Temp, p.DryMultiplier, p.DryBase, p.DryAllowedLength, p.DrySequenceBreakers = 0, 5, 3, 1, []string{}
			}, true},
		{twice, []string{"--temp", "0", "--dry-multiplier", "5", "--dry-base", "3", "--dry-allowed-length", "1", "--dry-sequence-breaker", "a", "--dry-sequence-breaker", "."},
			func(p *sample.Params) {
				p.Temp, p.DryMultiplier, p.DryBase, p.DryAllowedLength, p.DrySequenceBreakers = 0, 5, 3, 1, []string{"a", "."}
			}, true},
		{story, []string{"--temp", "0.8", "-s", "42", "--min-p", "0.2", "--top-k", "0", "--dry-multiplier", "0.8"},
			func(p *sample.Params) { p.Seed, p.MinP, p.TopK, p.DryMultiplier = 42, 0.2, 0, 0.8 }, false},
		{story, []string{"--temp", "1", "-s", "3", "--xtc-probability", "0.5", "--xtc-threshold", "0.1", "--typical", "0.9", "--top-nsigma", "1.5"},
			func(p *sample.Params) {
				p.Temp, p.Seed, p.XTCProbability, p.TypicalP, p.TopNSigma = 1, 3, 0.5, 0.9, 1.5
			}, false},
		{story, []string{"--temp", "0.7", "-s", "5", "--sampler-seq", "pkt", "--dynatemp-range", "0.3", "-l", "13+2"},
			func(p *sample.Params) {
				p.Temp, p.Seed, p.DynatempRange = 0.7, 5, 0.3
				p.Samplers = []sample.Type{sample.TopP, sample.TopK, sample.Temperature}
				p.LogitBias = []sample.LogitBias{{Token: 13, Bias: 2}}
			}, false},
		{story, []string{"--temp", "0", "--dynatemp-range", "50", "--top-k", "0", "--top-p", "1", "--min-p", "0", "-s", "7"},
			func(p *sample.Params) { p.Temp, p.DynatempRange, p.TopK, p.TopP, p.MinP, p.Seed = 0, 50, 0, 1, 0, 7 }, true}, // llama-sampler.cpp:2135
		{story, []string{"--temp", "0", "--dynatemp-range", "1.5", "-s", "11"},
			func(p *sample.Params) { p.Temp, p.DynatempRange, p.Seed = 0, 1.5, 11 }, true},
		{story, []string{"--temp", "0", "--ignore-eos"}, func(p *sample.Params) { p.Temp, p.LogitBias = 0, eog }, false}, // common.cpp:1377
	}
	equal := 0
	for _, c := range rows {
		p := sample.DefaultParams()
		c.set(&p)
		if runMatchesReference(t, rm, model, c.prompt, n, c.args, p, c.notGreedy) {
			equal++
		}
	}
	t.Logf("run's text equal to the reference's: %d of %d flag sets", equal, len(rows))
}

// runMatchesReference runs `bankml run model -p prompt -n n -t 1 -c 512 args...` and compares its text
// with the reference's: its chain for p over its own decode (reftest.Generate on a 512-token session).
// With notGreedy the reference's text must also differ from its plain greedy continuation (else the
// flags would be untested). It reports whether all holds, after an error naming args if not.
func runMatchesReference(t *testing.T, rm *reference.Model, model, prompt string, n int, args []string, p sample.Params, notGreedy bool) bool {
	t.Helper()
	toks, err := rm.Tokenize(prompt, true, true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rm.NewSession(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := reftest.Generate(rm, s, reftest.Turn{Prompt: toks, Sampling: p, NPredict: n})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := string(refText(t, rm, a.Tokens))
	code, out, stderr := runCLI(append([]string{"run", model, "-p", prompt, "-n", strconv.Itoa(n), "-t", "1", "-c", "512", "--no-display-prompt"}, args...)...)
	switch {
	case code != 0:
		t.Errorf("%q: exit %d: %s", args, code, stderr)
	case out != want+"\n":
		t.Errorf("%q:\n got %q\nwant %q (the reference's)", args, out, want+"\n")
	case notGreedy && want == string(refContinuation(t, rm, prompt, n)):
		t.Errorf("%q: the reference's text is the plain greedy one: the row tests nothing", args)
	default:
		t.Logf("%q: %q", args, out)
		return true
	}
	return false
}

// storiesWithKVs writes a copy of stories260K with extra metadata appended (same tensors) and returns its
// path.
func storiesWithKVs(t *testing.T, extra []gguf.KV) string {
	t.Helper()
	src, err := gguf.Open(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "stories-sampling.gguf")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := gguf.NewWriter(out, append(slices.Clone(src.KVs), extra...), src.Tensors)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Tensors {
		if err := w.WriteTensor(src.TensorData(&src.Tensors[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunTakesTheModelsSamplingDefaults (oracle) runs `bankml run` on a stories260K copy whose metadata
// sets general.sampling.* and compares its text with the reference chain's for the parameters llama-cli
// makes (common_init_sampler_from_model, common/common.cpp:1213, written out here): the model's values for
// what the command line did not set, the flags for what it did; --sampler-seq does not count as set, so the
// model's sequence wins over it (only --samplers marks it, arg.cpp:1982 against arg.cpp:1998). The model's
// temp is never used: run's --temp defaults to 0 (bankml's deliberate difference).
func TestRunTakesTheModelsSamplingDefaults(t *testing.T) {
	model := storiesWithKVs(t, []gguf.KV{
		{Key: "general.sampling.sequence", Value: gguf.StringValue("penalties;top_k;min_p;temperature")},
		{Key: "general.sampling.top_k", Value: gguf.Int32Value(5)},
		{Key: "general.sampling.min_p", Value: gguf.Float32Value(0.02)},
		{Key: "general.sampling.penalty_repeat", Value: gguf.Float32Value(1.5)},
		{Key: "general.sampling.penalty_last_n", Value: gguf.Int32Value(32)},
		{Key: "general.sampling.temp", Value: gguf.Float32Value(1.3)},
	})
	rm, err := reftest.Lib(t).LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	const prompt, n = "Once upon a time", 40
	modelDefaults := func(p *sample.Params) {
		p.Samplers = []sample.Type{sample.Penalties, sample.TopK, sample.MinP, sample.Temperature}
		p.TopK, p.MinP, p.PenaltyRepeat, p.PenaltyLastN = 5, 0.02, 1.5, 32
	}
	equal := 0
	rows := []struct {
		args      []string
		set       func(p *sample.Params) // after modelDefaults
		notGreedy bool
	}{
		{[]string{}, func(p *sample.Params) { p.Temp = 0 }, true}, // the model's repeat penalty at run's --temp 0
		{[]string{"--repeat-penalty", "1"}, func(p *sample.Params) { p.Temp, p.PenaltyRepeat = 0, 1 }, false},
		{[]string{"--temp", "0.9", "-s", "11"}, func(p *sample.Params) { p.Temp, p.Seed = 0.9, 11 }, false},
		{[]string{"--temp", "0.9", "-s", "11", "--top-k", "0", "--min-p", "0.3", "--repeat-last-n", "0"},
			func(p *sample.Params) { p.Temp, p.Seed, p.TopK, p.MinP, p.PenaltyLastN = 0.9, 11, 0, 0.3, 0 }, false},
		{[]string{"--temp", "0.9", "-s", "11", "--sampler-seq", "t"}, func(p *sample.Params) { p.Temp, p.Seed = 0.9, 11 }, false},
		{[]string{"--temp", "0.9", "-s", "11", "--samplers", "temperature"},
			func(p *sample.Params) { p.Temp, p.Seed, p.Samplers = 0.9, 11, []sample.Type{sample.Temperature} }, false},
	}
	for _, c := range rows {
		p := sample.DefaultParams()
		modelDefaults(&p)
		c.set(&p)
		if runMatchesReference(t, rm, model, prompt, n, c.args, p, c.notGreedy) {
			equal++
		}
	}
	t.Logf("run's text with the model's sampling defaults equal to the reference's: %d of %d flag sets", equal, len(rows))
}

// TestRunNamesTheRefusedModelDefault checks that a general.sampling.* value bankml refuses is named by its key
// when the command line does not set it, and by the flag when it does (the flag's value being refused).
func TestRunNamesTheRefusedModelDefault(t *testing.T) {
	model := storiesWithKVs(t, []gguf.KV{
		{Key: "general.sampling.penalty_repeat", Value: gguf.Float32Value(0)},
		{Key: "general.sampling.mirostat", Value: gguf.Int32Value(2)},
	})
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--mirostat", "0"}, 2, "run: the flags with the model's general.sampling.* defaults: the model's general.sampling.penalty_repeat: penalty_repeat must be finite and greater than 0, not 0 (invalid sampling parameter)"},
		{[]string{"--repeat-penalty", "1"}, 2, "the model's general.sampling.mirostat: mirostat 2 is not implemented"},
		{[]string{"--mirostat", "0", "--repeat-penalty", "-1"}, 1, "run: --repeat-penalty: penalty_repeat must be finite and greater than 0, not -1"},
		{[]string{"--mirostat", "0", "--repeat-penalty", "1"}, 0, "generated:"},
	} {
		code, _, stderr := runCLI(append([]string{"run", model, "-p", "Once upon a time", "-n", "2", "-t", "1", "-c", "256"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// TestRunGrammarErrorsNameTheirFlag: a grammar that does not parse is refused before generating, naming the flag
// that gave it (--grammar, or --grammar-file with its file) as -j's errors name -j, on a plain run and with --chat.
func TestRunGrammarErrorsNameTheirFlag(t *testing.T) {
	model := storiesPath(t)
	file := filepath.Join(t.TempDir(), "bad.gbnf")
	if err := os.WriteFile(file, []byte("root ::= foo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const parse = "error parsing grammar: Undefined rule identifier 'foo'"
	for _, c := range []struct {
		name string
		args []string
		want string // standard error's last line, whole
	}{
		{"--grammar on a plain run", []string{"--grammar", "root ::= foo", "-p", "Once"}, "bankml: run: --grammar: " + parse},
		{"--grammar with --chat", []string{"--grammar", "root ::= foo", "--chat", "-p", "Hi"}, "bankml: run: --grammar: " + parse},
		{"--grammar-file on a plain run", []string{"--grammar-file", file, "-p", "Once"}, "bankml: run: --grammar-file " + file + ": " + parse},
		{"--grammar-file with --chat", []string{"--grammar-file", file, "--chat", "-p", "Hi"}, "bankml: run: --grammar-file " + file + ": " + parse},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"run", model, "-n", "4"}, c.args...)...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if got := lines[len(lines)-1]; code != 1 || got != c.want || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr's last line\n%s\nwant exit 1, no output and\n%s", code, stdout, got, c.want)
			}
		})
	}
}
