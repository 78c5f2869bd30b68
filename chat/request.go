package chat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bankml/bankml/grammar"
)

// ErrRequest is wrapped by every error about a malformed request (messages, tools, options).
var ErrRequest = errors.New("chat: bad request")

func reqErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRequest, fmt.Sprintf(format, args...))
}

// ParseRequest reads a chat request as llama-server's /v1/chat/completions and /apply-template read it
// (tools/server/server-common.cpp oaicompat_chat_params_parse, with llama-server's default options): an OpenAI
// body {"messages": [...], "tools": [...], "add_generation_prompt": bool, "chat_template_kwargs": {...},
// "reasoning_effort": "...", "continue_final_message": ...}, or a bare array of messages. Its rules:
//   - every message has a role; a non-assistant message needs content; an assistant message content or
//     tool_calls; content is a string, null or an array of {"type": "text", "text": ...} parts;
//   - tool calls need type "function" and function.name; arguments given as an object are kept as compact JSON;
//   - add_generation_prompt defaults to true;
//   - a final assistant message is continued (llama-server's --prefill-assistant, on by default):
//     Continue becomes ContinueAuto and add_generation_prompt false; two final assistant messages are refused;
//   - chat_template_kwargs are kept as JSON texts on top of the server's default {"preserve_reasoning": true};
//     an "enable_thinking" among them sets EnableThinking (a string there is refused);
//   - reasoning_effort "none" turns thinking off, another value becomes the reasoning_effort kwarg;
//   - tool_choice, parallel_tool_calls, response_format, json_schema, grammar and reasoning_format as
//     parseConstraints reads them.
//
// Errors wrap [ErrRequest].
func ParseRequest(data []byte) (Inputs, error) {
	root, err := parseJSON(data)
	if err != nil {
		return Inputs{}, reqErr("not JSON: %v", err)
	}
	body := root
	if root.kind == jArray {
		body = jobj().set("messages", root)
	}
	if body.kind != jObject {
		return Inputs{}, reqErr("expected an object with \"messages\" or an array of messages")
	}
	msgsNode, ok := body.get("messages")
	if !ok {
		return Inputs{}, reqErr("'messages' is required")
	}
	if msgsNode.kind != jArray {
		return Inputs{}, reqErr("Expected 'messages' to be an array")
	}
	in := Inputs{AddGenerationPrompt: true, Kwargs: map[string]string{"preserve_reasoning": "true"}}
	if in.Messages, err = parseMessages(msgsNode); err != nil {
		return Inputs{}, err
	}
	if tools, ok := body.get("tools"); ok && tools.kind != jNull {
		if in.Tools, err = parseTools(tools); err != nil {
			return Inputs{}, err
		}
	}
	if v, ok := body.get("add_generation_prompt"); ok && v.kind == jBool {
		in.AddGenerationPrompt = v.b
	}
	if v, ok := body.get("continue_final_message"); ok {
		in.Continue = parseContinuation(v)
	}
	n := len(in.Messages)
	if in.Continue == ContinueNone && n > 0 && in.Messages[n-1].Role == "assistant" {
		if n >= 2 && in.Messages[n-2].Role == "assistant" {
			return Inputs{}, reqErr("Cannot have 2 or more assistant messages at the end of the list.")
		}
		in.Continue = ContinueAuto
		in.AddGenerationPrompt = false
	}
	if in.Continue != ContinueNone && in.AddGenerationPrompt {
		return Inputs{}, reqErr("Cannot set both add_generation_prompt and continue_final_message to true.")
	}
	if in.Continue != ContinueNone && n > 0 && in.Messages[n-1].Role == "assistant" && len(in.Messages[n-1].ToolCalls) > 0 {
		return Inputs{}, reqErr("Cannot continue an assistant message that contains tool calls.")
	}
	if kw, ok := body.get("chat_template_kwargs"); ok && kw.kind == jObject {
		for i, k := range kw.keys {
			s, err := kw.vals[i].dumpString()
			if err != nil {
				return Inputs{}, reqErr("chat_template_kwargs.%s: %v", k, err)
			}
			in.Kwargs[k] = s
		}
	}
	switch et := in.Kwargs["enable_thinking"]; {
	case et == "true":
		in.EnableThinking = new(true)
	case et == "false":
		in.EnableThinking = new(false)
	case strings.HasPrefix(et, `"`):
		return Inputs{}, reqErr(`invalid type for "enable_thinking" (expected boolean, got string)`)
	}
	if err := parseConstraints(body, &in); err != nil {
		return Inputs{}, err
	}
	if v, ok := body.get("reasoning_effort"); ok && v.kind == jString {
		switch v.s {
		case "none":
			in.EnableThinking = new(false)
			delete(in.Kwargs, "reasoning_effort")
		case "":
		default:
			s, _ := jstr(v.s).dumpString()
			in.Kwargs["reasoning_effort"] = s
		}
	}
	return in, nil
}

// parseContinuation is common_chat_continuation_parse: true is ContinueAuto, "reasoning_content" and "content" name
// their modes, anything else is ContinueNone.
func parseContinuation(v *node) Continuation {
	switch {
	case v.kind == jBool && v.b:
		return ContinueAuto
	case v.kind == jString && v.s == "reasoning_content":
		return ContinueReasoning
	case v.kind == jString && v.s == "content":
		return ContinueContent
	}
	return ContinueNone
}

func stringField(m *node, key string) (string, bool, error) {
	v, ok := m.get(key)
	if !ok {
		return "", false, nil
	}
	if v.kind != jString {
		return "", true, reqErr("%q must be a string", key)
	}
	return v.s, true, nil
}

// parseMessages is llama-server's check of the messages followed by common_chat_msgs_parse_oaicompat.
func parseMessages(arr *node) ([]Message, error) {
	out := make([]Message, 0, len(arr.items))
	for i, mn := range arr.items {
		m, err := parseMessage(mn)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func parseMessage(mn *node) (Message, error) {
	var m Message
	if mn.kind != jObject {
		return m, reqErr("Expected 'message' to be an object")
	}
	role, ok, err := stringField(mn, "role")
	if err != nil {
		return m, err
	}
	if !ok {
		return m, reqErr("Missing 'role' in message")
	}
	m.Role = role
	content, hasContent := mn.get("content")
	calls, hasCalls := mn.get("tool_calls")
	if role != "assistant" && !hasContent {
		return m, reqErr("All non-assistant messages must contain 'content'")
	}
	if role == "assistant" && !hasContent && !hasCalls {
		return m, reqErr("Assistant message must contain either 'content' or 'tool_calls'!")
	}
	if hasContent {
		switch content.kind {
		case jString:
			m.Content = content.s
		case jNull:
		case jArray:
			for _, p := range content.items {
				if p.kind != jObject {
					return m, reqErr("content part is not an object")
				}
				typ, ok, err := stringField(p, "type")
				if err != nil {
					return m, err
				}
				if !ok {
					return m, reqErr("Missing content part type")
				}
				if typ != "text" {
					return m, reqErr("unsupported content[].type %q", typ)
				}
				text, ok, err := stringField(p, "text")
				if err != nil {
					return m, err
				}
				if !ok {
					return m, reqErr("content part without \"text\"")
				}
				m.Parts = append(m.Parts, Part{Type: typ, Text: text})
			}
		default:
			return m, reqErr("Expected 'content' to be a string or an array")
		}
	}
	if hasCalls {
		if calls.kind != jArray {
			return m, reqErr("'tool_calls' must be an array")
		}
		for _, c := range calls.items {
			tc, err := parseToolCall(c)
			if err != nil {
				return m, err
			}
			m.ToolCalls = append(m.ToolCalls, tc)
		}
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"reasoning_content", &m.ReasoningContent}, {"name", &m.Name}, {"tool_call_id", &m.ToolCallID}} {
		v, _, err := stringField(mn, f.key)
		if err != nil {
			return m, err
		}
		*f.dst = v
	}
	return m, nil
}

func parseToolCall(c *node) (ToolCall, error) {
	var tc ToolCall
	if c.kind != jObject {
		return tc, reqErr("tool call is not an object")
	}
	typ, ok, err := stringField(c, "type")
	if err != nil {
		return tc, err
	}
	if !ok {
		return tc, reqErr("Missing tool call type")
	}
	if typ != "function" {
		return tc, reqErr("Unsupported tool call type %q", typ)
	}
	fn, ok := c.get("function")
	if !ok || fn.kind != jObject {
		return tc, reqErr("Missing tool call function")
	}
	name, ok, err := stringField(fn, "name")
	if err != nil {
		return tc, err
	}
	if !ok {
		return tc, reqErr("Missing tool call name")
	}
	tc.Name = name
	args, ok := fn.get("arguments")
	switch {
	case !ok:
		return tc, reqErr("tool call %q has no arguments", name)
	case args.kind == jString:
		tc.Arguments = args.s
	default:
		if tc.Arguments, err = args.dumpString(); err != nil {
			return tc, reqErr("tool call %q arguments: %v", name, err)
		}
	}
	if tc.ID, _, err = stringField(c, "id"); err != nil {
		return tc, err
	}
	return tc, nil
}

// parseTools is common_chat_tools_parse_oaicompat: [{"type": "function", "function": {"name", "description",
// "parameters"}}].
func parseTools(arr *node) ([]Tool, error) {
	if arr.kind != jArray {
		return nil, reqErr("Expected 'tools' to be an array")
	}
	var out []Tool
	for i, t := range arr.items {
		if t.kind != jObject {
			return nil, reqErr("tool %d is not an object", i)
		}
		typ, ok, err := stringField(t, "type")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, reqErr("Missing tool type")
		}
		if typ != "function" {
			return nil, reqErr("Unsupported tool type %q", typ)
		}
		fn, ok := t.get("function")
		if !ok || fn.kind != jObject {
			return nil, reqErr("Missing tool function")
		}
		name, ok, err := stringField(fn, "name")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, reqErr("tool %d has no name", i)
		}
		desc, _, err := stringField(fn, "description")
		if err != nil {
			return nil, err
		}
		params := "{}"
		if p, ok := fn.get("parameters"); ok {
			if params, err = p.dumpString(); err != nil {
				return nil, reqErr("tool %q parameters: %v", name, err)
			}
		}
		out = append(out, Tool{Name: name, Description: desc, Parameters: params})
	}
	return out, nil
}

// parseConstraints reads the fields that constrain the answer, as oaicompat_chat_params_parse does:
//   - tool_choice "auto" (the default), "none" or "required"; an OpenAI named function {"type": "function",
//     "function": {"name": ...}} sets NamedTool (llama-server silently reads it as "auto");
//   - parallel_tool_calls, a boolean (absent: the template's supports_parallel_tool_calls);
//   - json_schema and grammar, not both ("Cannot use both json_schema and grammar");
//   - response_format {"type": "text"}, {"type": "json_object"} (any object, or its "schema"), or
//     {"type": "json_schema", "json_schema": {"schema": ...}}; another type is refused with llama-server's
//     message; a json_schema without its schema is refused (llama-server takes it as any object);
//   - an empty schema {} means any object ({"type": "object"});
//   - a schema that is not an object ("x", 42, [1], true) is refused with the converter's message (llama-server
//     answers unconstrained), and so is one with a constraint no value meets (checkSchema);
//   - reasoning_format "none", "auto", "deepseek" (the default) or "deepseek-legacy";
//   - a grammar with tools (tool_choice other than none) is refused ("Cannot use custom grammar constraints
//     with tools.").
//
// Fields of the wrong type are refused naming the field, where llama-server's json_value takes the default.
func parseConstraints(body *node, in *Inputs) error {
	in.ReasoningFormat = ReasoningDeepseek
	if v, ok := body.get("tool_choice"); ok && v.kind != jNull {
		switch v.kind {
		case jString:
			tc, err := ParseToolChoice(v.s)
			if err != nil {
				return err
			}
			in.ToolChoice = tc
		case jObject:
			typ, _, _ := stringField(v, "type")
			fn, _ := v.get("function")
			name, ok, _ := stringField(fn, "name")
			if typ != "function" || !ok || name == "" {
				return reqErr(`tool_choice: expected "auto", "none", "required" or {"type": "function", "function": {"name": ...}}`)
			}
			in.NamedTool = name
		default:
			return reqErr(`tool_choice: expected a string or an object`)
		}
	}
	if v, ok := body.get("parallel_tool_calls"); ok && v.kind != jNull {
		if v.kind != jBool {
			return reqErr("parallel_tool_calls: expected a boolean")
		}
		in.ParallelToolCalls = new(v.b)
	}
	var schema *node
	schemaField := "" // where the schema came from, to name it in a refusal
	if v, ok := body.get("json_schema"); ok && v.kind != jNull {
		schema, schemaField = v, "json_schema"
	}
	grammar := ""
	if v, ok := body.get("grammar"); ok && v.kind != jNull {
		if v.kind != jString {
			return reqErr("grammar: expected a string")
		}
		grammar = v.s
	}
	if schema != nil && grammar != "" {
		return reqErr("Cannot use both json_schema and grammar")
	}
	if rf, ok := body.get("response_format"); ok && rf.kind != jNull {
		if rf.kind != jObject {
			return reqErr("response_format: expected an object")
		}
		typ, _, err := stringField(rf, "type")
		if err != nil {
			return reqErr("response_format.type: expected a string")
		}
		switch typ {
		case "json_object":
			if s, ok := rf.get("schema"); ok || schema == nil {
				if !ok || s.kind == jNull {
					s = jobj()
				}
				schema, schemaField = s, "response_format.schema"
			}
		case "json_schema":
			w, ok := rf.get("json_schema")
			if !ok || w.kind != jObject {
				return reqErr("response_format.json_schema: expected an object with a \"schema\"")
			}
			s, ok := w.get("schema")
			if !ok || s.kind == jNull {
				return reqErr("response_format.json_schema.schema: required (the JSON schema the answer must follow)")
			}
			schema, schemaField = s, "response_format.json_schema.schema"
		case "", "text":
		default:
			return reqErr("response_format type must be one of \"text\" or \"json_object\", but got: %s", typ)
		}
	}
	if schema != nil && grammar != "" {
		// llama-server checks only a json_schema field against the grammar; with a response_format it drops
		// the grammar silently. bankml refuses every pair of constraints.
		return reqErr("Cannot use both response_format and grammar")
	}
	if schema != nil {
		if schema.kind == jObject && len(schema.keys) == 0 {
			schema = jobj().set("type", jstr("object"))
		}
		js, err := schema.dumpString()
		if err != nil {
			return reqErr("json_schema: %v", err)
		}
		if err := checkSchema(schemaField, js); err != nil {
			return err
		}
		in.JSONSchema = js
	}
	in.Grammar = grammar
	if v, ok := body.get("reasoning_format"); ok {
		if v.kind != jString {
			return reqErr("reasoning_format: expected a string")
		}
		rf, err := ParseReasoningFormat(v.s)
		if err != nil {
			return err
		}
		in.ReasoningFormat = rf
	}
	if len(in.Tools) > 0 && in.ToolChoice != ToolChoiceNone {
		if _, ok := body.get("grammar"); ok {
			return reqErr("Cannot use custom grammar constraints with tools.")
		}
	}
	return nil
}

// checkSchema refuses, naming its field, a response format's schema that bankml would otherwise answer
// unconstrained or cannot satisfy: one that is not an object (llama-server's template skips a non-object schema
// and answers unconstrained; its converter refuses it with "schema must be an object", the words used here), and
// one with a constraint no value meets (grammar.SchemaDocument.Contradictions: the reference generates toward
// it without a word and fails or breaks the constraint). A schema the converter refuses for another reason is
// left to the parser generation, which refuses it with the reference's message.
func checkSchema(field, js string) error {
	doc, err := grammar.ParseSchema([]byte(js))
	var se *grammar.SchemaError
	switch {
	case errors.As(err, &se) && strings.HasSuffix(se.Msg, "at #: schema must be an object"):
		return reqErr("%q: JSON schema conversion failed:\n%s", field, se.Msg)
	case err != nil:
		return nil
	}
	return unsatisfiable(field, doc.Satisfiable())
}

// unsatisfiable is the refusal of a schema with a contradiction (nil for none).
func unsatisfiable(field string, err error) error {
	var ue *grammar.UnsatisfiableError
	if !errors.As(err, &ue) {
		return nil
	}
	return reqErr("%q: %s: no value can satisfy this schema, so bankml refuses it before generating (llama.cpp converts it without a word)", field, ue.Msg)
}
