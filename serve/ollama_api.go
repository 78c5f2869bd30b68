package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/sample"
)

// OllamaVersion is the Ollama release whose API bankml follows
// (github.com/ollama/ollama/api v0.17.4): GET /api/version reports it, so
// that clients that check Ollama's version for features see the one whose
// shapes bankml answers in.
const OllamaVersion = "0.17.4"

// ollamaRunning is what Ollama answers on GET and HEAD /.
const ollamaRunning = "Ollama is running"

// ollamaAPI serves Ollama's API (Ollama v0.17.4, server/routes.go) over
// the server's engine, with the server's receipts, history, metrics and
// model re-check: see docs/serve.md for every field and what bankml does
// with it.
type ollamaAPI struct {
	s     *Server
	model ollamaModel
}

// ollamaChatAnswer is one streamed line (or the whole answer) of /api/chat:
// Ollama's api.ChatResponse with, on the final line only, the receipt.
type ollamaChatAnswer struct {
	api.ChatResponse
	Receipt *Receipt `json:"bankml_receipt,omitempty"`
}

// ollamaGenerateAnswer is ollamaChatAnswer for /api/generate
// (api.GenerateResponse).
type ollamaGenerateAnswer struct {
	api.GenerateResponse
	Receipt *Receipt `json:"bankml_receipt,omitempty"`
}

// ollamaJob is a parsed /api/chat or /api/generate request.
type ollamaJob struct {
	x        *exchange
	model    string
	stream   bool
	settings ollamaSettings
	prompt   engine.Prompt
	rendered string       // the prompt text (for _debug_render_only and /api/generate's context)
	answer   *answerState // the chat template's parser of the answer (nil for a raw prompt)
	context  bool         // /api/generate not raw: the final answer carries Ollama's context
}

// ollamaPiece is what one line of an answer carries: content, thinking (the reasoning the template's parser
// separates) and tool calls.
type ollamaPiece struct {
	Content, Thinking string
	ToolCalls         []api.ToolCall
}

// modelName checks a request's model name: the served name, the file's base
// name, its stem (without .gguf: "stories260K" for stories260K.gguf, as
// Ollama users name models) or one of the -a/--alias names, compared with Ollama's default tag
// ":latest" on a name that has no tag (ollamaTagged): "tiny" and "tiny:latest"
// are the same model, "my-model:v2:latest" is not "my-model:v2". Letter case
// does not count, as in Ollama's names (model.Name.EqualFold). Ollama
// answers 404 for another.
func (a *ollamaAPI) modelName(w http.ResponseWriter, name string) bool {
	if name == "" {
		ollamaError(w, http.StatusBadRequest, "model is required")
		return false
	}
	for _, n := range append([]string{a.model.Name}, a.model.Names...) {
		if strings.EqualFold(ollamaTagged(name), ollamaTagged(n)) { // Ollama's names compare case-insensitively
			return true
		}
	}
	ollamaError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found (bankml serves %q)", name, a.model.Name))
	return false
}

// decode reads the body (at most the server's limit: 413) into v as Ollama
// does (encoding/json; unknown fields ignored). It has answered the error
// itself when it returns false.
func (a *ollamaAPI) decode(w http.ResponseWriter, r *http.Request, v any) ([]byte, bool) {
	body, err := a.s.readBody(w, r)
	if err != nil {
		writeOllamaAPIError(w, err)
		return nil, false
	}
	if !decodeOllama(w, body, v) {
		return nil, false
	}
	return body, true
}

// decodeOllama decodes body into v, answering 400 naming the problem.
func decodeOllama(w http.ResponseWriter, body []byte, v any) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		ollamaError(w, http.StatusBadRequest, "missing request body")
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		ollamaError(w, http.StatusBadRequest, jsonError(body, err).Message)
		return false
	}
	return true
}

// writeOllamaAPIError answers err (an *APIError, else a 500) with its
// status and Ollama's {"error": "..."} body.
func writeOllamaAPIError(w http.ResponseWriter, err error) {
	ae := asAPIError(err)
	ollamaError(w, ae.HTTPStatus(), ae.Message)
}

// unsupportedFields names the first request field, common to /api/chat and
// /api/generate, that bankml refuses (with the reason), or "".
func unsupportedFields(format json.RawMessage, truncate, shift *bool, topLogprobs int, logprobs bool) string {
	switch {
	case truncate != nil && *truncate:
		return "truncate: bankml does not truncate prompts; a prompt past the context is refused"
	case shift != nil && *shift:
		return "shift: bankml does not shift the context; an answer ends with done_reason \"length\" when the context is full"
	case logprobs || topLogprobs != 0:
		return "logprobs: not supported yet on the Ollama API (use /v1/chat/completions)"
	}
	return ""
}

// settings maps the options (parseOllamaOptions), clamps a num_ctx past the server's context to it (with a
// warning in the log, as Ollama clamps it to its runner's), takes repeat_last_n -1 as the request's context (num_ctx when given, else the slot's, as Ollama's -1 = num_ctx), gives a request
// without num_predict the server's -n (Options.NPredict: as an Ollama Modelfile's num_predict is the default
// a request's options override, server/routes.go:122), and logs the options given that are not applied
// (logUnapplied).
func (a *ollamaAPI) settings(w http.ResponseWriter, opts map[string]any) (ollamaSettings, bool) {
	s, err := parseOllamaOptions(a.s.withDefaults(opts), a.base())
	if err != nil {
		a.s.metrics.refusedFor("invalid")
		ollamaError(w, http.StatusBadRequest, optionMessage(err))
		return s, false
	}
	s.NumCtxFromModel = s.NumCtx > 0 && opts["num_ctx"] == nil
	a.s.fitSettings(&s)
	if !s.HasNPredict {
		s.NPredict = slotLimit(a.s.nPredict) // -n below -1: one token, as on llama-server's routes
	}
	a.s.logUnapplied(s)
	return s, true
}

// logUnapplied logs, in one line at WARN (Ollama warns of each name it does not know, api/types.go:976), the
// options set holds that bankml does not apply (ollamaSettings.Ignored: num_gpu, num_thread, names Ollama does
// not know, ...), nothing when there are none. Each request logs them once, as its options are read: the Ollama
// routes the request's options over the model's PARAMETERs (settings), the OpenAI routes the model's
// PARAMETERs (decodeOAI).
func (s *Server) logUnapplied(set ollamaSettings) {
	if len(set.Ignored) > 0 {
		s.log.Warn("ollama: options not applied", "options", strings.Join(set.Ignored, ", "))
	}
}

// optionMessage is the 400's message for an option parseOllamaOptions refused: Ollama's own words for a value
// of the wrong type (`option "top_k" must be of type integer`; Ollama answers it with a 500,
// handleScheduleError's default), else naming the option by its JSON path as the other field errors do
// ("Field 'options.seed': must be an integer in [...]").
func optionMessage(err error) string {
	var oe *OptionError
	var pe *sample.ParamError
	switch {
	case errors.As(err, &oe):
		if oe.Ollama != "" {
			return oe.Ollama
		}
		return fmt.Sprintf("Field 'options.%s': %s", oe.Option, oe.Reason)
	case errors.As(err, &pe):
		return fmt.Sprintf("Field 'options.%s': %s (%v)", pe.Param, pe.Reason, pe.Err)
	}
	return err.Error()
}

// ollamaConstraints are the fields of an Ollama request that reach the chat template: format ("json" or a JSON
// schema object), tools (the OpenAI function form, passed as given) and think.
type ollamaConstraints struct {
	format json.RawMessage
	tools  json.RawMessage
	think  *api.ThinkValue
}

// responseFormat is Ollama's format as an OpenAI response_format: "json" is JSON mode (any object: llama.cpp's
// converter of {"type": "object"} where Ollama has its own object grammar), an object is a JSON schema; anything
// else is Ollama's 400.
func responseFormat(format json.RawMessage) (any, error) {
	switch f := bytes.TrimSpace(format); {
	case len(f) == 0, string(f) == "null", string(f) == `""`:
		return nil, nil
	case string(f) == `"json"`:
		return map[string]any{"type": "json_object"}, nil
	case f[0] == '{':
		return map[string]any{"type": "json_schema", "json_schema": map[string]any{"schema": json.RawMessage(f)}}, nil
	}
	return nil, badRequest("invalid format: %q; expected \"json\" or a valid JSON Schema object", string(format))
}

// checkThink refuses a think value Ollama v0.17.4 refuses (server/routes.go GenerateHandler and
// ChatHandler): a string level with `think value "high" is not supported for this model` (Ollama takes levels
// only for gpt-oss's harmony parser; bankml takes them for a template that reads reasoning_effort, which they
// become), and true for a model whose template has no thinking with `"NAME" does not support thinking` (NAME
// as the request gave it). bankml's thinking capability is the chat template's (chat.Template.SupportsThinking:
// its analysis found reasoning markers), as Ollama's is its template's thinking tags. It has answered when it
// returns false.
func (a *ollamaAPI) checkThink(w http.ResponseWriter, model string, think *api.ThinkValue) bool {
	tmpl := a.s.m.Template
	switch {
	case think == nil:
		return true
	case think.IsString() && (tmpl == nil || !tmpl.Caps().ReasoningEffort):
		ollamaError(w, http.StatusBadRequest, fmt.Sprintf("think value %q is not supported for this model", think.String()))
		return false
	case !think.IsString() && think.Bool() && (tmpl == nil || !tmpl.SupportsThinking()):
		ollamaError(w, http.StatusBadRequest, fmt.Sprintf("%q does not support thinking", model))
		return false
	}
	return true
}

// thinkSettings is think (checked by checkThink) as OpenAI fields: chat_template_kwargs.enable_thinking, and a
// level as reasoning_effort.
func thinkSettings(think *api.ThinkValue) (kwargs map[string]any, effort string) {
	switch {
	case think == nil:
		return nil, ""
	case think.IsString():
		return map[string]any{"enable_thinking": true}, think.String()
	}
	return map[string]any{"enable_thinking": think.Bool()}, ""
}

// chatPrompt renders messages with the chat template as llama-server's
// /v1/chat/completions renders them (Server.render of the equivalent OpenAI
// body: chat.ParseRequest's defaults, a final assistant message continued,
// the server's chat_template_kwargs), with Ollama's think as enable_thinking
// (a level as reasoning_effort), format as response_format, tools and the
// messages' tool calls as OpenAI's. Errors are 400s (*APIError) naming the
// problem.
func (a *ollamaAPI) chatPrompt(model string, msgs []api.Message, c ollamaConstraints) (chat.Result, error) {
	type oaiCall struct {
		ID       string `json:"id,omitempty"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	type oaiMessage struct {
		Role             string    `json:"role"`
		Content          string    `json:"content"`
		ReasoningContent string    `json:"reasoning_content,omitempty"`
		Name             string    `json:"name,omitempty"`
		ToolCallID       string    `json:"tool_call_id,omitempty"`
		ToolCalls        []oaiCall `json:"tool_calls,omitempty"`
	}
	body := struct {
		Messages        []oaiMessage    `json:"messages"`
		Kwargs          map[string]any  `json:"chat_template_kwargs,omitempty"`
		ReasoningEffort string          `json:"reasoning_effort,omitempty"`
		ResponseFormat  any             `json:"response_format,omitempty"`
		Tools           json.RawMessage `json:"tools,omitempty"`
	}{}
	for i, m := range msgs {
		if len(m.Images) > 0 {
			return chat.Result{}, badRequest("messages[%d].images: images are not supported", i)
		}
		om := oaiMessage{Role: m.Role, Content: m.Content, ReasoningContent: m.Thinking, Name: m.ToolName, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			var oc oaiCall
			oc.ID, oc.Type, oc.Function.Name = tc.ID, "function", tc.Function.Name
			args, err := json.Marshal(tc.Function.Arguments)
			if err != nil {
				return chat.Result{}, badRequest("messages[%d].tool_calls: %v", i, err)
			}
			oc.Function.Arguments = args
			om.ToolCalls = append(om.ToolCalls, oc)
		}
		body.Messages = append(body.Messages, om)
	}
	body.Kwargs, body.ReasoningEffort = thinkSettings(c.think)
	var err error
	if body.ResponseFormat, err = responseFormat(c.format); err != nil {
		return chat.Result{}, err
	}
	if present(c.tools) && string(c.tools) != "[]" {
		if !a.s.m.Template.SupportsTools() {
			return chat.Result{}, badRequest("%q does not support tools", model)
		}
		body.Tools = c.tools
	}
	js, err := json.Marshal(body)
	if err != nil {
		return chat.Result{}, err
	}
	res, err := a.s.render(js)
	var ae *APIError
	if err != nil && present(c.format) && errors.As(err, &ae) {
		// The schema came as Ollama's "format": name the field the client sent, not its OpenAI rendering.
		ae.Message = strings.ReplaceAll(ae.Message, "response_format.json_schema.schema", "format")
	}
	return res, err
}

// chatJob finishes a job whose prompt the chat template rendered: the prompt, the answer's parser and the
// template's constraints on the sampling (grammar, triggers, preserved tokens, stop strings).
func (a *ollamaAPI) chatJob(job *ollamaJob, res chat.Result) error {
	job.prompt, job.rendered = engine.Prompt{Segments: res.Segments}, res.Prompt
	job.answer = &answerState{parser: res.Parser}
	req := engine.Request{Sampling: job.settings.Sampling, Stop: job.settings.Stop}
	if err := a.s.chatConstraints([]byte("{}"), &req, res); err != nil {
		return err
	}
	if err := req.Sampling.Check(); err != nil {
		return paramError(err)
	}
	job.settings.Sampling, job.settings.Stop = req.Sampling, req.Stop
	return nil
}

// ollamaToolCalls are an answer's tool calls in Ollama's form: arguments as a JSON object, the index in the
// answer, the id as given to it. A call the answer's end cut short (done_reason length: its arguments are not
// a complete JSON object, which Ollama's form cannot carry) is left out; a cut call in an answer that was not
// cut is an error.
func ollamaToolCalls(calls []chat.ToolCall, cut bool) ([]api.ToolCall, error) {
	var out []api.ToolCall
	for _, c := range calls {
		tc := api.ToolCall{ID: c.ID}
		tc.Function.Index, tc.Function.Name = len(out), c.Name
		if err := json.Unmarshal([]byte(c.Arguments), &tc.Function.Arguments); err != nil {
			if cut {
				continue
			}
			return nil, fmt.Errorf("tool call %q: arguments %q are not a JSON object: %w", c.Name, c.Arguments, err)
		}
		out = append(out, tc)
	}
	return out, nil
}

// start begins an exchange (Server.begin: the body, 413, the model
// re-check) and decodes the body into req, whose model name name returns;
// nil means it has answered the error itself.
func (a *ollamaAPI) start(w http.ResponseWriter, r *http.Request, req any, name func() string) *exchange {
	x := a.s.begin(w, r, writeOllamaAPIError)
	if x == nil || !decodeOllama(w, x.body, req) || !a.modelName(w, name()) {
		return nil
	}
	return x
}

// handleChat is POST /api/chat.
func (a *ollamaAPI) handleChat(w http.ResponseWriter, r *http.Request) {
	var req api.ChatRequest
	x := a.start(w, r, &req, func() string { return req.Model })
	if x == nil {
		return
	}
	if msg := unsupportedFields(req.Format, req.Truncate, req.Shift, req.TopLogprobs, req.Logprobs); msg != "" {
		ollamaError(w, http.StatusBadRequest, msg)
		return
	}
	var raw struct {
		Tools json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(x.body, &raw) // decoded once already; the tools as given (api.Tool drops unknown schema keywords)
	if !a.checkThink(w, req.Model, req.Think) {
		return
	}
	if len(req.Messages) == 0 {
		a.loadAnswer(w, req.Model, req.KeepAlive, func(reason string) any {
			return api.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(),
				Message: api.Message{Role: "assistant"}, Done: true, DoneReason: reason}
		})
		return
	}
	settings, ok := a.settings(w, req.Options)
	if !ok {
		return
	}
	res, err := a.chatPrompt(req.Model, a.s.withModelMessages(req.Messages), ollamaConstraints{format: req.Format, tools: raw.Tools, think: req.Think})
	if err != nil {
		writeOllamaAPIError(w, err)
		return
	}
	job := &ollamaJob{x: x, model: req.Model, stream: req.Stream == nil || *req.Stream, settings: settings}
	if err := a.chatJob(job, res); err != nil {
		writeOllamaAPIError(w, err)
		return
	}
	if req.DebugRenderOnly {
		writeOllamaJSON(w, http.StatusOK, api.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(),
			DebugInfo: &api.DebugInfo{RenderedTemplate: job.rendered}})
		return
	}
	a.run(w, r, job, func(p ollamaPiece, done bool) any {
		return &ollamaChatAnswer{ChatResponse: api.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(),
			Message: api.Message{Role: "assistant", Content: p.Content, Thinking: p.Thinking, ToolCalls: p.ToolCalls}, Done: done}}
	})
}

// handleGenerate is POST /api/generate.
func (a *ollamaAPI) handleGenerate(w http.ResponseWriter, r *http.Request) {
	var req api.GenerateRequest
	x := a.start(w, r, &req, func() string { return req.Model })
	if x == nil {
		return
	}
	if msg := unsupportedFields(req.Format, req.Truncate, req.Shift, req.TopLogprobs, req.Logprobs); msg == "" {
		switch {
		case req.Suffix != "":
			msg = "suffix: fill-in-the-middle is not supported"
		case req.Template != "":
			msg = "template: Ollama's Go templates are not supported; the model's chat template is used"
		case len(req.Images) > 0:
			msg = "images: images are not supported"
		case req.Raw && (req.System != "" || len(req.Context) > 0):
			msg = "raw mode does not support template, system, or context" // Ollama's words
		}
		if msg != "" {
			ollamaError(w, http.StatusBadRequest, msg)
			return
		}
	} else {
		ollamaError(w, http.StatusBadRequest, msg)
		return
	}
	if !a.checkThink(w, req.Model, req.Think) {
		return
	}
	if req.Prompt == "" {
		a.loadAnswer(w, req.Model, req.KeepAlive, func(reason string) any {
			return api.GenerateResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: reason}
		})
		return
	}
	contextText, err := a.contextText(req.Context)
	if err != nil {
		writeOllamaAPIError(w, err)
		return
	}
	settings, ok := a.settings(w, req.Options)
	if !ok {
		return
	}
	job := &ollamaJob{x: x, model: req.Model, stream: req.Stream == nil || *req.Stream,
		settings: settings, context: !req.Raw}
	switch {
	case req.Raw || !a.model.HasTemplate:
		if req.System != "" {
			ollamaError(w, http.StatusBadRequest, "system: the model has no chat template to put a system prompt in")
			return
		}
		if req.Think != nil && req.Think.Bool() {
			ollamaError(w, http.StatusBadRequest, "think: needs the model's chat template (not raw)")
			return
		}
		// raw has no context (refused above); a model without a chat template renders the prompt alone, as
		// Ollama's default template {{ .Prompt }}, after the context's text
		job.prompt, job.rendered = engine.Prompt{Text: contextText + req.Prompt}, contextText+req.Prompt
		if err := a.rawFormat(job, req.Format); err != nil {
			writeOllamaAPIError(w, err)
			return
		}
	default:
		var msgs []api.Message
		system := req.System
		if system == "" {
			system = a.s.opt.Defaults.System // the model's SYSTEM (Ollama's GenerateHandler)
		}
		if system != "" {
			msgs = append(msgs, api.Message{Role: "system", Content: system})
		}
		if req.Context == nil { // the model's MESSAGEs start a conversation, not a continued one (GenerateHandler)
			msgs = append(msgs, a.s.opt.Defaults.Messages...)
		}
		msgs = append(msgs, api.Message{Role: "user", Content: req.Prompt})
		res, err := a.chatPrompt(req.Model, msgs, ollamaConstraints{format: req.Format, think: req.Think})
		if err == nil {
			err = a.chatJob(job, res)
		}
		if err != nil {
			writeOllamaAPIError(w, err)
			return
		}
		if contextText != "" {
			// The context's text goes before the rendered prompt, and is tokenized with it (special tokens
			// parsed, as Ollama's runner parses the whole prompt); BOS, when the vocabulary adds it, stays first.
			job.prompt.Segments = append([]chat.Segment{{Text: contextText, Special: true}}, job.prompt.Segments...)
			job.rendered = contextText + job.rendered
		}
	}
	if req.DebugRenderOnly {
		writeOllamaJSON(w, http.StatusOK, api.GenerateResponse{Model: req.Model, CreatedAt: time.Now().UTC(),
			DebugInfo: &api.DebugInfo{RenderedTemplate: job.rendered}})
		return
	}
	a.run(w, r, job, func(p ollamaPiece, done bool) any {
		return &ollamaGenerateAnswer{GenerateResponse: api.GenerateResponse{Model: req.Model,
			CreatedAt: time.Now().UTC(), Response: p.Content, Thinking: p.Thinking, Done: done}}
	})
}

// contextText is the text a request's context (the ids of an earlier answer's context) puts before the prompt,
// as Ollama v0.17.4's GenerateHandler (server/routes.go) does when not raw: r.Detokenize(req.Context), which
// its llama.cpp runner (llm/server.go, llamaServer.Detokenize) makes of each id's piece with control tokens'
// texts (llama_token_to_piece with special true), concatenated. (Architectures Ollama runs on its own engine,
// qwen3 among them, decode with its Go tokenizer instead: the same text but for rare tokens, the unknown
// token's piece for one; bankml's pieces are llama.cpp's everywhere.) The whole prompt, this text first, is then
// tokenized as one (BOS first when the vocabulary adds it, special tokens parsed), so the ids evaluated
// are not necessarily the context's. An id outside the vocabulary, which Ollama's detokenizer indexes
// unchecked, is a 400 naming it. nil and [] give "".
func (a *ollamaAPI) contextText(ids []int) (string, error) {
	tok := a.s.m.Tokenizer
	var b strings.Builder
	for i, id := range ids {
		if id < 0 || id >= tok.NVocab() {
			return "", badRequest("context[%d]: token id %d outside the vocabulary [0, %d)", i, id, tok.NVocab())
		}
		b.Write(tok.TokenToPiece(int32(id), true))
	}
	return b.String(), nil
}

// rawFormat constrains a raw prompt's answer to Ollama's format as /completion's json_schema does ("json":
// any object; a schema converted by json_schema_to_grammar).
func (a *ollamaAPI) rawFormat(job *ollamaJob, format json.RawMessage) error {
	rf, err := responseFormat(format)
	if err != nil || rf == nil {
		return err
	}
	schema := json.RawMessage(`{"type":"object"}`)
	if js, ok := rf.(map[string]any)["json_schema"]; ok {
		schema = js.(map[string]any)["schema"].(json.RawMessage)
	}
	g, err := schemaGrammar("format", schema)
	if err != nil {
		return err
	}
	job.settings.Sampling.Grammar, job.settings.Sampling.GrammarType = g, sample.GrammarOutputFormat
	return nil
}

// loadAnswer is Ollama's answer to a request without a prompt (or
// messages): "load the model". The model is loaded for the server's
// lifetime (until the model store can load and unload models), so
// keep_alive 0 ("unload") is refused rather than pretended.
func (a *ollamaAPI) loadAnswer(w http.ResponseWriter, model string, keepAlive *api.Duration, answer func(reason string) any) {
	if keepAlive != nil && keepAlive.Duration == 0 {
		ollamaError(w, http.StatusBadRequest, "keep_alive: bankml serve keeps its model loaded for its lifetime; it cannot unload it")
		return
	}
	writeOllamaJSON(w, http.StatusOK, answer("load"))
}

// run generates the answer to job and writes it: streamed as NDJSON (a line
// per released piece of text, then the final line with done, done_reason,
// the durations in ns and bankml_receipt) or as one JSON object. The
// answer is recorded in the history (Server.finish) before its last line
// goes out; if it cannot be, the client gets the error instead of the
// receipt.
func (a *ollamaAPI) run(w http.ResponseWriter, r *http.Request, job *ollamaJob, answer func(p ollamaPiece, done bool) any) {
	eng := a.engine()
	req := engine.Request{Prompt: job.prompt, Sampling: job.settings.Sampling, NPredict: job.settings.NPredict,
		Stop: job.settings.Stop, CachePrompt: true, Slot: -1}
	if job.settings.NumCtx > 0 {
		toks, err := eng.Tokenize(job.prompt)
		if err != nil {
			ollamaError(w, http.StatusBadRequest, err.Error())
			return
		}
		if req.NPredict, err = job.settings.fitPrompt(len(toks), req.NPredict); err != nil {
			ollamaError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	ctx := r.Context()
	var stream *ndjsonStream
	if job.stream {
		stream = newNDJSONStream(w)
	}
	fail := func(ae *APIError) {
		if stream != nil {
			stream.fail(ae.HTTPStatus(), ae.Message)
		} else {
			ollamaError(w, ae.HTTPStatus(), ae.Message)
		}
	}
	onToken := func(t engine.Token) error {
		if t.Pending || t.Text == "" { // llama-server releases nothing for these
			return nil
		}
		job.x.tokenSeen(time.Now())
		if stream == nil {
			return nil
		}
		if job.answer != nil {
			diffs, err := job.answer.update(t.Text, true)
			if err != nil {
				return answerError(err)
			}
			for _, d := range diffs {
				if d.ContentDelta == "" && d.ReasoningContentDelta == "" {
					continue // tool calls go out whole, once the answer is parsed complete
				}
				if err := stream.line(answer(ollamaPiece{Content: d.ContentDelta, Thinking: d.ReasoningContentDelta}, false)); err != nil {
					return err
				}
			}
			return nil
		}
		return stream.line(answer(ollamaPiece{Content: t.Text}, false))
	}
	res, err := eng.Generate(ctx, req, onToken)
	if err != nil {
		if ctx.Err() != nil { // the client went away or the server is stopping: no answer, nothing recorded
			return
		}
		ae := a.s.generationError(err)
		if errors.Is(err, engine.ErrQueueFull) {
			// Ollama's scheduler refuses a request past its queue (OLLAMA_MAX_QUEUE) with ErrMaxQueue, which
			// handleScheduleError answers 503 in its own words.
			ae = &APIError{Status: http.StatusServiceUnavailable, Type: TypeUnavailable, Message: ollamaErrMaxQueue}
		}
		fail(ae)
		return
	}
	// Ollama flushes text held back at the end (a partial stop string, an
	// incomplete UTF-8 sequence) with the last line, so a streamed answer's
	// text is the non-streamed one.
	piece := ollamaPiece{Content: res.Unsent}
	if !job.stream {
		piece.Content = res.Text
	}
	if job.answer != nil {
		// the parsed answer: streamed, what the complete parse adds (and the tool calls); else all of it
		added := res.Unsent
		if !job.stream {
			added = res.Text
		}
		diffs, err := job.answer.update(added, false)
		if err != nil {
			fail(answerError(err))
			return
		}
		piece = ollamaPiece{}
		for _, d := range diffs {
			piece.Content += d.ContentDelta
			piece.Thinking += d.ReasoningContentDelta
		}
		if piece.ToolCalls, err = ollamaToolCalls(job.answer.msg.ToolCalls, res.FinishReason == "length"); err != nil {
			fail(answerError(err))
			return
		}
	}
	received := []byte(clientText(res.Text))
	if job.answer != nil {
		received = receiptAnswer(encodedAnswer(job.answer.msg, clientText))
	}
	rc, err := a.s.finish(job.x, usageOf(res), received)
	if err != nil {
		fail(asAPIError(err))
		return
	}
	final := answer(piece, true)
	m := ollamaMetrics(res, time.Since(job.x.received))
	switch f := final.(type) {
	case *ollamaChatAnswer:
		f.DoneReason, f.Metrics, f.Receipt = res.FinishReason, m, &rc
	case *ollamaGenerateAnswer:
		f.DoneReason, f.Metrics, f.Receipt = res.FinishReason, m, &rc
		if job.context {
			f.Context = a.generateContext(job.rendered, res.Text)
		}
	}
	if stream != nil {
		_ = stream.line(final)
	} else {
		writeOllamaJSON(w, http.StatusOK, final)
	}
}

// generateContext is Ollama's context of an /api/generate answer (GenerateHandler, not in raw mode): the
// rendered prompt and the whole generated text (thinking included, before the answer's parse) tokenized
// again as one text, without BOS and with special tokens parsed (Ollama's Tokenize: add_special false,
// parse_special true), so not necessarily the ids the model ran.
func (a *ollamaAPI) generateContext(prompt, answer string) []int {
	toks := a.s.m.Tokenizer.Tokenize(prompt+answer, false, true)
	out := make([]int, len(toks))
	for i, t := range toks {
		out[i] = int(t)
	}
	return out
}

// ollamaMetrics are Ollama's counts and durations (ns) of an answer:
// prompt_eval_count the prompt's tokens (cached ones included),
// prompt_eval_duration and eval_duration llama-server's timings
// (prompt_ms, predicted_ms), eval_count the generated tokens as llama-server
// counts them (an end-of-generation token included), total_duration from
// the request's arrival to the answer's end, load_duration the rest of it
// (waiting for a slot, rendering, tokenizing; the model itself is loaded
// before the port opens).
func ollamaMetrics(res engine.Result, total time.Duration) api.Metrics {
	ms := func(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }
	m := api.Metrics{
		TotalDuration:      total,
		PromptEvalCount:    res.PromptTokens,
		PromptEvalDuration: ms(res.Timings.PromptMS),
		EvalCount:          len(res.Tokens),
		EvalDuration:       ms(res.Timings.PredictedMS),
	}
	m.LoadDuration = max(1, total-m.PromptEvalDuration-m.EvalDuration)
	return m
}

// handleRoot is GET and HEAD /.
func (a *ollamaAPI) handleRoot(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(ollamaRunning))
	}
}

// handleVersion is GET /api/version.
func (a *ollamaAPI) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeOllamaJSON(w, http.StatusOK, map[string]string{"version": OllamaVersion})
}

// ollamaTagged is name with Ollama's default tag ":latest" when it has no tag
// (no ':' after its last '/'), as Ollama's model name parsing fills the tag in
// (types/model/name.go's ParseName with its default "latest"); a tagged name
// is kept as it is.
func ollamaTagged(name string) string {
	if strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		return name
	}
	return name + ":latest"
}

// tagged is the name Ollama clients list: the served name with Ollama's
// default tag.
func (m ollamaModel) tagged() string {
	if strings.Contains(m.Name, ":") {
		return m.Name
	}
	return m.Name + ":latest"
}
