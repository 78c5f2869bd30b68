package serve

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/bankml/bankml/engine"
)

// nativeCall is one decoded request of llama-server's own completion endpoint.
type nativeCall struct {
	req            engine.Request
	nPrompt        int // tokens_evaluated: the prompt's tokens
	stream         bool
	returnTokens   bool
	responseFields []string
	settings       requestSettings
}

// nativeFields are the fields of POST /completion beyond decodeCommon's and the sampling fields
// (server-schema.cpp's names).
type nativeFields struct {
	Prompt          json.RawMessage `json:"prompt"`
	ReturnTokens    *bool           `json:"return_tokens"`
	ResponseFields  []string        `json:"response_fields"`
	TimingsPerToken *bool           `json:"timings_per_token"`
	ReturnProgress  *bool           `json:"return_progress"`
	NIndent         *int64          `json:"n_indent"`
	TMaxPredictMS   *int64          `json:"t_max_predict_ms"`
	NKeep           *int64          `json:"n_keep"`
	NDiscard        *int64          `json:"n_discard"`
	NCacheReuse     *int64          `json:"n_cache_reuse"`
	Lora            json.RawMessage `json:"lora"`
}

// handleNativeCompletion is llama-server's POST /completion and /completions (post_completions, then
// handle_completions_impl with TASK_RESPONSE_TYPE_NONE; server-context.cpp): a prompt as a string, token
// ids or both mixed (tokenize_mixed with add_special and parse_special, as /v1/completions), the schema's
// fields (n_predict with its aliases max_tokens and max_completion_tokens, stream, stop, cache_prompt,
// id_slot, ignore_eos, n_probs, post_sampling_probs, return_tokens, response_fields, n_keep and n_discard,
// every sampling field), answered on the same engine path as /v1/completions.
//
// The answer is server_task_result_cmpl_final::to_json_non_oaicompat: index, content, tokens (the generated
// ids with return_tokens, else []), id_slot, stop (true), model, tokens_predicted, tokens_evaluated,
// generation_settings (settingsJSON plus stop and dry_sequence_breakers), prompt (the prompt's tokens
// detokenized with special tokens' texts), has_new_line, truncated, stop_type, stopping_word,
// tokens_cached, timings, completion_probabilities when n_probs > 0; response_fields keeps only the paths
// it names (json_get_nested_values: "a/b" is the field b of a, under the key "a/b"). bankml's receipt is a
// top-level bankml_receipt field of it.
//
// Streamed, it is SSE "data: JSON\n\n" events without a closing [DONE] (llama-server ends a
// TASK_RESPONSE_TYPE_NONE stream with nothing): one per generated token whose text is complete UTF-8
// (server_task_result_cmpl_partial::to_json_non_oaicompat: index, content, tokens [id], stop false,
// id_slot, tokens_predicted, tokens_evaluated, completion_probabilities with n_probs), then the final
// object above with content "" and tokens [] (llama-server sends them in the partials) and the receipt.
//
// Refused with a 400 naming the field, since bankml does not reproduce them: several prompts (one answer
// per request), timings_per_token, return_progress, n_indent > 0, t_max_predict_ms > 0, n_cache_reuse > 0,
// lora adapters, speculative.* settings; and what every generating route refuses (decodeCommon,
// decodeSampling). n_keep and n_discard are taken and echoed: they act only in a context shift, which is
// off as in llama-server's default. Deliberate difference: in a stream ended by a stop string,
// llama-server's last partial chunk also carries timings; bankml's final object carries them.
func (s *Server) handleNativeCompletion(w http.ResponseWriter, r *http.Request) {
	x := s.begin(w, r, nil)
	if x == nil {
		return
	}
	call, err := s.decodeNative(x.body)
	if err != nil {
		s.metrics.refusedFor("invalid")
		writeError(w, err)
		return
	}
	if call.stream {
		s.nativeStream(w, r, x, call)
		return
	}
	res, entries, newLine, err := s.generateWhole(r, x, call.req)
	if err != nil {
		writeError(w, s.generationError(err))
		return
	}
	text := jsonText(res.Text) // the bytes llama-server's JSON carries (an answer cut inside a character ends in one U+FFFD)
	rc, err := s.finish(x, usageOf(res), []byte(text))
	if err != nil {
		writeError(w, err)
		return
	}
	out := s.nativeFinal(call, res, text, res.Tokens, newLine)
	if call.req.Sampling.NProbs > 0 && len(entries) > 0 {
		out["completion_probabilities"] = s.probsJSON(entries, call.req.PostSamplingProbs)
	}
	out = nestedValues(call.responseFields, out)
	out["bankml_receipt"] = rc
	writeJSON(w, http.StatusOK, out)
}

// nativeStream answers a streamed /completion (see handleNativeCompletion). Errors before the first chunk
// are plain JSON error answers, later ones an SSE {"error": ...} event, as on the OpenAI routes.
func (s *Server) nativeStream(w http.ResponseWriter, r *http.Request, x *exchange, call *nativeCall) {
	sse := newSSE(w)
	var sent strings.Builder // the text the client received, for the receipt
	nDecoded := 0
	res, err := s.eng.Generate(r.Context(), call.req, func(t engine.Token) error {
		nDecoded++
		if t.Pending {
			return nil
		}
		if t.Text != "" {
			x.tokenSeen(time.Now())
		}
		text := jsonText(t.Text)
		chunk := map[string]any{
			"index": 0, "content": text, "tokens": []int32{t.ID}, "stop": false, "id_slot": t.Slot,
			"tokens_predicted": nDecoded, "tokens_evaluated": call.nPrompt,
		}
		if t.Probs != nil && len(t.Probs.Top) > 0 {
			chunk["completion_probabilities"] = s.probsJSON([]probEntry{{t.Text, t.Probs}}, call.req.PostSamplingProbs)
		}
		sent.WriteString(text)
		return sse.events(chunk)
	})
	if err != nil {
		sse.fail(s.generationError(err))
		return
	}
	rc, err := s.finish(x, usageOf(res), []byte(sent.String()))
	if err != nil {
		sse.fail(err)
		return
	}
	out := nestedValues(call.responseFields, s.nativeFinal(call, res, "", nil, strings.Contains(sent.String(), "\n")))
	out["bankml_receipt"] = rc
	_ = sse.events(out)
}

// nativeFinal is to_json_non_oaicompat's object for a finished generation with content and tokens as
// given (the stream's final object has none); newLine is has_new_line: some released text (process_token's
// text_to_send, engine.Token.Text) held a "\n".
func (s *Server) nativeFinal(call *nativeCall, res engine.Result, content string, tokens []int32, newLine bool) map[string]any {
	if !call.returnTokens || tokens == nil {
		tokens = []int32{}
	}
	settings := settingsJSON(call.req.Sampling, call.settings)
	stop := call.req.Stop
	if stop == nil {
		stop = []string{}
	}
	settings["stop"] = stop
	settings["dry_sequence_breakers"] = call.req.Sampling.DrySequenceBreakers
	return map[string]any{
		"index":               0,
		"content":             content,
		"tokens":              tokens,
		"id_slot":             res.Slot,
		"stop":                true,
		"model":               s.name,
		"tokens_predicted":    len(res.Tokens),
		"tokens_evaluated":    res.PromptTokens,
		"generation_settings": settings,
		"prompt":              jsonText(string(s.m.Tokenizer.Detokenize(call.req.Prompt.Tokens, false, true))),
		"has_new_line":        newLine,
		"truncated":           res.Truncated,
		"stop_type":           res.StopType,
		"stopping_word":       res.StoppingWord,
		"tokens_cached":       res.NTokensCached,
		"timings":             timingsJSON(res.Timings),
	}
}

// nestedValues is llama-server's json_get_nested_values for response_fields: only the named paths ("a/b"
// is the field b of the object a), each under its path as key; paths that do not resolve are left out.
// No paths: the object as it is.
func nestedValues(paths []string, obj map[string]any) map[string]any {
	if len(paths) == 0 {
		return obj
	}
	out := map[string]any{}
	for _, path := range paths {
		var cur any = obj
		ok := true
		for _, k := range strings.Split(path, "/") {
			m, isObj := cur.(map[string]any)
			if !isObj {
				ok = false
				break
			}
			if cur, ok = m[k]; !ok {
				break
			}
		}
		if ok {
			out[path] = cur
		}
	}
	return out
}

// decodeNative reads a /completion body: the common fields, the prompt, /completion's own fields (with
// the refusals handleNativeCompletion lists) and the sampling fields.
func (s *Server) decodeNative(body []byte) (*nativeCall, error) {
	req, c, err := s.decodeCommon(body)
	if err != nil {
		return nil, err
	}
	var f nativeFields
	if err := decodeJSON(body, &f); err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		return nil, badRequest("invalid request: expected a JSON object")
	}
	for k, v := range keys {
		if strings.HasPrefix(k, "speculative.") && present(v) {
			return nil, refusedField(k, "speculative decoding")
		}
	}
	switch {
	case deref(f.TimingsPerToken, false):
		return nil, refusedField("timings_per_token", "per-token timings")
	case deref(f.ReturnProgress, false):
		return nil, refusedField("return_progress", "prompt progress chunks")
	case deref(f.NIndent, 0) > 0:
		return nil, refusedField("n_indent", "the indentation stop")
	case deref(f.TMaxPredictMS, 0) > 0:
		return nil, refusedField("t_max_predict_ms", "the time limit")
	case deref(f.NCacheReuse, 0) > 0:
		return nil, refusedField("n_cache_reuse", "cache reuse by KV shifting")
	case present(f.Lora) && string(f.Lora) != "[]":
		return nil, refusedField("lora", "LoRA adapters")
	}
	call := &nativeCall{stream: deref(c.Stream, false), returnTokens: deref(f.ReturnTokens, false), responseFields: f.ResponseFields}
	for _, lim := range []struct {
		name string
		v    *int64
		min  int64
		dst  *int
	}{{"n_keep", f.NKeep, -1, &call.settings.NKeep}, {"n_discard", f.NDiscard, 0, &call.settings.NDiscard}} {
		if lim.v == nil {
			continue
		}
		if *lim.v < lim.min || *lim.v > math.MaxInt32 {
			return nil, badRequest("Field '%s': Value must be between %d <= value <= %d, but got %d", lim.name, lim.min, math.MaxInt32, *lim.v)
		}
		*lim.dst = int(*lim.v)
	}
	if !present(f.Prompt) {
		return nil, badRequest("\"prompt\" is required")
	}
	toks, err := s.completionPrompt(f.Prompt)
	if err != nil {
		return nil, err
	}
	req.Prompt = engine.Prompt{Tokens: toks}
	if req.Sampling, err = s.decodeSampling(body, nil); err != nil {
		return nil, err
	}
	if err := s.completionConstraints(body, &req.Sampling); err != nil {
		return nil, err
	}
	if err := req.Sampling.Check(); err != nil {
		return nil, paramError(err)
	}
	call.req = req
	call.nPrompt = len(toks)
	call.settings.NPredict = req.NPredict
	switch _, v := c.nPredict(); {
	case v == nil: // task_params start from the server's n_predict (server-schema.cpp:530), -2 included
		call.settings.NPredict = s.nPredict
	case *v == -1: // task_params keep the -1 the slot replaces by -n
		call.settings.NPredict = -1
	}
	call.settings.IgnoreEOS = req.IgnoreEOS
	call.settings.Stream = call.stream
	call.settings.PostSamplingProbs = req.PostSamplingProbs
	return call, nil
}

// refusedField is the 400 for a /completion field bankml does not reproduce.
func refusedField(field, what string) *APIError {
	return badRequest("Field '%s': %s: not implemented by bankml, refused rather than ignored", field, what)
}
