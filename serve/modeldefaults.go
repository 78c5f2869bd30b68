package serve

import (
	"maps"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/sample"
)

// ModelDefaults are a stored model's Modelfile settings (package store's manifest), applied to the Ollama
// API as Ollama applies a model's (server/routes.go, v0.17.4): its PARAMETERs are the options a request's own
// "options" override one by one; its SYSTEM is the system message of a chat that has none and the system
// prompt of an /api/generate that gives none; its MESSAGEs go before the request's messages. The OpenAI and
// llama-server routes answer as llama-server does, without them. bankml run NAME takes them the same way
// (RunSettings, Conversation), beneath its command line's flags.
type ModelDefaults struct {
	Options  map[string]any // Ollama option names, typed as api.FormatParams types them
	System   string
	Messages []api.Message
}

// withDefaults is a request's options over the model's (the request's own win).
func (s *Server) withDefaults(opts map[string]any) map[string]any {
	if len(s.opt.Defaults.Options) == 0 {
		return opts
	}
	out := s.opt.Defaults.requestOptions()
	maps.Copy(out, opts)
	return out
}

// requestOptions are the model's PARAMETERs in the shapes a request's JSON-decoded options have (numbers
// float64, lists []any), which parseOllamaOptions reads.
func (d ModelDefaults) requestOptions() map[string]any {
	out := maps.Clone(d.Options)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range out {
		switch v := v.(type) {
		case int64:
			out[k] = float64(v)
		case float32:
			out[k] = float64(v)
		case []string:
			l := make([]any, len(v))
			for i, e := range v {
				l[i] = e
			}
			out[k] = l
		}
	}
	return out
}

// withModelMessages is a chat's messages after the model's MESSAGEs, with the model's SYSTEM first when the
// conversation does not start with a system message (Ollama's ChatHandler: ModelDefaults.Conversation).
func (s *Server) withModelMessages(msgs []api.Message) []api.Message {
	return s.opt.Defaults.Conversation(msgs)
}

// Conversation is a chat's messages as the model's settings make them, as Ollama's ChatHandler does: after the
// model's MESSAGEs, with its SYSTEM first when the conversation does not start with a system message of its own.
func (d ModelDefaults) Conversation(msgs []api.Message) []api.Message {
	if d.System == "" && len(d.Messages) == 0 {
		return msgs
	}
	out := append(append([]api.Message(nil), d.Messages...), msgs...)
	if d.System != "" && (len(msgs) == 0 || msgs[0].Role != "system") {
		out = append([]api.Message{{Role: "system", Content: d.System}}, out...)
	}
	return out
}

// RunSettings are a stored model's PARAMETERs as a command-line run of it takes them (bankml run NAME):
// read exactly as the Ollama API reads them beneath a request's options (the same names, types, checks and
// meanings: parseOllamaOptions), but over base, the run's own parameters, where a request's are over Ollama's
// defaults, so that an option the Modelfile does not give keeps the run's value. The run's command line then
// overrides them flag by flag, as Ollama's CLI options override a Modelfile's PARAMETERs.
type RunSettings struct {
	// Sampling is base with the model's sampling options set (temperature, top_k, top_p, min_p, typical_p,
	// repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty, seed), limited as a request's are.
	Sampling sample.Params
	// Given are the options the model gives (Ollama's names), the ones not applied included.
	Given map[string]bool
	// NPredict is num_predict when Given: -1 (to an end-of-generation token or a full context) for 0 or less.
	NPredict int
	// Stop are the stop strings (engine.Request.Stop).
	Stop []string
	// NumCtx is num_ctx when Given: the context a request may fill (prompt and answer), at least Ollama's
	// smallest, 4; a caller cuts it to its own context, as the server cuts it to the slot's.
	NumCtx int
	// RepeatLastNCtx: repeat_last_n was -1, Ollama's num_ctx: the caller sets Sampling.PenaltyLastN to its
	// context (NumCtx when given, else its own).
	RepeatLastNCtx bool
	// Ignored are "name (why)" of the options given and not applied (num_gpu, num_thread, ...).
	Ignored []string
}

// RunSettings maps d's PARAMETERs onto base (see the type). Errors: an *OptionError naming the first option
// refused (a manifest written by hand; bankml create checks them), or a *sample.ParamError from the limits.
func (d ModelDefaults) RunSettings(base sample.Params) (RunSettings, error) {
	s, err := ollamaOptionsOver(d.requestOptions(), base, base)
	if err != nil {
		return RunSettings{}, err
	}
	given := map[string]bool{}
	for k := range d.Options {
		given[k] = true
	}
	return RunSettings{Sampling: s.Sampling, Given: given, NPredict: s.NPredict, Stop: s.Stop, NumCtx: s.NumCtx,
		RepeatLastNCtx: s.RepeatLastNCtx, Ignored: s.Ignored}, nil
}
