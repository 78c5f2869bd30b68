package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Continuation says how a final assistant message is continued (llama.cpp's common_chat_continuation).
type Continuation uint8

const (
	// ContinueNone renders every message as a finished turn.
	ContinueNone Continuation = iota
	// ContinueAuto continues the reasoning when the final message has only reasoning_content, else its content.
	ContinueAuto
	// ContinueReasoning reopens the final message's reasoning: the prompt ends inside its thinking block.
	ContinueReasoning
	// ContinueContent ends the prompt with the final message's content, after its closed thinking block.
	ContinueContent
)

// Inputs are the variables of one rendering, those of llama.cpp's common_chat_templates_inputs that reach the
// prompt. [ParseRequest] fills them from a request as llama-server does.
type Inputs struct {
	Messages []Message
	Tools    []Tool

	// AddGenerationPrompt ends the prompt with the opening of the assistant's turn (llama-server's default: true).
	AddGenerationPrompt bool

	// Continue continues the final assistant message instead (llama-server sets ContinueAuto when the last
	// message is an assistant's); the final message is then rendered by bankml, not by the template: the
	// template's generation prompt, the thinking markers around its reasoning, then its content.
	Continue Continuation

	// EnableThinking is the template's enable_thinking; nil takes llama-server's default, which is
	// [Template.SupportsThinking].
	EnableThinking *bool

	// Kwargs are chat_template_kwargs: variable name to JSON text, given to the template as variables (they
	// replace any other variable of that name). A boolean "preserve_reasoning" also sets preserve_thinking,
	// clear_thinking, truncate_history_thinking and drop_thinking; a non-empty string "reasoning_effort" also sets
	// reasoning_strength (caps_apply_preserve_reasoning, caps_apply_reasoning_effort).
	Kwargs map[string]string

	// Now is the time of strftime_now and of the datetime ("%b %d %Y") and date_string ("%d %b %Y") variables,
	// in its own location (llama.cpp uses the local time of the render); the zero value means time.Now().
	Now time.Time

	// ToolChoice is tool_choice: auto (the zero value), required or none.
	ToolChoice ToolChoice

	// NamedTool is the function an OpenAI tool_choice {"type": "function", "function": {"name": ...}} names:
	// the prompt shows every tool, the parser and grammar allow calls of that one only, and a call is required
	// as with ToolChoiceRequired (the autoparser's grammar: content without the call marker may come first).
	// llama-server reads such a tool_choice as "auto" (json_value's default for a non-string); bankml honours
	// the constraint instead (a deliberate difference).
	NamedTool string

	// ParallelToolCalls is parallel_tool_calls; nil takes the template's supports_parallel_tool_calls, as
	// llama-server does.
	ParallelToolCalls *bool

	// JSONSchema is the response format's JSON schema (JSON text; "" for none): the answer is constrained to
	// it, optionally in a ```json fence, after the template's reasoning.
	JSONSchema string

	// Grammar is the request's own GBNF grammar, only checked here: a grammar with tools (and tool_choice other
	// than none) is refused, as common_chat_templates_apply refuses it.
	Grammar string

	// ReasoningFormat decides whether reasoning is split from the content (llama-server's default, which
	// ParseRequest sets, is ReasoningDeepseek; the zero value is ReasoningNone).
	ReasoningFormat ReasoningFormat
}

// Segment is a piece of the prompt: Special says whether it is template text, to be tokenized with special-token
// parsing, or text that came from the request (content, reasoning, tool calls and results, tool definitions,
// kwargs) holding the text of a control token, to be tokenized without, so that it stays text.
type Segment struct {
	Text    string
	Special bool
}

// Result is a rendered prompt.
type Result struct {
	// Prompt is the text llama-server's /apply-template returns: the template's output, less a leading BOS text
	// when the tokenizer adds BOS (and a trailing EOS text when it adds EOS), plus the continued message.
	Prompt string

	// GenerationPrompt is what add_generation_prompt adds at the end (the common_chat_params field), with the
	// continued message when there is one.
	GenerationPrompt string

	// Segments cut Prompt into template text and request text; their texts concatenate to Prompt. llama-server
	// tokenizes the whole prompt with parse_special, so a control token's text inside a message becomes that
	// token; bankml's engine tokenizes the segments instead (special parsing only where Special).
	Segments []Segment

	// Parser parses the model's answer for this request (common_chat_parse with the request's parser).
	Parser *Parser

	// Grammar constrains the answer (GBNF) when the request has a response format or tools: lazy for
	// tool_choice auto (GrammarLazy; it wakes on a Trigger), else from the first token; "" for none.
	Grammar     string
	GrammarLazy bool
	Triggers    []Trigger

	// PreservedTokens are the template's markers that must be single tokens for the triggers to fire.
	PreservedTokens []string

	// AdditionalStops are stop strings the template adds.
	AdditionalStops []string

	// ThinkingStartTag and ThinkingEndTags are the reasoning markers (common_chat_params' thinking_start_tag and
	// thinking_end_tags): "" and none for a template without reasoning.
	ThinkingStartTag string
	ThinkingEndTags  []string
}

// Apply renders a conversation the way llama-server v0.5.0 does (common_chat_templates_apply with use_jinja, the
// server's default): the messages become llama.cpp's JSON (an empty reasoning_content left out, content null as
// "", typed content joined or wrapped to fit the template's capabilities), a "developer" role becomes "system",
// a first system message the template ignores is merged into the next message, tool-call arguments are parsed
// to objects for templates that read them so, and the template runs with messages, tools, bos_token, eos_token,
// enable_thinking, add_generation_prompt (only when true), datetime, date_string and the kwargs. Errors wrap
// [ErrRequest] for bad messages, [ErrTemplate] when the template fails or raises (its message is kept) or is one
// of the families llama.cpp renders through a specialized handler that bankml does not implement.
func (t *Template) Apply(in Inputs) (Result, error) {
	p, err := t.prepare(in)
	if err != nil {
		return Result{}, err
	}
	res, err := p.r.result(p.addGen, p.cont, &p.last, &p.parserGenerationPrompt)
	if err != nil {
		return Result{}, err
	}
	res.Segments, err = p.r.segments(res.Prompt, p.addGen, p.cont, &p.last)
	if err != nil {
		return Result{}, err
	}
	if err := p.r.t.generateFor(&res, p, &in); err != nil {
		return Result{}, err
	}
	return res, nil
}

// generateFor adds the parser, the grammar and its triggers to a rendered prompt (generate_parser past the
// prompt). The parser continues the generation prompt as rendered before a continued message is appended.
func (t *Template) generateFor(res *Result, p *prepared, in *Inputs) error {
	gi, err := t.genInputs(in)
	if err != nil {
		return err
	}
	g, err := t.an.generate(gi, p.parserGenerationPrompt, t.gb)
	if err != nil {
		return err
	}
	if len(in.Tools) > 0 && in.ToolChoice != ToolChoiceNone && !(t.caps.ToolCalls && t.an.tools.format.mode != toolFormatNone) {
		// llama-server answers unconstrained text the template's parser takes as content (checked after the
		// parser generation, so that a request it refuses is refused with its message)
		return reqErr("tools: the model's chat template renders no tool calls, so bankml cannot offer the tools to the model or parse its calls (send tool_choice \"none\" or no tools)")
	}
	res.Parser = &Parser{arena: g.parser, generationPrompt: res.GenerationPrompt}
	res.Grammar, res.GrammarLazy, res.Triggers = g.grammar, g.grammarLazy, g.triggers
	res.PreservedTokens, res.AdditionalStops = g.preservedTokens, g.additionalStops
	if t.SupportsThinking() {
		res.ThinkingStartTag = trimWhitespace(t.an.reasoning.start)
		if e := trimWhitespace(t.an.reasoning.end); e != "" {
			res.ThinkingEndTags = []string{e}
		}
	}
	return nil
}

// genInputs turns the request's tools and response format into the parsers' inputs: each tool's parameters
// (common_chat_tool_parameters: {"type": "object", "properties": {}} for none or {}) and the response format
// parsed as schemas. A schema outside the converter's subset fails as the reference's parser generation fails.
func (t *Template) genInputs(in *Inputs) (*genInputs, error) {
	gi := &genInputs{toolChoice: in.ToolChoice, reasoningFormat: in.ReasoningFormat, parallel: t.caps.ParallelToolCalls}
	if in.ParallelToolCalls != nil {
		gi.parallel = *in.ParallelToolCalls
	}
	fail := func(err error) error {
		return fmt.Errorf("%w: Unable to generate parser for this template. Automatic parser generation failed: %v", ErrRequest, err)
	}
	if len(in.Tools) > 0 && in.ToolChoice != ToolChoiceNone && in.Grammar != "" {
		return nil, reqErr("Cannot specify grammar with tools")
	}
	if in.NamedTool != "" {
		gi.toolChoice = ToolChoiceRequired
	}
	for i, tool := range in.Tools {
		if in.NamedTool != "" && tool.Name != in.NamedTool {
			continue
		}
		params := strings.TrimSpace(tool.Parameters)
		if n, err := parseJSON([]byte(params)); params == "" || (err == nil && (n.kind == jNull || (n.kind == jObject && len(n.keys) == 0))) {
			params = `{"type":"object","properties":{}}`
		}
		s, err := t.gb.parseSchema([]byte(params))
		if uerr := unsatisfiable(fmt.Sprintf("tools[%d].function.parameters", i), err); uerr != nil {
			return nil, uerr
		}
		if err != nil {
			return nil, fail(err)
		}
		gi.tools = append(gi.tools, toolDef{name: tool.Name, params: s})
	}
	if in.NamedTool != "" && len(gi.tools) == 0 {
		return nil, reqErr("tool_choice names the function %q, which is not among the tools", in.NamedTool)
	}
	if js := strings.TrimSpace(in.JSONSchema); js != "" {
		n, err := parseJSON([]byte(js))
		if err != nil {
			return nil, reqErr("json_schema: %v", err)
		}
		switch {
		case n.kind != jObject:
			// the reference's template skips it (unconstrained); bankml refuses it, as ParseRequest does
			if err := checkSchema("json_schema", js); err != nil {
				return nil, err
			}
			return nil, reqErr("json_schema: expected an object")
		case len(n.keys) > 0:
			gi.jsonSchema, err = t.gb.parseSchema([]byte(js))
			if uerr := unsatisfiable("json_schema", err); uerr != nil {
				return nil, uerr
			}
			if err != nil {
				return nil, fail(err)
			}
		}
	}
	return gi, nil
}

// prepared is a request made ready for rendering.
type prepared struct {
	r      *renderer
	addGen bool
	cont   Continuation
	last   Message
	// parserGenerationPrompt is the generation prompt before a continued message (the parser's prefix)
	parserGenerationPrompt string
}

// prepare does Apply's work up to the renders.
func (t *Template) prepare(in Inputs) (*prepared, error) {
	tmpl := t
	if len(in.Tools) > 0 && t.toolUse != nil {
		tmpl = t.toolUse
	}
	if fam := specializedFamily(tmpl.source); fam != "" {
		return nil, fmt.Errorf("%w: llama.cpp renders %s templates through a specialized handler that bankml does not implement", ErrTemplate, fam)
	}
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	enableThinking := tmpl.SupportsThinking()
	if in.EnableThinking != nil {
		enableThinking = *in.EnableThinking
	}
	msgs := in.Messages
	if strings.Contains(tmpl.source, "You have access to the following functions in JSONSchema format") {
		msgs = trimAll(msgs) // StepFun: llama.cpp trims every content before rendering
	}
	messages, err := tmpl.messagesJSON(msgs)
	if err != nil {
		return nil, err
	}
	tools, err := toolsJSON(in.Tools)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRequest, err)
	}
	addGen := in.AddGenerationPrompt
	cont := in.Continue
	var last Message
	if cont != ContinueNone {
		addGen = false
		if len(in.Messages) > 0 {
			last = in.Messages[len(in.Messages)-1]
			messages.items = messages.items[:len(messages.items)-1]
			if cont == ContinueAuto {
				cont = ContinueContent
				if last.ReasoningContent != "" && last.Content == "" && len(last.Parts) == 0 {
					cont = ContinueReasoning
				}
			}
		}
	}
	if !strings.Contains(tmpl.source, "<|channel|>") {
		for _, m := range messages.items {
			if r, ok := m.get("role"); ok && r.kind == jString && r.s == "developer" {
				m.set("role", jstr("system"))
			}
		}
	}
	if !tmpl.caps.SystemRole {
		if err := mergeSystem(messages); err != nil {
			return nil, err
		}
	}
	if tmpl.caps.ToolCalls {
		for _, m := range messages.items {
			if _, ok := m.get("tool_calls"); ok {
				if _, ok := m.get("content"); !ok {
					m.set("content", jstr(""))
				}
			}
		}
	}
	if tmpl.caps.ObjectArguments {
		if err := parseArguments(messages); err != nil {
			return nil, err
		}
	}
	extra := jobj().set("datetime", jstr(mustStrftime("%b %d %Y", now))).set("date_string", jstr(mustStrftime("%d %b %Y", now)))
	for _, k := range sortedKeys(in.Kwargs) {
		v, err := parseJSON([]byte(in.Kwargs[k]))
		if err != nil {
			return nil, fmt.Errorf("%w: chat_template_kwargs %q: %v", ErrRequest, k, err)
		}
		extra.set(k, v)
	}
	r := &renderer{t: tmpl, messages: messages, tools: tools, enableThinking: enableThinking, extra: extra, now: now}
	return &prepared{r: r, addGen: addGen, cont: cont, last: last}, nil
}

// renderer holds one Apply's prepared variables.
type renderer struct {
	t              *Template
	messages       *node
	tools          *node
	enableThinking bool
	extra          *node
	now            time.Time
}

// result is the prompt of the autoparser's generate_parser: the template's output, then for a continuation the
// generation prompt (what add_generation_prompt adds), cut before the template's thinking start marker, the
// marker, the message's reasoning, the end marker when the content follows, and the content.
func (r *renderer) result(addGen bool, cont Continuation, last *Message, rawGP *string) (Result, error) {
	prompt, err := r.apply(r.messages, addGen)
	if err != nil {
		return Result{}, err
	}
	gp, err := r.generationPrompt()
	if err != nil {
		return Result{}, err
	}
	if rawGP != nil {
		*rawGP = gp
	}
	if cont != ContinueNone && !last.empty() {
		start, end := r.t.an.reasoning.start, r.t.an.reasoning.end
		if start != "" {
			if i := strings.Index(gp, start); i >= 0 {
				gp = gp[:i]
			}
			gp += start + last.ReasoningContent
			if cont == ContinueContent {
				gp += end
			}
		}
		if cont == ContinueContent {
			gp += last.renderContent()
		}
		prompt += gp
	}
	return Result{Prompt: prompt, GenerationPrompt: gp}, nil
}

// generationPrompt is common_chat_template_generation_prompt: the output with add_generation_prompt past the
// longest common prefix of the outputs with and without it.
func (r *renderer) generationPrompt() (string, error) {
	without, err := r.apply(r.messages, false)
	if err != nil {
		return "", err
	}
	with, err := r.apply(r.messages, true)
	if err != nil {
		return "", err
	}
	n := 0
	for n < len(without) && n < len(with) && without[n] == with[n] {
		n++
	}
	return with[n:], nil
}

// apply is common_chat_template_direct_apply_impl: the template's variables in llama.cpp's order, the render,
// then the BOS and EOS texts removed where the tokenizer adds them.
func (r *renderer) apply(messages *node, addGen bool) (string, error) {
	v := r.t.vocab
	ctx := r.context(messages, addGen)
	if err := escapeSpaces(ctx); err != nil {
		return "", err
	}
	if err := checkStripInputs(r.t, ctx); err != nil {
		return "", err
	}
	out, err := r.t.prog.render(ctx, r.now)
	out = unescapeSpaces(out)
	if err != nil {
		if errors.Is(err, errRaised) {
			return "", fmt.Errorf("%w: %v", ErrTemplate, err)
		}
		return "", fmt.Errorf("%w: rendering failed: %v", ErrTemplate, err)
	}
	if v.AddBOS && strings.HasPrefix(out, v.BOS) {
		out = out[len(v.BOS):]
	}
	if v.AddEOS && strings.HasSuffix(out, v.EOS) {
		out = out[:len(out)-len(v.EOS)]
	}
	return out, nil
}

// context is the template's variables for one render, in the order direct_apply sets them.
func (r *renderer) context(messages *node, addGen bool) *node {
	v := r.t.vocab
	ctx := jobj()
	if pr, ok := r.extra.get("preserve_reasoning"); ok && pr.kind == jBool {
		setPreserveReasoning(ctx, pr.b)
	}
	if re, ok := r.extra.get("reasoning_effort"); ok && re.kind == jString && re.s != "" {
		ctx.set("reasoning_effort", jstr(re.s)).set("reasoning_strength", jstr(re.s))
	}
	ctx.set("messages", messages.clone()).set("bos_token", jstr(v.BOS)).set("eos_token", jstr(v.EOS)).
		set("enable_thinking", jbool(r.enableThinking))
	if r.tools != nil {
		ctx.set("tools", r.tools.clone())
	}
	for i, k := range r.extra.keys {
		ctx.set(k, r.extra.vals[i].clone())
	}
	if addGen {
		ctx.set("add_generation_prompt", jbool(true))
	}
	return ctx
}

// messagesJSON is render_message_to_json: each message's JSON, then typed content joined into a string for a
// template that reads only strings, or a string wrapped as one text part for a template that reads only parts.
func (t *Template) messagesJSON(msgs []Message) (*node, error) {
	onlyString := t.caps.StringContent && !t.caps.TypedContent
	onlyTyped := !t.caps.StringContent && t.caps.TypedContent
	out := jarr()
	for i := range msgs {
		m, err := msgs[i].toJSON()
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", ErrRequest, i, err)
		}
		if c, ok := m.get("content"); ok {
			switch {
			case onlyTyped && c.kind == jString:
				m.set("content", jarr(jobj().set("type", jstr("text")).set("text", jstr(c.s))))
			case onlyString && c.kind == jArray:
				m.set("content", jstr(concatParts(c)))
			}
		}
		out.items = append(out.items, m)
	}
	return out, nil
}

// mergeSystem is workaround::system_message_not_supported: a first system message goes in front of the next
// message's content with a newline between, or is dropped when it is the only message.
func mergeSystem(messages *node) error {
	if len(messages.items) == 0 {
		return nil
	}
	first := messages.items[0]
	if r, _ := first.get("role"); r == nil || r.kind != jString || r.s != "system" {
		return nil
	}
	if len(messages.items) > 1 {
		a, _ := first.get("content")
		b, _ := messages.items[1].get("content")
		if a == nil || b == nil || a.kind != jString || b.kind != jString {
			return fmt.Errorf("%w: cannot merge a system message with typed content into the next message for a template without a system role", ErrRequest)
		}
		messages.items[1].set("content", jstr(a.s+"\n"+b.s))
	}
	messages.items = messages.items[1:]
	return nil
}

// parseArguments is workaround::func_args_not_string: every string argument becomes the JSON it holds.
func parseArguments(messages *node) error {
	for _, m := range messages.items {
		calls, ok := m.get("tool_calls")
		if !ok || calls.kind != jArray {
			continue
		}
		for _, c := range calls.items {
			fn, ok := c.get("function")
			if !ok {
				continue
			}
			args, ok := fn.get("arguments")
			if !ok || args.kind != jString {
				continue
			}
			v, err := parseJSON([]byte(args.s))
			if err != nil {
				return fmt.Errorf("%w: Failed to parse tool call arguments as JSON: %v", ErrRequest, err)
			}
			fn.set("arguments", v)
		}
	}
	return nil
}

// trimAll is workaround::trim_all_content: content, reasoning and text parts trimmed of white space.
func trimAll(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.Content = trimWhitespace(m.Content)
		m.ReasoningContent = trimWhitespace(m.ReasoningContent)
		m.Parts = append([]Part(nil), m.Parts...)
		for j := range m.Parts {
			if m.Parts[j].Type == "text" {
				m.Parts[j].Text = trimWhitespace(m.Parts[j].Text)
			}
		}
		out[i] = m
	}
	return out
}

// trimWhitespace is llama.cpp's trim_whitespace: the ASCII white space " \t\n\r\v\f" removed at both ends.
func trimWhitespace(s string) string { return strings.Trim(s, " \t\n\r\v\f") }

func mustStrftime(format string, t time.Time) string {
	s, _ := strftime(format, t)
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// std::map iterates in key order
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// specializedFamily names the template families that common_chat_try_specialized_template hands to a dedicated
// handler (which may rewrite the messages before rendering), by the same source tests, or "" for the rest.
func specializedFamily(src string) string {
	has := strings.Contains
	switch {
	case has(src, "[SYSTEM_PROMPT]") && has(src, "[TOOL_CALLS]") && has(src, "[ARGS]") && !has(src, "[CALL_ID]"):
		return "Ministral/Magistral Large 3"
	case has(src, "<|channel|>"):
		return "GPT-OSS"
	case has(src, "<atem:function_calls>") && has(src, "<|eom|>"):
		return "Muse Glimmer"
	case has(src, ">>>all") && has(src, ">>>${recipient}"):
		return "Functionary v3.2"
	case has(src, "<|tool_calls_section_begin|>") && has(src, "<|tool_call_begin|>"):
		return "Kimi K2"
	case has(src, "<|open|>") && has(src, "<|close|>") && has(src, "<|end_of_msg|>"):
		return "Kimi K3"
	case has(src, "<role>ASSISTANT</role>") && has(src, "<arg_key>"):
		return "Ling 3.0"
	case has(src, "<|START_TEXT|>") && has(src, "<|START_ACTION|>"):
		return "Cohere2 MoE"
	case has(src, "<|tool_list_start|>") && has(src, "<|tool_list_end|>"), has(src, "List of tools: [") && !has(src, "<|tool_list_start|>"):
		return "LFM2"
	case has(src, "<|role_sep|>") && has(src, "<|message_sep|>") && !has(src, "<|function_call|>"):
		return "GigaChatV3"
	case has(src, "]<]minimax[>[") && has(src, "<tool_call>") && has(src, "<invoke name="):
		return "MiniMax-M3"
	case has(src, "dsml_token") && has(src, "DSML") && (has(src, "function_calls") || has(src, "tool_calls")):
		return "DeepSeek V3.2/V4"
	case has(src, "'<|tool_call>call:'"):
		return "Gemma4"
	case has(src, "Tool usage guidelines:") && has(src, `<function name="`) && has(src, `<param name="`):
		return "MiniCPM5"
	case has(src, "<tool_call>") && has(src, "<function=") && has(src, "<parameter=") && !has(src, "'<tool_call><function=' ~ tool_call.name ~ '>'"):
		return "Qwen3-Coder"
	}
	return ""
}

// segments cuts the prompt into template text and request text. It renders the conversation a second time with
// every control-token text inside the request's strings replaced by filler bytes of the same length (0x7f, DEL,
// which no token text holds and which no JSON escaping, case mapping or stripping changes); the bytes where the two prompts differ are request text. When the template's output
// depends on those texts beyond copying them (the two prompts differ in length), the cut is refused: there is no
// sound way then to tell which markers the template wrote.
func (r *renderer) segments(prompt string, addGen bool, cont Continuation, last *Message) ([]Segment, error) {
	control := r.t.vocab.Control
	if len(control) == 0 || prompt == "" {
		return wholeSegment(prompt), nil
	}
	found := false
	defang := func(s string) string {
		for _, c := range control {
			if strings.Contains(s, c) {
				found = true
				s = strings.ReplaceAll(s, c, strings.Repeat("\x7f", len(c)))
			}
		}
		return s
	}
	alt := *r
	alt.messages = defangNode(r.messages.clone(), defang)
	if r.tools != nil {
		alt.tools = defangNode(r.tools.clone(), defang)
	}
	alt.extra = jobj()
	for i, k := range r.extra.keys {
		if k == "datetime" || k == "date_string" {
			alt.extra.set(k, r.extra.vals[i])
			continue
		}
		alt.extra.set(k, defangNode(r.extra.vals[i].clone(), defang))
	}
	altLast := *last
	altLast.Content = defang(last.Content)
	altLast.ReasoningContent = defang(last.ReasoningContent)
	altLast.Parts = append([]Part(nil), last.Parts...)
	for i := range altLast.Parts {
		altLast.Parts[i].Text = defang(altLast.Parts[i].Text)
	}
	if !found {
		return wholeSegment(prompt), nil
	}
	res, err := alt.result(addGen, cont, &altLast, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot separate request text from template text: %v", ErrTemplate, err)
	}
	other := res.Prompt
	if len(other) != len(prompt) {
		return nil, fmt.Errorf("%w: cannot separate request text from template text: the template's output depends on the control-token text in the request", ErrTemplate)
	}
	var segs []Segment
	i := 0
	for i < len(prompt) {
		j := i
		diff := prompt[i] != other[i]
		for j < len(prompt) && (prompt[j] != other[j]) == diff {
			j++
		}
		segs = append(segs, Segment{Text: prompt[i:j], Special: !diff})
		i = j
	}
	return segs, nil
}

func wholeSegment(prompt string) []Segment {
	if prompt == "" {
		return nil
	}
	return []Segment{{Text: prompt, Special: true}}
}

func defangNode(n *node, f func(string) string) *node {
	switch n.kind {
	case jString:
		n.s = f(n.s)
	case jArray:
		for _, it := range n.items {
			defangNode(it, f)
		}
	case jObject:
		for _, v := range n.vals {
			defangNode(v, f)
		}
	}
	return n
}
