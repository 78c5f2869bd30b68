package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/sample"
)

// samplingFields decodes a request's sampling fields under llama-server's names (server-schema.cpp) over a
// copy of the server's base parameters: sample.Params carries the JSON names; the fields below shadow those
// that need more than a plain decode.
type samplingFields struct {
	sample.Params
	Seed                *int64          `json:"seed"`
	DrySequenceBreakers json.RawMessage `json:"dry_sequence_breakers"`
	Samplers            json.RawMessage `json:"samplers"`
	LogitBias           json.RawMessage `json:"logit_bias"`
	NProbs              *int32          `json:"n_probs"`
}

// commonFields are the non-sampling fields the OpenAI routes read (llama-server's names and aliases).
type commonFields struct {
	Stream        *bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage *bool `json:"include_usage"`
	} `json:"stream_options"`
	NPredict            *int64          `json:"n_predict"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	MaxTokens           *int64          `json:"max_tokens"`
	NCmpl               *int64          `json:"n_cmpl"`
	N                   *int64          `json:"n"`
	Stop                json.RawMessage `json:"stop"`
	CachePrompt         *bool           `json:"cache_prompt"`
	IDSlot              *int64          `json:"id_slot"`
	IgnoreEOS           *bool           `json:"ignore_eos"`
	PostSamplingProbs   *bool           `json:"post_sampling_probs"`
}

// present reports whether a raw field was given with a value other than null (llama-server's has_value).
func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// baseParams are the sampling defaults every request starts from: common_params_sampling's, then the
// model's general.sampling.* metadata (sample.ApplyModelDefaults), as llama-server loads them.
func baseParams(m *admit.Model) sample.Params {
	p := sample.DefaultParams()
	sample.ApplyModelDefaults(&p, m.File)
	return p
}

// decodeSampling reads the sampling fields of body over the server's base parameters, applies llama-server's
// limits (sample.Params.ApplyServerLimits) and bankml's refusals (sample.Params.Check). Every error is a 400
// naming the field ("Field 'top_k': ..." as llama-server words a bad value). nProbs is the n_probs the
// route computed (logprobs/top_logprobs), or nil to take the body's n_probs.
func (s *Server) decodeSampling(body []byte, nProbs *int32) (sample.Params, error) {
	return s.decodeSamplingOver(s.base, body, nProbs)
}

// decodeSamplingOver is decodeSampling over start, not the server's base parameters, as what a field not given
// keeps (the OpenAI routes: a stored model's PARAMETERs, oaiModelSettings); the limits still fall back to base.
func (s *Server) decodeSamplingOver(start sample.Params, body []byte, nProbs *int32) (sample.Params, error) {
	f := samplingFields{Params: start}
	f.Params.Samplers = append([]sample.Type(nil), start.Samplers...)
	f.Params.DrySequenceBreakers = append([]string(nil), start.DrySequenceBreakers...)
	if err := json.Unmarshal(body, &f); err != nil {
		return sample.Params{}, jsonError(body, err)
	}
	p := f.Params
	if f.Seed != nil {
		if *f.Seed < math.MinInt32 || *f.Seed > math.MaxUint32 {
			return p, badRequest("Field 'seed': %d is not a 32-bit seed (-1 for a random one)", *f.Seed)
		}
		p.Seed = uint32(*f.Seed) // -1 is sample.DefaultSeed, as llama-server's uint32 read gives it
	}
	if present(f.DrySequenceBreakers) {
		var b []string
		if err := json.Unmarshal(f.DrySequenceBreakers, &b); err != nil || len(b) == 0 {
			return p, badRequest("Field 'dry_sequence_breakers': Error: dry_sequence_breakers must be a non-empty array of strings")
		}
		p.DrySequenceBreakers = b
	}
	if present(f.Samplers) {
		var names []string
		var chars string
		// llama-server (server-schema.cpp's "samplers" field) skips an unknown name or character with a
		// warning: common_sampler_types_from_names (common/sampling.cpp:885) and _from_chars (:914).
		switch {
		case json.Unmarshal(f.Samplers, &names) == nil:
			var unknown []string
			p.Samplers, unknown = sample.ParseSamplerNames(names)
			for _, u := range unknown {
				s.log.Warn("samplers: unable to match sampler by name: skipped, as llama-server skips it", "name", strings.ToLower(u))
			}
		case json.Unmarshal(f.Samplers, &chars) == nil:
			var bad []byte
			p.Samplers, bad = sample.ParseSamplerChars(chars)
			for _, c := range bad {
				s.log.Warn("samplers: unable to match sampler by char: skipped, as llama-server skips it", "char", string(c))
			}
		default:
			return p, badRequest("Field 'samplers': expected an array of sampler names or a string of sampler characters")
		}
	}
	if present(f.LogitBias) {
		lb, err := s.logitBias(f.LogitBias)
		if err != nil {
			return p, err
		}
		p.LogitBias = lb
	}
	switch {
	case nProbs != nil:
		p.NProbs = *nProbs
	case f.NProbs != nil:
		p.NProbs = *f.NProbs
	}
	if err := p.ApplyServerLimits(s.base); err != nil {
		return p, paramError(err)
	}
	if err := p.Check(); err != nil {
		return p, paramError(err)
	}
	return p, nil
}

// paramError turns a sample error into a 400 naming the parameter.
func paramError(err error) *APIError {
	var pe *sample.ParamError
	if errors.As(err, &pe) {
		if errors.Is(pe, sample.ErrUnsupported) {
			return badRequest("Field '%s': %s: not reproduced exactly by bankml, refused rather than approximated", pe.Param, pe.Reason)
		}
		return badRequest("Field '%s': %s", pe.Param, pe.Reason)
	}
	return badRequest("%v", err)
}

// logitBias reads llama-server's logit_bias (server-schema.cpp): [[token, bias], ...] or {"token": bias},
// where a token is an id or a string (every token of its tokenization gets the bias) and a bias is a number
// or false (-Inf, a ban). Entries of another shape and ids outside the vocabulary are skipped, as there. A
// bias past a 32-bit float's range (1e39) is a 400 "out of range", as for every float field (llama-server's
// get<float>() would make it ±Inf).
func (s *Server) logitBias(raw json.RawMessage) ([]sample.LogitBias, error) {
	nVocab := s.m.Tokenizer.NVocab()
	var tooBig error // a bias past a 32-bit float's range, refused as the float fields refuse one
	parseBias := func(v json.RawMessage) (float32, bool) {
		var n json.Number
		if v = bytes.TrimSpace(v); len(v) > 0 && v[0] != '"' && json.Unmarshal(v, &n) == nil { // a JSON number, not a string
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || math.IsInf(float64(float32(f)), 0) {
				if tooBig == nil {
					tooBig = badRequest("Field 'logit_bias': number %s is out of range for %s", n, jsonRange("float32"))
				}
				return 0, false
			}
			return float32(f), true
		}
		var b bool
		if json.Unmarshal(v, &b) == nil && !b {
			return float32(math.Inf(-1)), true
		}
		return 0, false
	}
	var out []sample.LogitBias
	addText := func(text string, bias float32) {
		for _, t := range s.m.Tokenizer.Tokenize(text, false, false) {
			out = append(out, sample.LogitBias{Token: t, Bias: bias})
		}
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		for _, el := range arr {
			var pair []json.RawMessage
			if json.Unmarshal(el, &pair) != nil || len(pair) != 2 {
				continue
			}
			bias, ok := parseBias(pair[1])
			if !ok {
				continue
			}
			var id int64
			var text string
			if json.Unmarshal(pair[0], &id) == nil {
				if id >= 0 && id < int64(nVocab) {
					out = append(out, sample.LogitBias{Token: int32(id), Bias: bias})
				}
			} else if json.Unmarshal(pair[0], &text) == nil {
				addText(text, bias)
			}
		}
		if tooBig != nil {
			return nil, tooBig
		}
		return out, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, badRequest("Field 'logit_bias': expected an array of [token, bias] pairs or an object of token: bias")
	}
	// Go maps have no order; llama-server walks the object in key order (nlohmann's std::map), so do we.
	keys := slices.Sorted(maps.Keys(obj))
	for _, k := range keys {
		bias, ok := parseBias(obj[k])
		if !ok {
			continue
		}
		if id, err := strconv.ParseInt(k, 10, 32); err == nil {
			if id >= 0 && id < int64(nVocab) {
				out = append(out, sample.LogitBias{Token: int32(id), Bias: bias})
			}
			continue
		}
		addText(k, bias)
	}
	if tooBig != nil {
		return nil, tooBig
	}
	return out, nil
}

// nPredict is the request's own token count and the field it came from: n_predict, else
// max_completion_tokens, else max_tokens; nil when none is given.
func (c *commonFields) nPredict() (string, *int64) {
	switch {
	case c.NPredict != nil:
		return "n_predict", c.NPredict
	case c.MaxCompletionTokens != nil:
		return "max_completion_tokens", c.MaxCompletionTokens
	}
	return "max_tokens", c.MaxTokens
}

// slotLimit is the engine's NPredict for a slot limit n_predict_max: below -1 (the server's -n -2 or lower)
// has_budget is false from the first token on (server-context.cpp:459–463), as for 0, so one token is
// sampled and the limit stops the answer (server-context.cpp:1896): engine's NPredict 0.
func slotLimit(n int) int {
	if n < -1 {
		return 0
	}
	return n
}

// decodeCommon reads the fields every generating OpenAI route shares into an engine.Request (without its
// prompt and sampling) and the stream settings. n_predict (or max_completion_tokens, max_tokens) absent or
// -1 is the server's -n (Options.NPredict), as llama-server's task params start from params_base.n_predict
// (server-schema.cpp:530) and its slot takes params_base.n_predict for -1 (server-context.cpp:1818). Refusals: n other than 1,
// an n_predict outside [-1, 2^31), a stop that is not a string or an array of strings. The constraint
// fields (tools, response_format, json_schema, grammar, ...) are read per route (constraints.go).
func (s *Server) decodeCommon(body []byte) (engine.Request, commonFields, error) {
	var c commonFields
	if err := decodeJSON(body, &c); err != nil {
		return engine.Request{}, c, err
	}
	req := engine.Request{NPredict: s.nPredict, CachePrompt: true, Slot: -1}
	n := c.NCmpl
	if n == nil {
		n = c.N
	}
	if n != nil && *n != 1 {
		return req, c, badRequest("Field 'n': %d completions asked: bankml serve answers n = 1 only", *n)
	}
	if name, v := c.nPredict(); v != nil {
		if *v < -1 || *v > math.MaxInt32 {
			return req, c, badRequest("Field '%s': Value must be between -1 <= value <= %d, but got %d", name, math.MaxInt32, *v)
		}
		req.NPredict = int(*v)
	}
	if req.NPredict == -1 { // the per-request limit, unless -1, takes priority over the server's -n
		req.NPredict = s.nPredict
	}
	req.NPredict = slotLimit(req.NPredict)
	if present(c.Stop) {
		var one string
		var many []string
		switch {
		case json.Unmarshal(c.Stop, &one) == nil:
			many = []string{one}
		case json.Unmarshal(c.Stop, &many) == nil:
		default:
			return req, c, badRequest("Field 'stop': expected a string or an array of strings")
		}
		for i, w := range many {
			if w == "" {
				return req, c, badRequest("Field 'stop': stop[%d] is empty", i)
			}
		}
		req.Stop = many
	}
	if c.CachePrompt != nil {
		req.CachePrompt = *c.CachePrompt
	}
	if c.IDSlot != nil && int32(*c.IDSlot) != -1 {
		// get_available_slot: -1 takes any slot; any other id is get_slot_by_id's (slotByID), task.id_slot
		// an int as json_value reads it.
		req.Slot = slotByID(int32(*c.IDSlot), s.opt.Parallel)
	}
	req.IgnoreEOS = deref(c.IgnoreEOS, false)
	req.PostSamplingProbs = deref(c.PostSamplingProbs, false)
	return req, c, nil
}

// generationError maps package engine's errors to the answer: a prompt past the context is llama-server's
// 400 exceed_context_size_error body, a full queue a 429, a sampler refusal a 400 naming the parameter,
// a client that went away or a shutdown a 503 (nobody reads it), anything else a 500. The Ollama routes
// use it too (Status and Message for their {"error": "..."} body).
func (s *Server) generationError(err error) *APIError {
	var ce *engine.ContextError
	var pe *sample.ParamError
	switch {
	case errors.As(err, &ce):
		s.metrics.refusedFor("context")
		return &APIError{Type: TypeExceedContext, Message: ce.Error(), NPromptTokens: ce.NPromptTokens, NCtx: ce.NCtx}
	case errors.Is(err, engine.ErrQueueFull):
		s.metrics.refusedFor("queue_full")
		return &APIError{Status: 429, Type: TypeUnavailable,
			Message: fmt.Sprintf("the server is busy: %d requests already wait for a slot; retry later", s.opt.QueueSize)}
	case errors.As(err, &pe):
		s.metrics.refusedFor("invalid")
		return paramError(err)
	case errors.Is(err, engine.ErrEncoder):
		return &APIError{Type: TypeNotSupported, Message: err.Error() + "; use the embedding routes"}
	case errors.Is(err, engine.ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &APIError{Type: TypeUnavailable, Message: "the answer was cancelled: " + err.Error()}
	}
	return asAPIError(err)
}
