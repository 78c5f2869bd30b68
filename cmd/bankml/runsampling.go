package main

// bankml run's llama.cpp sampling flags beyond --temp, --top-k, --top-p, -s/--seed and --ignore-eos:
// common/arg.cpp's set_sampling flags (arg.cpp:1982–2308) that package sample's chain implements (the one
// bankml serve runs per request), with llama-cli's defaults (common_params_sampling's, sample.DefaultParams)
// and arg.cpp's value checks. Numbers are checked whole (kong's parsers), not as std::stof/stoi read a
// prefix: the deliberate difference of llamaflags.go. The grammar flags (--grammar, --grammar-file, -j,
// -jf) set the chain's grammar as arg.cpp:2265–2300 do; -bs stays refused (llamaRunSampling) here and in
// serve (sample.Params.Check).

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/grammar"
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/tokenizer"
)

// runSampling are run's sampling flags that map one to one onto sample.Params; nil (not given) keeps
// llama-cli's default. The help gives each default as common_params_sampling has it.
type runSampling struct {
	MinP             *float32   `name:"min-p" placeholder:"N" help:"min-p sampling, as llama-cli's --min-p (default 0.05, 0 = off)."`
	TopNSigma        *float32   `name:"top-nsigma" placeholder:"N" help:"top-n-sigma sampling, as llama-cli's --top-nsigma (default -1 = off)."`
	XTCProbability   *float32   `name:"xtc-probability" placeholder:"N" help:"XTC probability, as llama-cli's (default 0 = off)."`
	XTCThreshold     *float32   `name:"xtc-threshold" placeholder:"N" help:"XTC threshold, as llama-cli's (default 0.1; above 0.5 = off)."`
	TypicalP         *float32   `name:"typical" placeholder:"N" help:"Locally typical sampling, as llama-cli's --typical (default 1 = off)."`
	RepeatLastN      *int       `name:"repeat-last-n" placeholder:"N" help:"Last tokens penalised, as llama-cli's --repeat-last-n (default 64, 0 = off; negative refused, as arg.cpp)."`
	RepeatPenalty    *float32   `name:"repeat-penalty" placeholder:"N" help:"Repeat penalty, as llama-cli's --repeat-penalty (default 1 = off; must be finite and greater than 0)."`
	PresencePenalty  *float32   `name:"presence-penalty" placeholder:"N" help:"Presence penalty, as llama-cli's (default 0 = off; must be finite)."`
	FrequencyPenalty *float32   `name:"frequency-penalty" placeholder:"N" help:"Frequency penalty, as llama-cli's (default 0 = off; must be finite)."`
	DryMultiplier    *float32   `name:"dry-multiplier" placeholder:"N" help:"DRY multiplier, as llama-cli's (default 0 = off)."`
	DryBase          *float32   `name:"dry-base" placeholder:"N" help:"DRY base, as llama-cli's (default 1.75; a value below 1 is ignored with a warning, as llama.cpp ignores it)."`
	DryAllowedLength *int       `name:"dry-allowed-length" placeholder:"N" help:"DRY allowed length, as llama-cli's (default 2)."`
	DryPenaltyLastN  *int       `name:"dry-penalty-last-n" placeholder:"N" help:"DRY penalty over the last N tokens, as llama-cli's (default 64, 0 = off; negative refused, as arg.cpp)."`
	DryBreaker       stringList `name:"dry-sequence-breaker" placeholder:"STRING" help:"A DRY sequence breaker, as llama-cli's: the first one given replaces the defaults (\\n : \" *), each one adds, none clears them all."`
	DynatempRange    *float32   `name:"dynatemp-range" placeholder:"N" help:"Dynamic temperature range, as llama-cli's (default 0 = off)."`
	DynatempExp      *float32   `name:"dynatemp-exp" placeholder:"N" help:"Dynamic temperature exponent, as llama-cli's (default 1)."`
	Mirostat         *int       `name:"mirostat" placeholder:"N" help:"Mirostat, as llama-cli's (default 0 = off; 1 and 2 are refused: not implemented by bankml)."`
	MirostatLR       *float32   `name:"mirostat-lr" placeholder:"N" help:"Mirostat learning rate eta, as llama-cli's (default 0.1; used by mirostat only)."`
	MirostatEnt      *float32   `name:"mirostat-ent" placeholder:"N" help:"Mirostat target entropy tau, as llama-cli's (default 5; used by mirostat only)."`
	AdaptiveTarget   *float32   `name:"adaptive-target" placeholder:"N" help:"adaptive-p target, as llama-cli's (default -1; used by the adaptive_p sampler only, which bankml refuses)."`
	AdaptiveDecay    *float32   `name:"adaptive-decay" placeholder:"N" help:"adaptive-p decay, as llama-cli's (default 0.9; used by the adaptive_p sampler only)."`
	Samplers         *string    `name:"samplers" placeholder:"SAMPLERS" help:"Sampler order by names separated by ';', as llama-cli's --samplers (default penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature); an unknown name is skipped with a warning, as llama.cpp."`
	SamplerSeq       *string    `name:"sampler-seq" placeholder:"SEQUENCE" help:"Sampler order by letters, as llama-cli's --sampler-seq (default edskypmxt); an unknown letter is skipped with a warning, as llama.cpp."`
	Grammar          *string    `name:"grammar" placeholder:"GRAMMAR" help:"GBNF grammar the generated text must follow, as llama-cli's --grammar (see llama.cpp's grammars/)."`
	GrammarFile      *string    `name:"grammar-file" placeholder:"FNAME" help:"File to read the GBNF grammar from, as llama-cli's --grammar-file."`
	JSONSchema       *string    `name:"json-schema" placeholder:"SCHEMA" help:"JSON schema the generated text must follow, converted to GBNF as llama-cli's -j/--json-schema (e.g. {\"type\": \"object\"}); a pattern the converter cannot express is refused, where llama.cpp accepts any string there."`
	JSONSchemaFile   *string    `name:"json-schema-file" placeholder:"FILE" help:"File holding the JSON schema, as llama-cli's -jf/--json-schema-file."`
	LogitBias        stringList `name:"logit-bias" placeholder:"TOKEN_ID(+/-)BIAS" help:"Add BIAS to a token's logit, as llama-cli's -l/--logit-bias (15043+1, 15043-inf); each one adds."`
}

// stringList is a flag whose values add up in order, each one taken byte for byte and whatever it is (a
// value starting with "-" too, as arg.cpp takes it): --dry-sequence-breaker, -l/--logit-bias.
type stringList []string

// Decode implements kong.MapperValue.
func (l *stringList) Decode(ctx *kong.DecodeContext) error {
	v, err := popString(ctx, ctx.Value.Name)
	if err != nil {
		return err
	}
	*l = append(*l, v)
	return nil
}

// popString takes a flag's value whatever it is (a value starting with "-" too, as arg.cpp takes it).
func popString(ctx *kong.DecodeContext, flag string) (string, error) {
	t, err := ctx.Scan.PopValue(flag)
	if err != nil {
		return "", err
	}
	s, ok := t.Value.(string)
	if !ok {
		return "", fmt.Errorf("expected a string, got %v", t.Value)
	}
	return s, nil
}

// samplingParams is base with run's sampling flags set on it: --temp, --top-k, --top-p and -s/--seed when given
// (run's --temp default, 0, is in base: modelSampling), then the others (runSampling.apply, whose warnings go to
// w). Errors: a flag's value arg.cpp refuses, or one
// sample.Params.Check refuses, named by its flag, or by its general.sampling.* key in f (nil: none) when
// the flag was not given and the model sets it (nameParam).
func (r *runCmd) samplingParams(base sample.Params, w io.Writer, f *gguf.File) (sample.Params, error) {
	p := base
	if r.given["temp"] {
		p.Temp = r.Temp
	}
	if r.TopK != nil {
		if err := checkInt32("--top-k", *r.TopK); err != nil {
			return p, err
		}
		p.TopK = int32(*r.TopK)
	}
	if r.TopP != nil {
		p.TopP = *r.TopP
	}
	if r.Seed < -1 || r.Seed >= int64(sample.DefaultSeed) {
		return p, outOfRange("-s/--seed", r.Seed, -1, int64(sample.DefaultSeed)-1, "-1: a random seed")
	} else if r.Seed >= 0 {
		p.Seed = uint32(r.Seed)
	} else if r.given["seed"] { // -s -1 given: a random seed, over a Modelfile's seed too
		p.Seed = sample.DefaultSeed
	}
	if err := r.Sampling.apply(&p, w); err != nil {
		return p, err
	}
	return p, r.nameParam(p.Check(), f)
}

// runParams maps sample.ParamError's llama-server names to run's flags (arg.cpp's spellings) and, where
// common_init_sampler_from_model reads one, the model's general.sampling.* key; set reports whether the
// command line gave the flag.
var runParams = map[string]struct {
	flag, key string
	set       func(r *runCmd) bool
}{
	"temperature":           {"--temp", "", func(r *runCmd) bool { return r.given["temp"] }},
	"top_k":                 {"--top-k", "top_k", func(r *runCmd) bool { return r.TopK != nil }},
	"top_p":                 {"--top-p", "top_p", func(r *runCmd) bool { return r.TopP != nil }},
	"min_p":                 {"--min-p", "min_p", func(r *runCmd) bool { return r.Sampling.MinP != nil }},
	"top_n_sigma":           {"--top-nsigma", "", func(r *runCmd) bool { return r.Sampling.TopNSigma != nil }},
	"xtc_probability":       {"--xtc-probability", "xtc_probability", func(r *runCmd) bool { return r.Sampling.XTCProbability != nil }},
	"xtc_threshold":         {"--xtc-threshold", "xtc_threshold", func(r *runCmd) bool { return r.Sampling.XTCThreshold != nil }},
	"typical_p":             {"--typical", "", func(r *runCmd) bool { return r.Sampling.TypicalP != nil }},
	"repeat_last_n":         {"--repeat-last-n", "penalty_last_n", func(r *runCmd) bool { return r.Sampling.RepeatLastN != nil }},
	"repeat_penalty":        {"--repeat-penalty", "penalty_repeat", func(r *runCmd) bool { return r.Sampling.RepeatPenalty != nil }},
	"presence_penalty":      {"--presence-penalty", "", func(r *runCmd) bool { return r.Sampling.PresencePenalty != nil }},
	"frequency_penalty":     {"--frequency-penalty", "", func(r *runCmd) bool { return r.Sampling.FrequencyPenalty != nil }},
	"dry_multiplier":        {"--dry-multiplier", "", func(r *runCmd) bool { return r.Sampling.DryMultiplier != nil }},
	"dry_base":              {"--dry-base", "", func(r *runCmd) bool { return r.Sampling.DryBase != nil }},
	"dry_allowed_length":    {"--dry-allowed-length", "", func(r *runCmd) bool { return r.Sampling.DryAllowedLength != nil }},
	"dry_penalty_last_n":    {"--dry-penalty-last-n", "", func(r *runCmd) bool { return r.Sampling.DryPenaltyLastN != nil }},
	"dry_sequence_breakers": {"--dry-sequence-breaker", "", func(r *runCmd) bool { return len(r.Sampling.DryBreaker) > 0 }},
	"dynatemp_range":        {"--dynatemp-range", "", func(r *runCmd) bool { return r.Sampling.DynatempRange != nil }},
	"dynatemp_exponent":     {"--dynatemp-exp", "", func(r *runCmd) bool { return r.Sampling.DynatempExp != nil }},
	"mirostat":              {"--mirostat", "mirostat", func(r *runCmd) bool { return r.Sampling.Mirostat != nil }},
	"mirostat_tau":          {"--mirostat-ent", "mirostat_tau", func(r *runCmd) bool { return r.Sampling.MirostatEnt != nil }},
	"mirostat_eta":          {"--mirostat-lr", "mirostat_eta", func(r *runCmd) bool { return r.Sampling.MirostatLR != nil }},
	"adaptive_target":       {"--adaptive-target", "", func(r *runCmd) bool { return r.Sampling.AdaptiveTarget != nil }},
	"adaptive_decay":        {"--adaptive-decay", "", func(r *runCmd) bool { return r.Sampling.AdaptiveDecay != nil }},
	"samplers":              {"--samplers/--sampler-seq", "sequence", func(r *runCmd) bool { return r.Sampling.Samplers != nil || r.Sampling.SamplerSeq != nil }},
	"logit_bias":            {"-l/--logit-bias", "", func(r *runCmd) bool { return len(r.Sampling.LogitBias) > 0 }},
}

// nameParam rewrites a *sample.ParamError from sample.Params.Check so that it names what the user gave: the
// flag ("--min-p: NaN is not a finite number (invalid sampling parameter)"), or, when the flag was not
// given and f sets the parameter's general.sampling.* key, that key. Other errors are returned as they are.
func (r *runCmd) nameParam(err error, f *gguf.File) error {
	var pe *sample.ParamError
	if !errors.As(err, &pe) {
		return err
	}
	rp, ok := runParams[pe.Param]
	if !ok {
		return err
	}
	name := rp.flag
	if f != nil && rp.key != "" && !rp.set(r) {
		if _, ok := f.Get("general.sampling." + rp.key); ok {
			name = "the model's general.sampling." + rp.key
		}
	}
	return fmt.Errorf("%s: %s (%w)", name, pe.Reason, pe.Err)
}

// modelSampling is the sampling parameters of a run of the model in f, as llama-cli's
// common_init_from_params makes them (common_init_sampler_from_model, common/common.cpp:1213): llama-cli's
// defaults, then the model's general.sampling.* values (sample.ApplyModelDefaults) for each one the command
// line did not set, then, for a stored model (ref its NAME:TAG), its Modelfile's PARAMETERs (d) as serve's
// Ollama API reads them (serve.ModelDefaults.RunSettings, returned for the run's other settings), then the flags
// given. As in arg.cpp, --sampler-seq does not count as setting the sampler order (only --samplers does): a
// general.sampling.sequence wins over it. The model's general.sampling.temp is not used: run's --temp defaults
// to 0. An unknown sampler name in the model is skipped with a warning to stderr, as llama.cpp skips it.
// Errors: a model default bankml refuses (mirostat 1 or 2, the adaptive_p stage), or a PARAMETER serve would
// refuse, as a model that cannot be run (exit 2).
func (r *runCmd) modelSampling(f *gguf.File, d serve.ModelDefaults, ref string, stderr io.Writer) (sample.Params, serve.RunSettings, error) {
	md := sample.DefaultParams()
	for _, u := range sample.ApplyModelDefaults(&md, f) {
		fmt.Fprintf(stderr, "bankml: run: %s: unable to match sampler by name '%s': skipped, as llama.cpp skips it\n", sample.KeySamplingSequence, strings.ToLower(u))
	}
	md.Temp = r.Temp // run's --temp, its default 0 unless the Modelfile or the flag sets one
	ms := serve.RunSettings{Sampling: md}
	if len(d.Options) > 0 {
		var err error
		if ms, err = d.RunSettings(md); err != nil {
			return md, ms, cannotRun(fmt.Errorf("run: %s's PARAMETERs: %w", ref, err))
		}
	}
	p, err := r.samplingParams(ms.Sampling, io.Discard, f) // the flags' warnings were written by Run's first pass
	if err == nil && r.Sampling.Samplers == nil && r.Sampling.SamplerSeq != nil && modelSequence(f) {
		p.Samplers = md.Samplers
		err = r.nameParam(p.Check(), f)
	}
	if err != nil {
		return p, ms, cannotRun(fmt.Errorf("run: the flags with the model's general.sampling.* defaults: %w", err))
	}
	return p, ms, nil
}

// modelSequence reports whether f sets general.sampling.sequence as llama.cpp reads it (a value whose
// string form is not empty: llama_model_meta_val_str > 0), as sample.ApplyModelDefaults takes it.
func modelSequence(f *gguf.File) bool {
	v, ok := f.Get(sample.KeySamplingSequence)
	if !ok {
		return false
	}
	s, ok := sample.MetaString(v)
	return ok && s != ""
}

// apply sets the given flags on p as arg.cpp's handlers set common_params_sampling (arg.cpp:1982–2308),
// writing llama.cpp's warnings (an unknown sampler name or letter, an ignored --dry-base) to w as
// "bankml: ..." lines. Errors name the flag: a value arg.cpp refuses (negative --repeat-last-n or
// --dry-penalty-last-n, a --logit-bias not TOKEN_ID(+/-)BIAS), --samplers with --sampler-seq (llama.cpp
// takes the later one; bankml asks for one); p.Check's refusals are left to the caller.
func (s *runSampling) apply(p *sample.Params, w io.Writer) error {
	set := func(dst *float32, v *float32) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.MinP, s.MinP)
	set(&p.TopNSigma, s.TopNSigma)
	set(&p.XTCProbability, s.XTCProbability)
	set(&p.XTCThreshold, s.XTCThreshold)
	set(&p.TypicalP, s.TypicalP)
	set(&p.PenaltyRepeat, s.RepeatPenalty)
	set(&p.PenaltyPresent, s.PresencePenalty)
	set(&p.PenaltyFreq, s.FrequencyPenalty)
	set(&p.DryMultiplier, s.DryMultiplier)
	set(&p.DynatempRange, s.DynatempRange)
	set(&p.DynatempExponent, s.DynatempExp)
	set(&p.MirostatEta, s.MirostatLR)
	set(&p.MirostatTau, s.MirostatEnt)
	set(&p.AdaptiveTarget, s.AdaptiveTarget)
	set(&p.AdaptiveDecay, s.AdaptiveDecay)
	ints := []struct {
		flag     string
		v        *int
		dst      *int32
		negative bool // arg.cpp refuses a negative value
	}{
		{"--repeat-last-n", s.RepeatLastN, &p.PenaltyLastN, true},                // arg.cpp:2075
		{"--dry-allowed-length", s.DryAllowedLength, &p.DryAllowedLength, false}, // arg.cpp:2141
		{"--dry-penalty-last-n", s.DryPenaltyLastN, &p.DryPenaltyLastN, true},    // arg.cpp:2148
		{"--mirostat", s.Mirostat, &p.Mirostat, false},                           // arg.cpp:2218
	}
	for _, f := range ints {
		if f.v == nil {
			continue
		}
		if err := checkInt32(f.flag, *f.v); err != nil {
			return err
		}
		if f.negative && *f.v < 0 {
			return outOfRange(f.flag, *f.v, 0, math.MaxInt32, "llama.cpp refuses a negative "+strings.TrimPrefix(f.flag, "--"))
		}
		*f.dst = int32(*f.v)
	}
	if s.DryBase != nil { // arg.cpp:2130 keeps the default for a base below 1
		if *s.DryBase >= 1 {
			p.DryBase = *s.DryBase
		} else if _, err := fmt.Fprintf(w, "bankml: --dry-base %v ignored: %s, as llama.cpp ignores it (the base stays %v)\n", *s.DryBase, belowOne(*s.DryBase), p.DryBase); err != nil {
			return err
		}
	}
	if len(s.DryBreaker) > 0 { // arg.cpp:2158: the first clears the defaults, "none" clears all
		p.DrySequenceBreakers = []string{}
		for _, b := range s.DryBreaker {
			if b == "none" {
				p.DrySequenceBreakers = p.DrySequenceBreakers[:0]
			} else {
				p.DrySequenceBreakers = append(p.DrySequenceBreakers, b)
			}
		}
	}
	if s.Samplers != nil && s.SamplerSeq != nil {
		return errors.New("--samplers and --sampler-seq both set the sampler order: give one")
	}
	var unknown []string
	if s.Samplers != nil { // arg.cpp:1982: names split at ';'
		p.Samplers, unknown = sample.ParseSamplerNames(strings.Split(*s.Samplers, ";"))
		for i, u := range unknown {
			unknown[i] = "--samplers: unable to match sampler by name '" + strings.ToLower(u) + "': skipped, as llama.cpp skips it"
		}
	}
	if s.SamplerSeq != nil { // arg.cpp:1998
		var bad []byte
		p.Samplers, bad = sample.ParseSamplerChars(*s.SamplerSeq)
		for _, c := range bad {
			unknown = append(unknown, fmt.Sprintf("--sampler-seq: unable to match sampler by char '%c': skipped, as llama.cpp skips it", c))
		}
	}
	for _, u := range unknown {
		if _, err := fmt.Fprintln(w, "bankml: "+u); err != nil {
			return err
		}
	}
	if err := s.grammar(p); err != nil {
		return err
	}
	for _, v := range s.LogitBias {
		lb, err := parseLogitBias(v)
		if err != nil {
			return fmt.Errorf("-l/--logit-bias %q: %w", v, err)
		}
		p.LogitBias = append(p.LogitBias, lb)
	}
	return nil
}

// grammar sets p.Grammar from --grammar, --grammar-file, -j or -jf as arg.cpp:2265–2300 do (a user grammar,
// or the GBNF of a JSON schema by json_schema_to_grammar: grammar.FromJSONSchemaWarn). Where arg.cpp lets
// the last of the four win, bankml refuses more than one (kong does not keep their order); a schema with a
// pattern the converter cannot express is refused (llama.cpp warns and accepts any string there), as serve
// refuses it. The grammar's own syntax is checked when the chain is built (sample.New).
func (s *runSampling) grammar(p *sample.Params) error {
	var given []string
	for _, g := range []struct {
		flag string
		v    *string
	}{{"--grammar", s.Grammar}, {"--grammar-file", s.GrammarFile}, {"-j/--json-schema", s.JSONSchema}, {"-jf/--json-schema-file", s.JSONSchemaFile}} {
		if g.v != nil {
			given = append(given, g.flag)
		}
	}
	if len(given) > 1 {
		return fmt.Errorf("%s each set the grammar: give one", strings.Join(given, ", "))
	}
	read := func(flag, path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		return b, nil
	}
	schema := func(flag string, b []byte) error {
		var warnings []string
		g, err := grammar.FromJSONSchemaWarn(b, &warnings)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		if len(warnings) > 0 {
			return fmt.Errorf("%s: %s: bankml refuses a schema it cannot enforce (llama.cpp generates without it)", flag, strings.Join(warnings, "; "))
		}
		// A constraint no value meets (minimum above maximum, …) is refused before generation, as serve does.
		if doc, err := grammar.ParseSchema(b); err == nil {
			if err := doc.Satisfiable(); err != nil {
				return fmt.Errorf("%s: %w", flag, err)
			}
		}
		p.Grammar, p.GrammarType = g, sample.GrammarOutputFormat
		return nil
	}
	switch {
	case s.Grammar != nil:
		p.Grammar, p.GrammarType = *s.Grammar, sample.GrammarUser
	case s.GrammarFile != nil:
		b, err := read("--grammar-file", *s.GrammarFile)
		if err != nil {
			return err
		}
		p.Grammar, p.GrammarType = string(b), sample.GrammarUser
	case s.JSONSchema != nil:
		return schema("-j/--json-schema", []byte(*s.JSONSchema))
	case s.JSONSchemaFile != nil:
		b, err := read("-jf/--json-schema-file", *s.JSONSchemaFile)
		if err != nil {
			return err
		}
		return schema("-jf/--json-schema-file", b)
	}
	return nil
}

// checkGrammar parses g, the chain's grammar (p.Grammar after apply), against the model's vocabulary, before
// anything is generated (as common_sampler_init fails before llama-cli generates): an error names the flag that
// gave the grammar (--grammar, --grammar-file FILE, -j or -jf FILE), as the flags' other errors do.
func (s *runSampling) checkGrammar(g string, tok tokenizer.Tokenizer) error {
	if g == "" {
		return nil
	}
	if _, err := grammar.Parse(g, tok); err != nil {
		return fmt.Errorf("%s: %w", s.grammarFlag(), err)
	}
	return nil
}

// grammarFlag names the flag that set the grammar as its errors name it (grammar gives at most one).
func (s *runSampling) grammarFlag() string {
	switch {
	case s.GrammarFile != nil:
		return "--grammar-file " + *s.GrammarFile
	case s.JSONSchema != nil:
		return "-j/--json-schema"
	case s.JSONSchemaFile != nil:
		return "-jf/--json-schema-file " + *s.JSONSchemaFile
	}
	return "--grammar"
}

// belowOne says why arg.cpp's "base >= 1" test fails for v: below 1, or not a number.
func belowOne(v float32) string {
	if v != v {
		return "not a number"
	}
	return "below 1"
}

// parseLogitBias reads -l/--logit-bias TOKEN_ID(+/-)BIAS as arg.cpp:2243 does (a token id, a sign, a float
// that the sign multiplies: 15043+1, 15043-1, 15043-inf), but whole: no white space or trailing text.
func parseLogitBias(v string) (sample.LogitBias, error) {
	i := 0
	if i < len(v) && (v[i] == '+' || v[i] == '-') {
		i++ // the id's own sign, as operator>> reads it
	}
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	id, err := strconv.ParseInt(v[:i], 10, 32)
	if err != nil || i == len(v) || v[i] != '+' && v[i] != '-' {
		return sample.LogitBias{}, errors.New("invalid input format: llama.cpp takes TOKEN_ID+BIAS or TOKEN_ID-BIAS")
	}
	bias, err := strconv.ParseFloat(v[i+1:], 32)
	if err != nil {
		return sample.LogitBias{}, fmt.Errorf("invalid input format: the bias %q is not a number", v[i+1:])
	}
	if v[i] == '-' {
		bias = -bias
	}
	return sample.LogitBias{Token: int32(id), Bias: float32(bias)}, nil
}

// drawsAtRandom reports whether the chain for p draws at random, so that run prints the draw's seed as
// llama-cli prints its sampler seed (tools/completion/completion.cpp:452): with temp > 0; with a
// temperature stage whose --dynatemp-range is above 0 (llama_sampler_temp_ext_apply,
// src/llama-sampler.cpp:2135, samples over [max(0, temp-range), temp+range]); with an active XTC stage
// before the temperature stage (llama_sampler_xtc_apply's draw); with no temperature stage (the final
// dist stage draws from the whole distribution). A stage after a temperature stage at temp <= 0 sees one
// finite logit and cannot change the choice.
func drawsAtRandom(p sample.Params) bool {
	if p.Temp > 0 {
		return true
	}
	for _, t := range p.Samplers {
		switch t {
		case sample.Temperature:
			return p.DynatempRange > 0
		case sample.XTC:
			if p.XTCProbability > 0 && p.XTCThreshold <= 0.5 {
				return true
			}
		}
	}
	return true
}
