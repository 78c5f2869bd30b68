package chat

import (
	"errors"
	"fmt"
	"strings"
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
//   - reasoning_effort "none" turns thinking off, another value becomes the reasoning_effort kwarg.
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
