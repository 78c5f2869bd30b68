package serve

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/bankml/bankml/sample"
)

// ollamaSettings is what an Ollama request's "options" object becomes: the
// sampling parameters, the token budget and the stop strings of one
// engine.Request, and the context limit the request asked for.
type ollamaSettings struct {
	Sampling sample.Params
	NPredict int      // llama-server's n_predict: -1 until EOG or the context is full
	Stop     []string // stop strings, cut exactly (engine.Request.Stop)
	NumCtx   int      // num_ctx: 0 when not given; else prompt + answer must fit in it
}

// OptionError is the error for an Ollama option bankml refuses: the HTTP
// layer answers 400 with {"error": Error()}.
type OptionError struct {
	Option string // Ollama's name, e.g. "mirostat"
	Reason string
}

func (e *OptionError) Error() string { return fmt.Sprintf("option %q: %s", e.Option, e.Reason) }

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

// The options of Ollama's api.Options (and of older Ollama versions) that
// bankml accepts without effect, with the reason given in docs/serve.md.
var ollamaIgnoredOptions = map[string]string{
	"num_keep":         "only used by Ollama's context shift, which bankml does not do",
	"num_gpu":          "bankml runs on the CPU",
	"main_gpu":         "bankml runs on the CPU",
	"use_mmap":         "the model is loaded once by bankml serve",
	"use_mlock":        "the model is loaded once by bankml serve",
	"numa":             "the model is loaded once by bankml serve",
	"low_vram":         "bankml runs on the CPU",
	"f16_kv":           "ignored by Ollama too",
	"vocab_only":       "the model is loaded once by bankml serve",
	"penalize_newline": "ignored by Ollama v0.17 and removed from llama.cpp",
	"mirostat_tau":     "tunes mirostat, which is off (mirostat 0 is all bankml accepts)",
	"mirostat_eta":     "tunes mirostat, which is off (mirostat 0 is all bankml accepts)",
}

// The options bankml refuses with a 400 naming them: they change the
// sampled tokens or the evaluation, and bankml cannot reproduce that
// exactly. An option with a neutral value accepts that value (it leaves the
// answer unchanged).
var ollamaRefusedOptions = map[string]struct {
	neutral    float64
	hasNeutral bool
	reason     string
}{
	"mirostat":             {0, true, "mirostat is not reproduced exactly by bankml; use 0"},
	"tfs_z":                {1, true, "tail-free sampling was removed from llama.cpp; use 1"},
	"num_batch":            {0, false, "the batch size is the server's: it changes the prompt's floating-point evaluation"},
	"num_thread":           {0, false, "the thread count is bankml serve's -t"},
	"rope_frequency_base":  {0, false, "RoPE settings come from the model file"},
	"rope_frequency_scale": {0, false, "RoPE settings come from the model file"},
	"num_gqa":              {0, false, "the attention shape comes from the model file"},
	"logits_all":           {0, false, "not supported"},
	"embedding_only":       {0, false, "not supported"},
}

// parseOllamaOptions maps an Ollama request's "options" (JSON-decoded: numbers
// are float64, arrays []any) onto base, the server's sampling parameters, as
// docs/serve.md documents:
//
//   - num_ctx, num_predict, temperature, top_k, top_p, min_p, typical_p,
//     repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty, seed
//     and stop set their llama.cpp counterparts; the ones not given take
//     Ollama's defaults (ollamaDefaults); the rest of base (llama-server's
//     order of samplers, DRY, XTC, top-n-σ, dynamic temperature: off unless
//     the model's metadata turns them on) is kept;
//   - num_predict <= 0 is unlimited (Ollama's -1 and -2: until EOG or the
//     context is full);
//   - seed is read as llama-server reads it, as a uint32 (-1: random);
//   - integers must be integral numbers in range, floats finite, stop an
//     array of strings; null is the same as absent;
//   - the options of ollamaIgnoredOptions are accepted without effect, those
//     of ollamaRefusedOptions refused unless neutral, every other name refused.
//
// The result has been through sample.Params.ApplyServerLimits and Check.
// Errors: an *OptionError naming the first offending option (in name
// order), or a *sample.ParamError from the limits.
func parseOllamaOptions(opts map[string]any, base sample.Params) (ollamaSettings, error) {
	s := ollamaSettings{Sampling: ollamaDefaults(base), NPredict: -1}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	p := &s.Sampling
	for _, k := range keys {
		v := opts[k]
		if v == nil {
			continue
		}
		var err error
		switch k {
		case "num_ctx":
			var n int64
			if n, err = optInt(k, v, 1, math.MaxInt32); err == nil {
				s.NumCtx = int(n)
			}
		case "num_predict":
			var n int64
			if n, err = optInt(k, v, math.MinInt32, math.MaxInt32); err == nil {
				s.NPredict = int(max(n, -1))
				if n == 0 {
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
				p.PenaltyLastN = int32(n)
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
			err = otherOption(k, v)
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

// otherOption decides an option that is not mapped: ignored, refused unless
// neutral, or unknown.
func otherOption(k string, v any) error {
	if _, ok := ollamaIgnoredOptions[k]; ok {
		return nil
	}
	if r, ok := ollamaRefusedOptions[k]; ok {
		if f, isNum := v.(float64); isNum && r.hasNeutral && f == r.neutral {
			return nil
		}
		return &OptionError{Option: k, Reason: r.reason}
	}
	return &OptionError{Option: k, Reason: "unknown option (bankml takes Ollama's option names; see docs/serve.md)"}
}

func optInt(k string, v any, lo, hi int64) (int64, error) {
	f, ok := v.(float64)
	if !ok {
		return 0, &OptionError{Option: k, Reason: fmt.Sprintf("must be an integer, not %s", valueKind(v))}
	}
	if f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, &OptionError{Option: k, Reason: fmt.Sprintf("must be an integer in [%d, %d], not %v", lo, hi, f)}
	}
	return int64(f), nil
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
