package chat

import (
	"errors"
	"fmt"
	"strings"
)

// Message is one chat message, the fields of llama.cpp's common_chat_msg (common/chat.h) under their OpenAI names.
type Message struct {
	Role string // "system", "developer", "user", "assistant", "tool" or any other role the template knows

	// Content is the text; Parts the typed content (OpenAI's array form). At most one of them is set: a message
	// with both is refused, as common_chat_msg::to_json_oaicompat refuses it.
	Content string
	Parts   []Part

	ReasoningContent string     // an assistant's thinking (reasoning_content); empty means none
	ToolCalls        []ToolCall // an assistant's tool calls
	Name             string     // name (llama.cpp's tool_name), e.g. of the tool that answered
	ToolCallID       string     // tool_call_id of a tool result
}

// Part is one element of typed content: Type "text" (or "media_marker", which llama.cpp keeps as text) and its Text.
type Part struct {
	Type string
	Text string
}

// ToolCall is a function call of an assistant message. Arguments is the JSON text of the arguments as given (an
// object given in a request is kept as its compact JSON, as common_chat_msgs_parse_oaicompat dumps it).
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Tool is a function the model may call: name, description and the JSON Schema of its parameters (JSON text; ""
// means {}), as common_chat_tool holds it.
type Tool struct {
	Name        string
	Description string
	Parameters  string
}

// empty reports whether the message has nothing but a role (common_chat_msg::empty).
func (m *Message) empty() bool {
	return m.Content == "" && len(m.Parts) == 0 && len(m.ToolCalls) == 0 && m.ReasoningContent == "" &&
		m.Name == "" && m.ToolCallID == ""
}

// renderContent is common_chat_msg::render_content with its default delimiter: the content, or the text parts
// joined by a blank line.
func (m *Message) renderContent() string {
	if m.Content != "" {
		return m.Content
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// toJSON is common_chat_msg::to_json_oaicompat(false): role, content (the string, the parts as {type, text}
// objects, or "" when there is neither), then reasoning_content, name and tool_call_id when not empty, then
// tool_calls as {type: "function", function: {name, arguments}, id}, arguments as a JSON string. An empty
// reasoning_content is left out: this is where llama.cpp drops it.
func (m *Message) toJSON() (*node, error) {
	if m.Content != "" && len(m.Parts) > 0 {
		return nil, errors.New("Cannot specify both content and content_parts") //lint:ignore ST1005 llama.cpp's words, byte for byte
	}
	o := jobj().set("role", jstr(m.Role))
	switch {
	case m.Content != "":
		o.set("content", jstr(m.Content))
	case len(m.Parts) > 0:
		parts := jarr()
		for _, p := range m.Parts {
			parts.items = append(parts.items, jobj().set("type", jstr(p.Type)).set("text", jstr(p.Text)))
		}
		o.set("content", parts)
	default:
		o.set("content", jstr(""))
	}
	if m.ReasoningContent != "" {
		o.set("reasoning_content", jstr(m.ReasoningContent))
	}
	if m.Name != "" {
		o.set("name", jstr(m.Name))
	}
	if m.ToolCallID != "" {
		o.set("tool_call_id", jstr(m.ToolCallID))
	}
	if len(m.ToolCalls) > 0 {
		calls := jarr()
		for _, tc := range m.ToolCalls {
			c := jobj().set("type", jstr("function")).
				set("function", jobj().set("name", jstr(tc.Name)).set("arguments", jstr(tc.Arguments)))
			if tc.ID != "" {
				c.set("id", jstr(tc.ID))
			}
			calls.items = append(calls.items, c)
		}
		o.set("tool_calls", calls)
	}
	return o, nil
}

// concatParts joins typed content into one string as messages_inp_normalizer::concat_content_parts does: text
// parts separated by a newline, no newline next to a media marker, other part types ignored.
func concatParts(parts *node) string {
	var b strings.Builder
	lastMedia := false
	for _, p := range parts.items {
		typ, text := "", ""
		if v, ok := p.get("type"); ok && v.kind == jString {
			typ = v.s
		}
		if v, ok := p.get("text"); ok && v.kind == jString {
			text = v.s
		}
		newline := true
		switch typ {
		case "text":
			newline = !lastMedia && b.Len() > 0
			lastMedia = false
		case "media_marker":
			newline = false
			lastMedia = true
		default:
			continue
		}
		if newline {
			b.WriteByte('\n')
		}
		b.WriteString(text)
	}
	return b.String()
}

// toolsJSON is common_chat_tools_to_json_oaicompat: nil for no tools, else [{type: "function", function: {name,
// description, parameters}}] with the parameters parsed from their JSON text.
func toolsJSON(tools []Tool) (*node, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := jarr()
	for _, t := range tools {
		params := jobj()
		if strings.TrimSpace(t.Parameters) != "" {
			p, err := parseJSON([]byte(t.Parameters))
			if err != nil {
				return nil, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
			}
			params = p
		}
		out.items = append(out.items, jobj().set("type", jstr("function")).set("function",
			jobj().set("name", jstr(t.Name)).set("description", jstr(t.Description)).set("parameters", params)))
	}
	return out, nil
}
