package serve

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/sample"
)

// ModelDefaults are a stored model's Modelfile settings (package store's manifest), applied to the Ollama
// API as Ollama applies a model's (server/routes.go, v0.17.4): its PARAMETERs are the options a request's own
// "options" override one by one; its SYSTEM is the system message of a chat that has none and the system
// prompt of an /api/generate that gives none; its MESSAGEs go before the request's messages. The OpenAI routes
// (/v1/chat/completions, /v1/completions) take them as Ollama's, whose openai middleware turns such a request
// into an Ollama one (oaiModelSettings, oaiWithModelMessages); llama-server's own routes answer without them.
// bankml run NAME takes them the same way (RunSettings, Conversation), beneath its command line's flags.
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
	return conversation(d, msgs, func(m api.Message) string { return m.Role }, func(m api.Message) api.Message { return m })
}

// conversation is Conversation's rule over messages of any form: role reads a message's role, message makes one
// of the model's messages (its SYSTEM, its MESSAGEs) in that form. msgs is returned as it is when the model has
// neither.
func conversation[M any](d ModelDefaults, msgs []M, role func(M) string, message func(api.Message) M) []M {
	if d.System == "" && len(d.Messages) == 0 {
		return msgs
	}
	out := make([]M, 0, 1+len(d.Messages)+len(msgs))
	if d.System != "" && (len(msgs) == 0 || role(msgs[0]) != "system") {
		out = append(out, message(api.Message{Role: "system", Content: d.System}))
	}
	for _, m := range d.Messages {
		out = append(out, message(m))
	}
	return append(out, msgs...)
}

// oaiWithModelMessages is an OpenAI chat body whose "messages" the model's SYSTEM and MESSAGEs join as
// Conversation joins them (Ollama's openai middleware hands /v1/chat/completions to the ChatHandler that
// does it). A body without a "messages" array is returned as it is, for render to refuse in llama-server's
// words; so is every field but "messages".
func (s *Server) oaiWithModelMessages(body []byte) []byte {
	d := s.opt.Defaults
	if d.System == "" && len(d.Messages) == 0 {
		return body
	}
	var fields map[string]json.RawMessage
	var msgs []json.RawMessage
	if json.Unmarshal(body, &fields) != nil || json.Unmarshal(fields["messages"], &msgs) != nil || msgs == nil {
		return body
	}
	role := func(m json.RawMessage) string {
		var r struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(m, &r)
		return r.Role
	}
	message := func(m api.Message) json.RawMessage {
		b, _ := json.Marshal(struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{m.Role, m.Content})
		return b
	}
	joined, err := json.Marshal(conversation(d, msgs, role, message))
	if err != nil {
		return body
	}
	fields["messages"] = joined
	out, err := json.Marshal(fields)
	if err != nil {
		return body
	}
	return out
}

// oaiOwnOptions are the options Ollama's openai middleware (openai.FromChatRequest, FromCompleteRequest,
// v0.17.4) sets on every request it hands on, from the request or else its own default (temperature and top_p
// 1.0, /v1/completions' penalties 0): a Modelfile's value for them never reaches its /v1 routes (ollama#17744),
// and bankml's /v1 routes leave them to the request and the route's own defaults (llama-server's) as well.
var oaiOwnOptions = map[kind][]string{
	kindChat: {"temperature", "top_p"},
	kindText: {"temperature", "top_p", "frequency_penalty", "presence_penalty"},
}

// oaiModelSettings are the model's PARAMETERs as an OpenAI route of kind k takes them, beneath the request's own
// fields: read by the Ollama API's own parser (ollamaOptionsOver, then fitSettings) over the server's sampling
// parameters, less oaiOwnOptions. ok is false when the model gives none. An option the parser refuses (a
// manifest written by hand; bankml create checks them) is a 500 naming the model's PARAMETER.
func (s *Server) oaiModelSettings(k kind) (set ollamaSettings, ok bool, err error) {
	opts := s.opt.Defaults.requestOptions()
	for _, name := range oaiOwnOptions[k] {
		delete(opts, name)
	}
	if len(opts) == 0 {
		return ollamaSettings{}, false, nil
	}
	if set, err = ollamaOptionsOver(opts, s.base, s.base); err != nil {
		return set, false, &APIError{Type: TypeServer, Message: "the model's Modelfile PARAMETER: " + strings.TrimPrefix(optionMessage(err), "Field 'options.")}
	}
	set.NumCtxFromModel = set.NumCtx > 0
	s.fitSettings(&set)
	return set, true, nil
}

// fitSettings fits Ollama options to the server (ollamaAPI.settings and the OpenAI routes): a num_ctx past the
// slot context is cut to it (with a warning in the log, as Ollama clamps it to its runner's), and repeat_last_n
// -1 is the request's context (num_ctx when given, else the slot's, as Ollama's -1 = num_ctx).
func (s *Server) fitSettings(set *ollamaSettings) {
	if n := s.eng.NCtx(); set.NumCtx > n {
		// Ollama clamps a num_ctx past what its runner has to the runner's context (optionsForPrompt in
		// server/routes.go), and one past the model's training context when it loads the runner, with a
		// warning (llm/server.go: "requested context size too large for model"). bankml's slots keep the
		// context the server started with: the request gets it, and the log says so.
		s.log.Warn("ollama: requested context size too large for the server: using the slot's context", "num_ctx", set.NumCtx, "n_ctx_slot", n)
		set.NumCtx = n
	}
	if set.RepeatLastNCtx { // Ollama's repeat_last_n -1: num_ctx, the request's context
		set.Sampling.PenaltyLastN = int32(s.eng.NCtx())
		if set.NumCtx > 0 {
			set.Sampling.PenaltyLastN = int32(set.NumCtx)
		}
	}
}

// fitPrompt is the token budget of a request whose prompt has nPrompt tokens under num_ctx (when given):
// prompt and answer must fit in it, so nPredict (negative: no limit) is cut to what the prompt leaves, and a
// prompt that leaves nothing is an error naming num_ctx (numCtxWords).
func (s ollamaSettings) fitPrompt(nPrompt, nPredict int) (int, error) {
	n := s.NumCtx
	if n <= 0 {
		return nPredict, nil
	}
	if nPrompt >= n {
		return nPredict, fmt.Errorf("the prompt has %d tokens, which does not fit %s", nPrompt, s.numCtxWords())
	}
	if left := n - nPrompt; nPredict < 0 || nPredict > left {
		nPredict = left
	}
	return nPredict, nil
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
