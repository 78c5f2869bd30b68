package serve

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/sample"
)

// handleHealth is llama-server's GET /health: {"status": "ok"} while the server can answer. The model is
// loaded before the port opens, so there is no loading state; the one state in which bankml cannot answer
// is a model file that changed on disk (verifier.check: held while it is re-hashed, or another sha256), and
// then /health is a 503 unavailable_error naming what changed, as llama-server's middleware_server_state answers 503 unavailable_error while it cannot
// serve (tools/server/server-http.cpp:307–324). It needs no API key, and is not counted as a refusal.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if err := s.verify.check(); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleModels is llama-server's GET /v1/models (get_res_models): the OpenAI list with the one model, whose
// id is the served name (the first -a/--alias, else the file's base name) and aliases the -a/--alias set, and
// llama-server's "models" array.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	hp := s.m.Model.HP
	writeJSON(w, http.StatusOK, map[string]any{
		"models": []any{map[string]any{
			"name": s.name, "model": s.name, "modified_at": "", "size": "", "digest": "sha256:" + s.m.SHA256,
			"type": "model", "description": "", "tags": []string{""}, "capabilities": []string{"completion"},
			"parameters": "", "details": map[string]any{
				"parent_model": "", "format": "gguf", "family": "", "families": []string{""},
				"parameter_size": "", "quantization_level": "",
			},
		}},
		"object": "list",
		"data": []any{map[string]any{
			"id": s.name, "aliases": s.aliases, "tags": []string{}, "object": "model",
			"created": s.started.Unix(), "owned_by": "bankml",
			"meta": map[string]any{
				"n_vocab": hp.NVocab, "n_ctx": s.nCtx(), "n_ctx_train": hp.NCtxTrain, "n_embd": hp.NEmbd,
				"size": s.m.Identity.Size, "sha256": s.m.SHA256, "pinned": s.m.Pin.Pinned,
			},
		}},
	})
}

// nCtx is a slot's context size in tokens.
func (s *Server) nCtx() int { return s.eng.NCtx() }

// handleProps is llama-server's GET /props (get_res_props): the default generation settings (the sampling
// defaults every request starts from, task_params::to_json(true)'s fields), the slot count, the model's
// name and path, the chat template, BOS/EOS texts, build info; plus bankml's admission facts.
func (s *Server) handleProps(w http.ResponseWriter, r *http.Request) {
	params := settingsJSON(s.base, requestSettings{NPredict: -1})
	tok := s.m.Tokenizer
	text := func(id int32) string {
		if id < 0 {
			return ""
		}
		return tok.TokenText(id)
	}
	props := map[string]any{
		"default_generation_settings": map[string]any{"params": params, "n_ctx": s.nCtx()},
		"total_slots":                 s.opt.Parallel,
		"model_alias":                 s.name,
		"model_path":                  cmp.Or(s.opt.ModelPath, s.m.Path),
		"modalities":                  map[string]bool{"vision": false, "video": false, "audio": false},
		"endpoint_slots":              !s.opt.NoSlots,
		"endpoint_props":              false,
		"endpoint_metrics":            true,
		"ui":                          false,
		"chat_template":               s.m.Template.Source(),
		"chat_template_caps":          s.m.Template.Caps().Map(),
		"bos_token":                   text(tok.BOS()),
		"eos_token":                   text(tok.EOS()),
		"build_info":                  s.fingerprint(),
		"is_sleeping":                 false,
		"bankml": map[string]any{
			"version": s.opt.Version, "model_sha256": s.m.SHA256, "pinned": s.m.Pin.Pinned,
			"guard": s.m.Guard.Verdict, "identity": s.verify.identity(), "match": s.opt.Match,
			// what the template's analysis found (chat_template_caps are the Jinja probes'): tool calls
			// bankml can offer and parse, and reasoning it separates (the default of enable_thinking)
			"capabilities": map[string]bool{"tools": s.m.Template.SupportsTools(), "thinking": s.m.Template.SupportsThinking()},
		},
	}
	if src := s.m.Template.ToolUseSource(); src != "" {
		props["chat_template_tool_use"] = src
	}
	writeJSON(w, http.StatusOK, props)
}

// requestSettings are the non-sampling fields of task_params::to_json.
type requestSettings struct {
	NPredict, NKeep, NDiscard            int
	IgnoreEOS, Stream, PostSamplingProbs bool
}

// settingsJSON is task_params::to_json(true)'s object (server-task.cpp, the fields /props and /metrics
// report) for sampling parameters p and a request's other settings r; lora is empty and timings_per_token
// false (refused when asked). The chat parser's fields (chat_format, reasoning_format,
// reasoning_in_content, generation_prompt) and speculative.types are left out: bankml has neither.
func settingsJSON(p sample.Params, r requestSettings) map[string]any {
	samplers := []string{}
	for _, t := range p.Samplers {
		samplers = append(samplers, t.String())
	}
	return map[string]any{
		"seed": p.Seed, "temperature": p.Temp, "dynatemp_range": p.DynatempRange, "dynatemp_exponent": p.DynatempExponent,
		"top_k": p.TopK, "top_p": p.TopP, "min_p": p.MinP, "top_n_sigma": p.TopNSigma,
		"xtc_probability": p.XTCProbability, "xtc_threshold": p.XTCThreshold, "typical_p": p.TypicalP,
		"repeat_last_n": p.PenaltyLastN, "repeat_penalty": p.PenaltyRepeat, "presence_penalty": p.PenaltyPresent,
		"frequency_penalty": p.PenaltyFreq, "dry_multiplier": p.DryMultiplier, "dry_base": p.DryBase,
		"dry_allowed_length": p.DryAllowedLength, "dry_penalty_last_n": p.DryPenaltyLastN,
		"mirostat": p.Mirostat, "mirostat_tau": p.MirostatTau, "mirostat_eta": p.MirostatEta,
		"adaptive_target": p.AdaptiveTarget, "adaptive_decay": p.AdaptiveDecay,
		"max_tokens": r.NPredict, "n_predict": r.NPredict, "n_keep": r.NKeep, "n_discard": r.NDiscard, "ignore_eos": r.IgnoreEOS, "stream": r.Stream,
		"n_probs": p.NProbs, "min_keep": p.MinKeep, "samplers": samplers, "timings_per_token": false,
		"post_sampling_probs": r.PostSamplingProbs, "backend_sampling": p.BackendSampling, "lora": []any{},
	}
}

// tokenizeRequest is the body of POST /tokenize.
type tokenizeRequest struct {
	Content      json.RawMessage `json:"content"`
	AddSpecial   *bool           `json:"add_special"`   // default false
	ParseSpecial *bool           `json:"parse_special"` // default true
	WithPieces   *bool           `json:"with_pieces"`   // default false
}

// handleTokenize is llama-server's POST /tokenize: content (a string, or an array of strings and token ids
// as tokenize_mixed reads it) → {"tokens": [ids]} or, with with_pieces, [{"id", "piece"}] where a piece that
// is not valid UTF-8 is an array of its bytes.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	var req tokenizeRequest
	if err := decodeJSON(body, &req); err != nil {
		writeError(w, err)
		return
	}
	tokens := []int32{}
	if len(req.Content) > 0 && string(req.Content) != "null" {
		if tokens, err = s.tokenizeMixed("content", req.Content, deref(req.AddSpecial, false), deref(req.ParseSpecial, true)); err != nil {
			writeError(w, err)
			return
		}
	}
	if !deref(req.WithPieces, false) {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": tokens})
		return
	}
	type piece struct {
		ID    int32 `json:"id"`
		Piece any   `json:"piece"`
	}
	out := make([]piece, 0, len(tokens))
	for _, id := range tokens {
		p := s.m.Tokenizer.TokenToPiece(id, true)
		if utf8.Valid(p) {
			out = append(out, piece{id, string(p)})
			continue
		}
		bs := make([]int, len(p))
		for i, c := range p {
			bs[i] = int(c)
		}
		out = append(out, piece{id, bs})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

// tokenizeMixed is llama-server's tokenize_mixed (server-common.cpp): a string is tokenized (addSpecial
// only for a string in first position), a number is a token id. Ids out of the vocabulary are a 400 naming
// field (the request field raw came from: "content" for /tokenize, "prompt" for the completions) and the
// element ("prompt[1]: token id 99999 outside the vocabulary [0, 512)").
func (s *Server) tokenizeMixed(field string, raw json.RawMessage, addSpecial, parseSpecial bool) ([]int32, error) {
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		return s.m.Tokenizer.Tokenize(str, addSpecial, parseSpecial), nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, badRequest("%s: expected a string or an array of strings and token ids", field)
	}
	var out []int32
	for i, p := range parts {
		if err := json.Unmarshal(p, &str); err == nil {
			out = append(out, s.m.Tokenizer.Tokenize(str, addSpecial && i == 0, parseSpecial)...)
			continue
		}
		id, err := s.tokenID(p)
		if err != nil {
			return nil, badRequest("%s[%d]: %v", field, i, err)
		}
		out = append(out, id)
	}
	return out, nil
}

// tokenID reads a token id and checks it against the vocabulary.
func (s *Server) tokenID(raw json.RawMessage) (int32, error) {
	var id int64
	if err := json.Unmarshal(raw, &id); err != nil {
		return 0, fmt.Errorf("expected a string or a token id, got %s", raw)
	}
	if id < 0 || id >= int64(s.m.Tokenizer.NVocab()) {
		return 0, fmt.Errorf("token id %d outside the vocabulary [0, %d)", id, s.m.Tokenizer.NVocab())
	}
	return int32(id), nil
}

// handleDetokenize is llama-server's POST /detokenize: {"tokens": [ids]} → {"content": the pieces
// concatenated, control tokens' texts included (tokens_to_str), not-UTF-8 bytes as its JSON carries them
// (jsonText)}. Ids outside the vocabulary are a 400
// (llama-server reads out of bounds).
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := decodeJSON(body, &req); err != nil {
		writeError(w, err)
		return
	}
	var text []byte
	for i, raw := range req.Tokens {
		id, err := s.tokenID(raw)
		if err != nil {
			writeError(w, badRequest("tokens[%d]: %v", i, err))
			return
		}
		text = append(text, s.m.Tokenizer.TokenToPiece(id, true)...)
	}
	writeJSON(w, http.StatusOK, map[string]string{"content": jsonText(string(text))})
}

// handleApplyTemplate is llama-server's POST /apply-template: an OpenAI chat body → {"prompt": the rendered
// prompt} (chat.ParseRequest and Template.Apply).
func (s *Server) handleApplyTemplate(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := decodeJSON(body, new(map[string]any)); err != nil {
		writeError(w, err)
		return
	}
	res, err := s.render(body)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": res.Prompt})
}

// render parses an OpenAI chat body and applies the model's template: errors are 400 for the request's
// faults (chat.ErrRequest, a template that raised on it) and 500 otherwise. A request's fault is told in
// llama-server's words ("Expected 'messages' to be an array"), without package chat's "chat: bad request: "
// marker; bankml's context stays before them ("message 0: ...").
func (s *Server) render(body []byte) (chat.Result, error) {
	in, err := chat.ParseRequest(body)
	if err != nil {
		return chat.Result{}, badRequest("%s", requestFault(err))
	}
	res, err := s.m.Template.Apply(in)
	if err != nil {
		if errors.Is(err, chat.ErrRequest) {
			return chat.Result{}, badRequest("%s", requestFault(err))
		}
		return chat.Result{}, badRequest("chat template: %v", err)
	}
	return res, nil
}

// requestFault is the text of a chat.ErrRequest error without the marker chat.ErrRequest itself adds.
func requestFault(err error) string {
	return strings.Replace(err.Error(), chat.ErrRequest.Error()+": ", "", 1)
}

// deref returns *p, or def when p is nil.
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
