package serve

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/sample"
)

// ollamaSettings is what an Ollama request's "options" object becomes: the
// sampling parameters, the token budget and the stop strings of one
// engine.Request, the context limit the request asked for, and the options
// given that bankml does not apply (for the server's log).
type ollamaSettings struct {
	Sampling    sample.Params
	NPredict    int      // llama-server's n_predict: -1 until EOG or the context is full
	HasNPredict bool     // num_predict was given (else the server's -n applies)
	Stop        []string // stop strings, cut exactly (engine.Request.Stop)
	NumCtx      int      // num_ctx: 0 when not given; else at least 4, prompt + answer must fit in it
	NumCtxGiven int      // num_ctx as the request gave it (its fraction dropped), for the errors that quote it
	// NumCtxFromModel: num_ctx is the model's Modelfile PARAMETER, not the request's option (numCtxWords).
	NumCtxFromModel bool
	// RepeatLastNCtx: repeat_last_n was -1, which Ollama defines as num_ctx (docs/modelfile.md's table:
	// "-1 = num_ctx"); Sampling.PenaltyLastN is 0 until ollamaAPI.settings sets it to the request's context.
	RepeatLastNCtx bool
	Ignored        []string // "name (why)" of every option given and not applied, in name order
}

// numCtxWords names the request's context for an error: the num_ctx the request gave and, when the server took
// another (raised to Ollama's smallest, cut to the slot's context), the one it took and why.
func (s ollamaSettings) numCtxWords() string {
	w := fmt.Sprintf("the request's num_ctx of %d", s.NumCtxGiven)
	if s.NumCtxFromModel {
		w = fmt.Sprintf("the model's num_ctx of %d (its Modelfile's PARAMETER)", s.NumCtxGiven)
	}
	switch {
	case s.NumCtx == s.NumCtxGiven:
	case s.NumCtxGiven < ollamaMinNumCtx:
		w += fmt.Sprintf(", raised to %d (Ollama's smallest context)", s.NumCtx)
	default:
		w += fmt.Sprintf(", cut to %d (the server's slot context)", s.NumCtx)
	}
	return w
}

// OptionError is the error for an Ollama option bankml refuses: the HTTP
// layer answers 400 with {"error": ...} (optionMessage: Ollama's own text
// when Ollama is set).
type OptionError struct {
	Option string // Ollama's name, e.g. "top_k"
	Reason string
	// Ollama is the whole message when it is Ollama's own (api.Options.FromMap's
	// refusal of a value of the wrong type, e.g. `option "top_k" must be of
	// type integer`), else "".
	Ollama string
}

func (e *OptionError) Error() string {
	if e.Ollama != "" {
		return e.Ollama
	}
	return fmt.Sprintf("option %q: %s", e.Option, e.Reason)
}

// ollamaDefaults are Ollama's defaults for the options it names
// (api.DefaultOptions in github.com/ollama/ollama/api v0.17.4): what an
// Ollama client gets when it sends no options. min_p is not set there, so
// it is 0 (off).
func ollamaDefaults(base sample.Params) sample.Params {
	p := base
	p.Samplers = slices.Clone(base.Samplers)
	p.DrySequenceBreakers = slices.Clone(base.DrySequenceBreakers)
	p.LogitBias = slices.Clone(base.LogitBias)
	p.Temp = 0.8
	p.TopK = 40
	p.TopP = 0.9
	p.MinP = 0
	p.TypicalP = 1
	p.PenaltyLastN = 64
	p.PenaltyRepeat = 1.1
	p.PenaltyPresent = 0
	p.PenaltyFreq = 0
	p.Seed = sample.DefaultSeed
	return p
}

// ollamaMinNumCtx is the smallest context Ollama's scheduler gives a runner:
// a smaller num_ctx is raised to it (server/sched.go:110, GetRunner).
const ollamaMinNumCtx = 4

// ollamaNotApplied are the options of Ollama's api.Options that bankml
// accepts, type-checked as Ollama checks them, without effect: Ollama
// applies them when it (re)loads the model (api.Runner) or only in its
// context shift (num_keep); bankml loads the model once, before the port
// opens, with the server's flags.
var ollamaNotApplied = map[string]string{
	"num_keep":   "only Ollama's context shift uses it; bankml does not shift",
	"num_batch":  "the batch size is the server's",
	"num_gpu":    "bankml runs on the CPU",
	"main_gpu":   "bankml runs on the CPU",
	"use_mmap":   "the model is loaded once, before the port opens",
	"num_thread": "the threads are the server's -t",
}

// ollamaOptionNames are the JSON names of Ollama's api.Options (with its
// embedded api.Runner), the names api.Options.FromMap knows: found as
// FromMap finds them, from the struct's json tags.
var ollamaOptionNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[api.Options]()) {
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" {
			names[tag] = true
		}
	}
	return names
})

// parseOllamaOptions maps an Ollama request's "options" (JSON-decoded: numbers
// are float64, arrays []any) onto base, the server's sampling parameters, as
// Ollama v0.17.4 reads them (api.Options.FromMap, api/types.go:960) and as
// docs/serve.md documents:
//
//   - a name api.Options does not have is ignored, as FromMap ignores it
//     (with its warning "invalid option provided": here an entry of Ignored,
//     which the server logs); so are mirostat, tfs_z, penalize_newline and the
//     other options older Ollama versions had;
//   - a value of the wrong type is refused with FromMap's own error (`option
//     "top_k" must be of type integer`); null is the same as absent;
//   - num_ctx, num_predict, temperature, top_k, top_p, min_p, typical_p,
//     repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty, seed
//     and stop set their llama.cpp counterparts; the ones not given take
//     Ollama's defaults (ollamaDefaults); the rest of base (llama-server's
//     order of samplers, DRY, XTC, top-n-σ, dynamic temperature: off unless
//     the model's metadata turns them on) is kept;
//   - the other options of api.Options (ollamaNotApplied) are type-checked
//     and listed in Ignored;
//   - an integer option's fraction is dropped (toward zero), as FromMap's
//     int64 conversion drops it; a number past the option's range is refused
//     (FromMap would wrap it), as is a float past the float32 range and an
//     empty stop string;
//   - num_ctx below 4 is 4 (Ollama's scheduler, server/sched.go:110), 0 and
//     negative ones too: Ollama's request options replace its default
//     context (server/routes.go:118, modelOptions), so 0 is not "the
//     default" there either;
//   - num_predict <= 0 is unlimited (Ollama's -1 and -2: until EOG or the
//     context is full);
//   - repeat_last_n -1 is num_ctx, as Ollama defines it (the request's context: num_ctx, else the slot's;
//     RepeatLastNCtx), below -1 is refused (Ollama defines no such value);
//   - seed is read as llama-server reads it, as a uint32 (-1: random).
//
// The result has been through sample.Params.ApplyServerLimits and Check.
// Errors: an *OptionError naming the first offending option (in name
// order), or a *sample.ParamError from the limits.
func parseOllamaOptions(opts map[string]any, base sample.Params) (ollamaSettings, error) {
	return ollamaOptionsOver(opts, ollamaDefaults(base), base)
}

// ollamaOptionsOver is parseOllamaOptions with start, not Ollama's defaults, as what an option not given keeps
// (ModelDefaults.RunSettings: a run's own parameters); base is still what the limits fall back to.
func ollamaOptionsOver(opts map[string]any, start, base sample.Params) (ollamaSettings, error) {
	s := ollamaSettings{Sampling: start, NPredict: -1}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	p := &s.Sampling
	known := ollamaOptionNames()
	for _, k := range keys {
		v := opts[k]
		if !known[k] {
			s.Ignored = append(s.Ignored, k+" (not an option of Ollama "+OllamaVersion+")")
			continue
		}
		if v == nil {
			continue
		}
		// Ollama's own type check, one option at a time so that the first
		// refused in name order is named.
		if err := new(api.Options).FromMap(map[string]any{k: v}); err != nil {
			return ollamaSettings{}, &OptionError{Option: k, Reason: err.Error(), Ollama: err.Error()}
		}
		var err error
		switch k {
		case "num_ctx":
			var n int64
			if n, err = optInt(k, v, math.MinInt32, math.MaxInt32); err == nil {
				s.NumCtx, s.NumCtxGiven = int(max(n, ollamaMinNumCtx)), int(n)
			}
		case "num_predict":
			var n int64
			if n, err = optInt(k, v, math.MinInt32, math.MaxInt32); err == nil {
				s.NPredict, s.HasNPredict = int(n), true
				if n <= 0 {
					s.NPredict = -1
				}
			}
		case "temperature":
			p.Temp, err = optFloat(k, v)
		case "top_k":
			var n int64
			if n, err = optInt(k, v, math.MinInt32, math.MaxInt32); err == nil {
				p.TopK = int32(n)
			}
		case "top_p":
			p.TopP, err = optFloat(k, v)
		case "min_p":
			p.MinP, err = optFloat(k, v)
		case "typical_p":
			p.TypicalP, err = optFloat(k, v)
		case "repeat_penalty":
			p.PenaltyRepeat, err = optFloat(k, v)
		case "repeat_last_n":
			var n int64
			if n, err = optInt(k, v, math.MinInt32, math.MaxInt32); err == nil {
				switch {
				case n == -1: // Ollama's num_ctx: the request's context, known to ollamaAPI.settings
					p.PenaltyLastN, s.RepeatLastNCtx = 0, true
				case n < -1: // Ollama defines 0 (off), -1 (num_ctx) and counts only
					err = &OptionError{Option: k, Reason: fmt.Sprintf("must be -1 (num_ctx), 0 (off) or a count of tokens, not %d", n)}
				default:
					p.PenaltyLastN = int32(n)
				}
			}
		case "presence_penalty":
			p.PenaltyPresent, err = optFloat(k, v)
		case "frequency_penalty":
			p.PenaltyFreq, err = optFloat(k, v)
		case "seed":
			var n int64
			if n, err = optInt(k, v, math.MinInt32, math.MaxUint32); err == nil {
				p.Seed = uint32(n)
			}
		case "stop":
			s.Stop, err = optStrings(k, v)
		default:
			why, ok := ollamaNotApplied[k]
			if !ok {
				why = "not applied by bankml"
			}
			s.Ignored = append(s.Ignored, k+" ("+why+")")
		}
		if err != nil {
			return ollamaSettings{}, err
		}
	}
	if err := p.ApplyServerLimits(base); err != nil {
		return ollamaSettings{}, err
	}
	if err := p.Check(); err != nil {
		return ollamaSettings{}, err
	}
	return s, nil
}

func optInt(k string, v any, lo, hi int64) (int64, error) {
	f, ok := v.(float64)
	if !ok {
		return 0, &OptionError{Option: k, Reason: fmt.Sprintf("must be an integer, not %s", valueKind(v))}
	}
	if t := math.Trunc(f); t < float64(lo) || t > float64(hi) {
		return 0, &OptionError{Option: k, Reason: fmt.Sprintf("must be an integer in [%d, %d], not %v", lo, hi, f)}
	}
	return int64(math.Trunc(f)), nil
}

func optFloat(k string, v any) (float32, error) {
	f, ok := v.(float64)
	if !ok {
		return 0, &OptionError{Option: k, Reason: fmt.Sprintf("must be a number, not %s", valueKind(v))}
	}
	if f32 := float32(f); !math.IsInf(float64(f32), 0) {
		return f32, nil
	}
	return 0, &OptionError{Option: k, Reason: fmt.Sprintf("%v is out of the float32 range", f)}
}

func optStrings(k string, v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, &OptionError{Option: k, Reason: fmt.Sprintf("must be an array of strings, not %s", valueKind(v))}
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, &OptionError{Option: k, Reason: fmt.Sprintf("element %d must be a string, not %s", i, valueKind(e))}
		}
		if s == "" {
			return nil, &OptionError{Option: k, Reason: fmt.Sprintf("element %d is empty", i)}
		}
		out = append(out, s)
	}
	return out, nil
}

// valueKind names the JSON type of a decoded value.
func valueKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*")
}
