package serve

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/sample"
)

// kind is the OpenAI route answering: chat (/v1/chat/completions) or text (/v1/completions).
type kind int

const (
	kindChat kind = iota
	kindText
)

// handleChatCompletions is OpenAI's POST /v1/chat/completions as llama-server answers it
// (oaicompat_chat_params_parse, then the chat.completion or chat.completion.chunk objects of
// server_task_result_cmpl_final/partial::to_json_oaicompat_chat*).
func (s *Server) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	s.complete(w, r, kindChat)
}

// handleCompletions is OpenAI's POST /v1/completions as llama-server answers it
// (oaicompat_completion_params_parse, then text_completion objects).
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	s.complete(w, r, kindText)
}

// oaiCall is one decoded OpenAI request.
type oaiCall struct {
	kind         kind
	req          engine.Request
	stream       bool
	includeUsage bool
	id           string       // chatcmpl-<32 random alphanumerics>, llama-server's gen_chatcmplid (for both routes)
	answer       *answerState // chat: the parser of the answer (content, reasoning, tool calls)
}

// decodeOAI reads an OpenAI body into an engine request: the prompt (the chat template applied to messages,
// or the completion prompt tokenized), the sampling parameters and the common fields. A stored model's
// Modelfile settings (Options.Defaults) come beneath the request's own fields, as Ollama's /v1 routes apply
// them: its PARAMETERs (oaiModelSettings: stop, num_predict, num_ctx, the sampling options but those
// oaiOwnOptions names) for what the request does not set, and for a chat its SYSTEM and MESSAGEs
// (oaiWithModelMessages). The PARAMETERs bankml does not apply are logged once, as the Ollama routes log them
// (logUnapplied). A raw /v1/completions prompt takes no SYSTEM or MESSAGE: llama-server's route applies
// no chat template to it (Ollama's does).
func (s *Server) decodeOAI(body []byte, k kind) (*oaiCall, error) {
	req, c, err := s.decodeCommon(body)
	if err != nil {
		return nil, err
	}
	model, fromModel, err := s.oaiModelSettings(k)
	if err != nil {
		return nil, err
	}
	s.logUnapplied(model) // the PARAMETERs bankml does not apply (num_gpu, ...), as the Ollama routes log them
	start := s.base
	if fromModel {
		start = model.Sampling
		if !present(c.Stop) {
			req.Stop = model.Stop
		}
		if _, v := c.nPredict(); v == nil && model.HasNPredict {
			req.NPredict = model.NPredict
		}
	}
	// fit cuts the answer to the model's num_ctx (prompt and answer in it), as the Ollama routes do.
	fit := func(toks []int32) error {
		var err error
		if req.NPredict, err = model.fitPrompt(len(toks), req.NPredict); err != nil {
			return badRequest("%v", err)
		}
		return nil
	}
	call := &oaiCall{kind: k, stream: deref(c.Stream, false), id: "chatcmpl-" + randomString()}
	if c.StreamOptions != nil {
		call.includeUsage = deref(c.StreamOptions.IncludeUsage, false)
	}
	var nProbs *int32
	switch k {
	case kindChat:
		var f struct {
			Messages    json.RawMessage `json:"messages"`
			Logprobs    *bool           `json:"logprobs"`
			TopLogprobs *int32          `json:"top_logprobs"`
		}
		if err := decodeJSON(body, &f); err != nil {
			return nil, err
		}
		if !present(f.Messages) {
			return nil, badRequest("'messages' is required")
		}
		// llama-server renders an empty list (the bare generation prompt) and generates until the context is
		// full; OpenAI refuses it, and so does bankml (docs/serve.md).
		var list []json.RawMessage
		if json.Unmarshal(f.Messages, &list) == nil && len(list) == 0 {
			return nil, badRequest("Field 'messages': must hold at least one message, got an empty array")
		}
		switch {
		case deref(f.Logprobs, false):
			n := deref(f.TopLogprobs, 20) // llama-server's default when logprobs is true
			nProbs = &n
		case f.TopLogprobs != nil:
			return nil, badRequest("top_logprobs requires logprobs to be set to true")
		}
		res, err := s.render(s.oaiWithModelMessages(body))
		if err != nil {
			return nil, err
		}
		toks, err := s.eng.Tokenize(engine.Prompt{Segments: res.Segments})
		if err != nil {
			return nil, badRequest("%v", err)
		}
		if err := fit(toks); err != nil {
			return nil, err
		}
		req.Prompt = engine.Prompt{Tokens: toks}
		call.answer = &answerState{parser: res.Parser}
		if req.Sampling, err = s.decodeSamplingOver(start, body, nProbs); err != nil {
			return nil, err
		}
		if err := s.chatConstraints(body, &req, res); err != nil {
			return nil, err
		}
	case kindText:
		var f struct {
			Prompt   json.RawMessage `json:"prompt"`
			Logprobs json.RawMessage `json:"logprobs"`
			Echo     *bool           `json:"echo"`
			BestOf   json.RawMessage `json:"best_of"`
			Suffix   json.RawMessage `json:"suffix"`
		}
		if err := decodeJSON(body, &f); err != nil {
			return nil, err
		}
		if len(f.Prompt) == 0 {
			return nil, badRequest("\"prompt\" is required")
		}
		if deref(f.Echo, false) {
			return nil, badRequest("Only no echo is supported")
		}
		if len(f.BestOf) > 0 {
			return nil, badRequest("Unsupported param: best_of")
		}
		if len(f.Suffix) > 0 {
			return nil, badRequest("Unsupported param: suffix")
		}
		if present(f.Logprobs) { // the alias of n_probs on this route (OpenAI's legacy integer logprobs)
			var n int32
			var b bool
			switch {
			case json.Unmarshal(f.Logprobs, &n) == nil:
			case json.Unmarshal(f.Logprobs, &b) == nil:
				if b {
					n = 1
				}
			default:
				return nil, badRequest("Field 'logprobs': expected an integer")
			}
			var np struct {
				NProbs *int32 `json:"n_probs"`
			}
			_ = json.Unmarshal(body, &np)
			if np.NProbs == nil {
				nProbs = &n
			}
		}
		toks, err := s.completionPrompt(f.Prompt)
		if err != nil {
			return nil, err
		}
		if err := fit(toks); err != nil {
			return nil, err
		}
		req.Prompt = engine.Prompt{Tokens: toks}
		if req.Sampling, err = s.decodeSamplingOver(start, body, nProbs); err != nil {
			return nil, err
		}
		if err := s.completionConstraints(body, &req.Sampling); err != nil {
			return nil, err
		}
	}
	if err := req.Sampling.Check(); err != nil {
		return nil, paramError(err)
	}
	call.req = req
	return call, nil
}

// completionPrompt tokenizes a /v1/completions prompt: a string (add_special and parse_special, as
// llama-server), or one array of strings and token ids (tokenize_mixed). Several prompts (an array of
// arrays, or of several strings) would be several completions: refused (n = 1 only).
func (s *Server) completionPrompt(raw json.RawMessage) ([]int32, error) {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		toks, err := s.eng.Tokenize(engine.Prompt{Text: str})
		if err != nil {
			return nil, badRequest("%v", err)
		}
		return toks, nil
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return nil, badRequest("Field 'prompt': expected a string, an array of token ids, or an array of strings and token ids")
	}
	strs := 0
	for _, p := range parts {
		if len(p) > 0 && p[0] == '"' {
			strs++
		} else if len(p) > 0 && p[0] == '[' {
			return nil, badRequest("Field 'prompt': several prompts: bankml serve answers one prompt per request (n = 1 only)")
		}
	}
	if strs > 1 && strs == len(parts) {
		return nil, badRequest("Field 'prompt': several prompts: bankml serve answers one prompt per request (n = 1 only)")
	}
	toks, err := s.tokenizeMixed("prompt", raw, true, true)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, badRequest("the prompt is empty")
	}
	return toks, nil
}

// answerText is the text llama-server's answer carries for generated text s: its chat parser's content for
// chat (chatText: a character cut by the end is dropped), its JSON's text for completions (jsonText: one
// U+FFFD for it).
func (c *oaiCall) answerText(s string) string {
	if c.kind == kindChat {
		return chatText(s)
	}
	return jsonText(s)
}

// randomString is llama-server's random_string: 32 characters of [0-9A-Za-z].
func randomString() string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 32)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// complete answers a chat or text completion, streamed or not.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, k kind) {
	x := s.begin(w, r, nil)
	if x == nil {
		return
	}
	call, err := s.decodeOAI(x.body, k)
	if err != nil {
		s.metrics.refusedFor("invalid")
		writeError(w, err)
		return
	}
	if call.stream {
		s.completeStream(w, r, x, call)
		return
	}
	s.completeJSON(w, r, x, call)
}

// probEntry is one token's logprobs entry as llama-server keeps it: the text released with the token
// (text_to_send) and its probabilities.
type probEntry struct {
	text  string
	probs *sample.Probs
}

// completeJSON answers a non-streamed completion: one chat.completion or text_completion object with the
// receipt as a top-level bankml_receipt field.
func (s *Server) completeJSON(w http.ResponseWriter, r *http.Request, x *exchange, call *oaiCall) {
	res, entries, _, err := s.generateWhole(r, x, call.req)
	if err != nil {
		writeError(w, s.generationError(err))
		return
	}
	var msg map[string]any
	finish := res.FinishReason
	text := call.answerText(res.Text)
	answer := []byte(text)
	if call.answer != nil {
		if _, err := call.answer.update(res.Text, false); err != nil {
			writeError(w, answerError(err))
			return
		}
		msg = messageJSON(call.answer.msg)
		finish = chatFinishReason(res, call.answer.msg)
		answer = receiptAnswer(call.answer.msg)
	}
	rc, err := s.finish(x, usageOf(res), answer)
	if err != nil {
		writeError(w, err)
		return
	}
	var logprobs any // null unless probabilities were asked for and exist
	if call.req.Sampling.NProbs > 0 && len(entries) > 0 {
		logprobs = map[string]any{"content": s.probsJSON(entries, call.req.PostSamplingProbs)}
	}
	out := map[string]any{
		"created":            time.Now().Unix(),
		"model":              s.name,
		"system_fingerprint": s.fingerprint(),
		"usage":              usageJSON(res),
		"id":                 call.id,
		"timings":            timingsJSON(res.Timings),
		"bankml_receipt":     rc,
	}
	if call.kind == kindChat {
		choice := map[string]any{
			"finish_reason": finish,
			"index":         0,
			"message":       msg,
		}
		if logprobs != nil {
			choice["logprobs"] = logprobs
		}
		out["choices"] = []any{choice}
		out["object"] = "chat.completion"
	} else {
		out["choices"] = []any{map[string]any{
			"text": text, "index": 0, "logprobs": logprobs, "finish_reason": res.FinishReason,
		}}
		out["object"] = "text_completion"
	}
	writeJSON(w, http.StatusOK, out)
}

// generateWhole runs a non-streamed generation for exchange x: every token stamps the first-token time;
// entries are the released tokens' probabilities less the stop word's (send_final_response trims them),
// newLine is has_new_line (some released text, process_token's text_to_send, held a "\n").
func (s *Server) generateWhole(r *http.Request, x *exchange, req engine.Request) (res engine.Result, entries []probEntry, newLine bool, err error) {
	res, err = s.eng.Generate(r.Context(), req, func(t engine.Token) error {
		x.tokenSeen(time.Now())
		newLine = newLine || strings.Contains(t.Text, "\n")
		if !t.Pending && t.Probs != nil {
			entries = append(entries, probEntry{t.Text, t.Probs})
		}
		return nil
	})
	if len(res.Probs) < len(entries) {
		entries = entries[:len(res.Probs)]
	}
	return res, entries, newLine, err
}

// completeStream answers a streamed completion as llama-server's SSE: a chunk per released token (for chat,
// a first delta {"role": "assistant", "content": null} with the first token; tokens that release no text
// send no chat chunk), a final chunk with finish_reason (and for text completions the usage), for chat with
// stream_options.include_usage a usage chunk with empty choices (OpenAI's), then "data: [DONE]". bankml's
// receipt is a top-level bankml_receipt of the final choice chunk and of the usage chunk (never a chunk of
// its own). Errors before the first chunk are answered as plain JSON errors (llama-server treats the first
// result so); later ones as an SSE error event.
func (s *Server) completeStream(w http.ResponseWriter, r *http.Request, x *exchange, call *oaiCall) {
	sse := newSSE(w)
	var sent strings.Builder // the text the client received, for the receipt
	nDecoded := 0
	res, err := s.eng.Generate(r.Context(), call.req, func(t engine.Token) error {
		nDecoded++
		if t.Pending {
			return nil
		}
		now := time.Now()
		text := call.answerText(t.Text) // a released piece never ends inside a character (the engine holds it back)
		var chunks []any
		switch call.kind {
		case kindChat:
			if nDecoded == 1 {
				chunks = append(chunks, s.chatChunk(call, map[string]any{"role": "assistant", "content": nil}, nil))
			}
			diffs, err := call.answer.update(t.Text, true)
			if err != nil {
				return answerError(err)
			}
			for _, d := range diffs {
				chunks = append(chunks, s.chatChunk(call, diffJSON(d), nil))
			}
			if len(chunks) > 0 && t.Probs != nil && len(t.Probs.Top) > 0 {
				last := chunks[len(chunks)-1].(map[string]any)
				last["choices"].([]any)[0].(map[string]any)["logprobs"] = map[string]any{
					"content": s.probsJSON([]probEntry{{t.Text, t.Probs}}, call.req.PostSamplingProbs),
				}
			}
		case kindText:
			var logprobs any
			if t.Probs != nil && len(t.Probs.Top) > 0 {
				logprobs = map[string]any{"content": s.probsJSON([]probEntry{{t.Text, t.Probs}}, call.req.PostSamplingProbs)}
			}
			chunks = append(chunks, s.textChunk(call, text, logprobs, nil))
		}
		if len(chunks) == 0 {
			return nil
		}
		if t.Text != "" {
			x.tokenSeen(now)
		}
		sent.WriteString(text)
		return sse.events(chunks...)
	})
	if err != nil {
		sse.fail(s.generationError(err))
		return
	}
	// The answer's complete parse (a chat answer): what it adds to the streamed deltas, the finish reason and
	// the receipt's answer.
	var final []any
	finish := res.FinishReason
	answer := []byte(sent.String())
	if call.kind == kindChat {
		diffs, err := call.answer.update("", false)
		if err != nil {
			sse.fail(answerError(err))
			return
		}
		for _, d := range diffs {
			final = append(final, s.chatChunk(call, diffJSON(d), nil))
		}
		finish = chatFinishReason(res, call.answer.msg)
		answer = receiptAnswer(call.answer.msg)
	}
	rc, ferr := s.finish(x, usageOf(res), answer)
	if ferr != nil {
		sse.fail(ferr)
		return
	}
	// The receipt rides as a top-level field of the final choice chunk (the one with finish_reason) and of
	// the usage chunk when usage was asked for: no chunk without choices is sent unless the client asked for
	// OpenAI's usage chunk, so the common loop over chunk.choices[0] never meets an empty array.
	switch call.kind {
	case kindChat:
		c := s.chatChunk(call, map[string]any{}, finish)
		c["bankml_receipt"] = rc
		final = append(final, c)
		if call.includeUsage {
			u := s.chatBase(call)
			u["choices"] = []any{}
			u["usage"] = usageJSON(res)
			u["bankml_receipt"] = rc
			final = append(final, u)
		}
	case kindText:
		c := s.textChunk(call, "", nil, res.FinishReason)
		c["usage"] = usageJSON(res)
		c["bankml_receipt"] = rc
		final = append(final, c)
	}
	final[len(final)-1].(map[string]any)["timings"] = timingsJSON(res.Timings)
	if err := sse.events(final...); err != nil {
		return
	}
	_ = sse.done()
}

// chatBase is the envelope of a chat.completion.chunk.
func (s *Server) chatBase(call *oaiCall) map[string]any {
	return map[string]any{
		"created": time.Now().Unix(), "id": call.id, "model": s.name,
		"system_fingerprint": s.fingerprint(), "object": "chat.completion.chunk",
	}
}

// chatChunk is a chat.completion.chunk with one choice: delta and finish_reason (nil: JSON null).
func (s *Server) chatChunk(call *oaiCall, delta map[string]any, finish any) map[string]any {
	c := s.chatBase(call)
	c["choices"] = []any{map[string]any{"finish_reason": finish, "index": 0, "delta": delta}}
	return c
}

// textChunk is a streamed text_completion object.
func (s *Server) textChunk(call *oaiCall, text string, logprobs, finish any) map[string]any {
	return map[string]any{
		"choices": []any{map[string]any{"text": text, "index": 0, "logprobs": logprobs, "finish_reason": finish}},
		"created": time.Now().Unix(), "model": s.name, "system_fingerprint": s.fingerprint(),
		"object": "text_completion", "id": call.id,
	}
}

// fingerprint is the system_fingerprint (llama-server's llama_build_info()).
func (s *Server) fingerprint() string { return "bankml-" + s.opt.Version }

// usageOf is the receipt's view of a result.
func usageOf(res engine.Result) usage {
	return usage{PromptTokens: res.PromptTokens, CompletionTokens: len(res.Tokens), CachedTokens: res.CachedTokens}
}

// usageJSON is llama-server's usage_json_oaicompat.
func usageJSON(res engine.Result) map[string]any {
	n := len(res.Tokens)
	return map[string]any{
		"completion_tokens":     n,
		"prompt_tokens":         res.PromptTokens,
		"total_tokens":          n + res.PromptTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": res.CachedTokens},
	}
}

// timingsJSON is llama-server's server_slot_stats::to_json.
func timingsJSON(t engine.Timings) map[string]any {
	perTok := func(ms float64, n int) float64 {
		if n > 0 {
			return ms / float64(n)
		}
		return 0
	}
	return map[string]any{
		"cache_n":                t.CacheN,
		"prompt_n":               t.PromptN,
		"prompt_ms":              t.PromptMS,
		"prompt_per_token_ms":    perTok(t.PromptMS, t.PromptN),
		"prompt_per_second":      t.PromptPerSecond(),
		"predicted_n":            t.PredictedN,
		"predicted_ms":           t.PredictedMS,
		"predicted_per_token_ms": perTok(t.PredictedMS, t.PredictedSteps()),
		"predicted_per_second":   t.PredictedPerSecond(),
	}
}

// probsJSON is llama-server's completion_token_output::probs_vector_to_json: per token {id, token (its
// released text, cut before an incomplete UTF-8 sequence), bytes, logprob (or prob with
// post_sampling_probs), top_logprobs (top_probs)} with the top candidates' pieces (special tokens without
// their text, as llama-server's default --special off renders them).
func (s *Server) probsJSON(entries []probEntry, post bool) []any {
	pKey, topKey := "logprob", "top_logprobs"
	if post {
		pKey, topKey = "prob", "top_probs"
	}
	value := func(p float32) float64 {
		if post {
			return float64(p)
		}
		return float64(sample.Logarithm(p))
	}
	out := make([]any, 0, len(entries))
	for _, e := range entries {
		top := make([]any, 0, len(e.probs.Top))
		for _, tp := range e.probs.Top {
			piece := string(s.m.Tokenizer.TokenToPiece(tp.ID, false))
			top = append(top, map[string]any{
				"id": tp.ID, "token": jsonText(piece[:validUTF8Prefix(piece)]), "bytes": byteList(piece), pKey: value(tp.P),
			})
		}
		out = append(out, map[string]any{
			"id": e.probs.Token, "token": jsonText(e.text[:validUTF8Prefix(e.text)]), "bytes": byteList(e.text),
			pKey: value(e.probs.P), topKey: top,
		})
	}
	return out
}

// byteList is a string's bytes as a JSON array of numbers (str_to_bytes).
func byteList(s string) []int {
	b := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		b[i] = int(s[i])
	}
	return b
}

// validUTF8Prefix is llama-server's validate_utf8: the length of s without a trailing incomplete UTF-8
// sequence (only the end is checked).
func validUTF8Prefix(s string) int {
	n := len(s)
	for i := 1; i <= 4 && i <= n; i++ {
		c := s[n-i]
		if (c&0xE0 == 0xC0 && i < 2) || (c&0xF0 == 0xE0 && i < 3) || (c&0xF8 == 0xF0 && i < 4) {
			return n - i
		}
	}
	return n
}

// clientText is the text a JSON client decodes from s as Go's encoding/json writes it: each byte of an
// invalid UTF-8 sequence becomes U+FFFD. The Ollama routes answer so, as Ollama (Go) does; the receipt hashes
// it and the ledger keeps it. llama-server's routes answer jsonText or chatText instead.
func clientText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
