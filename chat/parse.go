package chat

import (
	"errors"
	"fmt"
	"github.com/bankml/bankml/grammar"
	"strings"
	"unicode/utf8"

	"github.com/bankml/bankml/chat/internal/peg"
)

// ErrAnswer is wrapped by the error of an answer that does not parse as the template's format (only a complete
// answer can fail; a partial one parses as far as it goes).
var ErrAnswer = errors.New("chat: answer")

// Parser splits a model's answer into reasoning, content and tool calls as llama-server does for one request
// (common_chat_parse with the request's common_chat_parser_params): it holds the PEG parser built for the
// request, and the generation prompt the answer continues.
type Parser struct {
	arena            *peg.Arena
	generationPrompt string
}

// Answer is a parsed answer: llama.cpp's common_chat_msg of role "assistant".
type Answer struct {
	Content          string
	ReasoningContent string
	ToolCalls        []ToolCall
}

// Empty reports whether nothing was parsed (common_chat_msg::empty for an assistant answer).
func (a *Answer) Empty() bool {
	return a.Content == "" && a.ReasoningContent == "" && len(a.ToolCalls) == 0
}

// Parse is common_chat_parse (common_chat_peg_parse): the generation prompt and the text are parsed (always in
// lenient mode, as the reference does); a partial answer that stops parsing somewhere keeps what it has, a
// complete answer that does not parse is an error wrapping ErrAnswer. A parser built for no template (nil) takes
// all of the text as content.
func (p *Parser) Parse(text string, partial bool) (Answer, error) {
	arena, gp := (*peg.Arena)(nil), ""
	if p != nil {
		arena, gp = p.arena, p.generationPrompt
	}
	if arena.Empty() {
		arena = peg.Build(func(b *peg.Builder) peg.P { return b.Content(b.Rest()).Plus(b.End()) })
	}
	c := &peg.Context{Input: gp + text, Lenient: true}
	r := arena.Parse(c, 0)
	if r.Status == peg.Fail && !(partial && r.End > 0) {
		return Answer{}, fmt.Errorf("%w: The model produced output that does not match the expected peg-native format", ErrAnswer)
	}
	var m mapper
	if err := m.fromAST(c, r); err != nil {
		return Answer{}, err
	}
	return m.out, nil
}

// mapper is common_chat_peg_mapper: it walks the AST and builds the answer.
type mapper struct {
	out                 Answer
	pending             *ToolCall // a tool call waiting for its name
	current             *ToolCall
	currentIdx          int // index into out.ToolCalls when current is there, else -1
	argCount            int
	closingQuotePending bool
	argsBuffer          string
	err                 error
}

// cur returns the tool call being built: the pending one or the one already in the answer.
func (m *mapper) cur() *ToolCall {
	if m.currentIdx >= 0 {
		return &m.out.ToolCalls[m.currentIdx]
	}
	return m.current
}

func (m *mapper) argsTarget() *string {
	if c := m.cur(); c != nil && c.Name != "" {
		return &c.Arguments
	}
	return &m.argsBuffer
}

func (m *mapper) fromAST(c *peg.Context, r peg.Result) error {
	m.currentIdx = -1
	c.Visit(r, m.mapNode)
	if m.err != nil {
		return m.err
	}
	if m.pending != nil && m.pending.Name != "" {
		if m.argsBuffer != "" {
			m.pending.Arguments = m.argsBuffer
		}
		if m.closingQuotePending && m.pending.Arguments != "" {
			m.pending.Arguments += `"`
		}
		m.out.ToolCalls = append(m.out.ToolCalls, *m.pending)
		m.pending = nil
	}
	if strings.Trim(m.out.ReasoningContent, " \n\r\t") == "" {
		m.out.ReasoningContent = ""
	}
	return nil
}

func trimTrailingSpace(s string) string {
	for s != "" && cIsSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// trimOne is the mapper's trim: at most one leading white space byte, then all trailing ones.
func trimOne(s string) string {
	if s != "" && cIsSpace(s[0]) {
		s = s[1:]
	}
	return trimTrailingSpace(s)
}

// jsonQuote is nlohmann's dump of a string (an error for invalid UTF-8, as nlohmann throws).
func jsonQuote(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: [json.exception.type_error.316] invalid UTF-8 byte in %q", ErrAnswer, s)
	}
	var b strings.Builder
	grammar.DumpString(&b, s)
	return b.String(), nil
}

func (m *mapper) mapNode(n *peg.Node) {
	if m.err != nil {
		return
	}
	switch n.Tag {
	case peg.TagReasoning:
		m.out.ReasoningContent += n.SanitizedText()
	case peg.TagContent:
		m.out.Content += n.SanitizedText()
	case peg.TagToolOpen:
		m.pending = &ToolCall{}
		m.current, m.currentIdx = m.pending, -1
		m.argCount = 0
		m.argsBuffer = ""
		m.closingQuotePending = false
	case peg.TagToolID:
		if c := m.cur(); c != nil {
			t := trimTrailingSpace(n.Text)
			if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
				t = t[1 : len(t)-1]
			}
			c.ID = t
		}
	case peg.TagToolName:
		if c := m.cur(); c != nil {
			c.Name = trimTrailingSpace(n.Text)
			if m.argsBuffer != "" {
				c.Arguments = m.argsBuffer
				m.argsBuffer = ""
			} else if c.Arguments == "" {
				c.Arguments = "{"
			}
			if m.pending != nil {
				m.out.ToolCalls = append(m.out.ToolCalls, *m.pending)
				m.pending, m.current = nil, nil
				m.currentIdx = len(m.out.ToolCalls) - 1
			}
		}
	case peg.TagToolArgs:
		if m.cur() != nil {
			if t := trimTrailingSpace(n.Text); t != "" && t[0] == '{' {
				*m.argsTarget() = t
			}
		}
	case peg.TagToolArgOpen:
		m.closingQuotePending = false
	case peg.TagToolArgName:
		if m.cur() != nil {
			entry := ""
			if m.argCount > 0 {
				entry = ","
			}
			q, err := jsonQuote(trimOne(n.Text))
			if err != nil {
				m.err = err
				return
			}
			entry += q + ":"
			m.argCount++
			t := m.argsTarget()
			if *t == "" {
				*t = "{"
			}
			*t += entry
		}
	case peg.TagToolArgValue, peg.TagToolArgStringValu:
		if m.cur() != nil {
			v := n.Text
			isString := n.Tag == peg.TagToolArgStringValu
			add := ""
			switch {
			case v == "" && isString:
				add = `"`
				m.closingQuotePending = true
			case v != "" && isString:
				if !m.closingQuotePending {
					add = `"`
					m.closingQuotePending = true
				}
				q, err := jsonQuote(v)
				if err != nil {
					m.err = err
					return
				}
				add += q[1 : len(q)-1]
			case v != "":
				add = normalizeQuotesToJSON(v)
			}
			*m.argsTarget() += add
		}
	case peg.TagToolArgClose:
		if m.cur() != nil && m.closingQuotePending {
			*m.argsTarget() += `"`
			m.closingQuotePending = false
		}
	case peg.TagToolClose:
		c := m.cur()
		if c == nil {
			return
		}
		if c.Name == "" && m.argsBuffer != "" {
			c.Arguments = m.argsBuffer
			m.argsBuffer = ""
		}
		if m.closingQuotePending {
			c.Arguments += `"`
			m.closingQuotePending = false
		}
		for d := jsonBraceDepth(c.Arguments); d > 0; d-- {
			c.Arguments += "}"
		}
		if m.pending != nil {
			if c.Name != "" {
				m.out.ToolCalls = append(m.out.ToolCalls, *m.pending)
			}
			m.pending = nil
			// the reference keeps pointing at the discarded call; later tags then write to nothing visible
			m.current = &ToolCall{Name: c.Name, Arguments: c.Arguments, ID: c.ID}
			m.currentIdx = -1
		}
	}
}

// jsonBraceDepth counts the '{' left open outside strings.
func jsonBraceDepth(s string) int {
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if escaped {
			escaped = false
			continue
		}
		if c == '\\' && inString {
			escaped = true
			continue
		}
		if c == '"' {
			inString = !inString
			continue
		}
		if !inString {
			switch c {
			case '{':
				depth++
			case '}':
				depth--
			}
		}
	}
	return depth
}

func isWordChar(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'
}

// normalizeQuotesToJSON is normalize_quotes_to_json: Python-style single-quoted strings and True/False/None made
// JSON (a prefix of a literal becomes the same prefix of its JSON form, so streamed partials stay monotonic).
func normalizeQuotesToJSON(in string) string {
	var b strings.Builder
	inSingle, inDouble := false, false
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == '\\' && i+1 < len(in) {
			next := in[i+1]
			switch {
			case inSingle && next == '\'':
				b.WriteByte('\'')
				i++
			case inSingle && next == '"':
				b.WriteString(`\"`)
				i++
			case inSingle, inDouble:
				b.WriteByte(c)
				b.WriteByte(next)
				i++
			default:
				b.WriteByte(c)
			}
			continue
		}
		switch {
		case c == '"':
			if inSingle {
				b.WriteString(`\"`)
			} else {
				inDouble = !inDouble
				b.WriteByte(c)
			}
		case c == '\'':
			switch {
			case inDouble:
				b.WriteByte(c)
			case inSingle:
				inSingle = false
				b.WriteByte('"')
			default:
				inSingle = true
				b.WriteByte('"')
			}
		case !inSingle && !inDouble && (c == 'T' || c == 'F' || c == 'N') && (i == 0 || !isWordChar(in[i-1])):
			n := 0
			for i+n < len(in) && isWordChar(in[i+n]) {
				n++
			}
			tok := in[i : i+n]
			matched := false
			for _, lit := range [][2]string{{"True", "true"}, {"False", "false"}, {"None", "null"}} {
				py, js := lit[0], lit[1]
				if n <= len(py) && py[:n] == tok {
					b.WriteString(js[:min(n, len(js))])
					i += n - 1
					matched = true
					break
				}
			}
			if !matched {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// AnswerDiff is one streamed change of an answer (common_chat_msg_diff): new reasoning or content text, or a
// tool call's new fields (ToolCallIndex < 0 for none).
type AnswerDiff struct {
	ReasoningContentDelta string
	ContentDelta          string
	ToolCallIndex         int
	ToolCallDelta         ToolCall
}

// stringDiff is string_diff: what current adds to last.
func stringDiff(last, current string) (string, error) {
	if last == "" {
		return current, nil
	}
	if !strings.HasPrefix(current, last) {
		if strings.HasPrefix(last, current) {
			return "", nil
		}
		return "", fmt.Errorf("%w: Invalid diff: '%s' not found at start of '%s'", ErrAnswer, last, current)
	}
	return current[len(last):], nil
}

// Diffs is common_chat_msg_diff::compute_diffs: the changes from prev to next, in the reference's order
// (reasoning, content, the last known tool call's growth, then each new tool call). A next answer with fewer tool
// calls, or a tool name that changes other than by growing, is an error.
func Diffs(prev, next Answer) ([]AnswerDiff, error) {
	var out []AnswerDiff
	if prev.ReasoningContent != next.ReasoningContent {
		d, err := stringDiff(prev.ReasoningContent, next.ReasoningContent)
		if err != nil {
			return nil, err
		}
		out = append(out, AnswerDiff{ReasoningContentDelta: d, ToolCallIndex: -1})
	}
	if prev.Content != next.Content {
		d, err := stringDiff(prev.Content, next.Content)
		if err != nil {
			return nil, err
		}
		out = append(out, AnswerDiff{ContentDelta: d, ToolCallIndex: -1})
	}
	if len(next.ToolCalls) < len(prev.ToolCalls) {
		//lint:ignore ST1005 llama.cpp's message (common_chat_msg_diff::compute_diffs)
		return nil, fmt.Errorf("%w: Invalid diff: now finding less tool calls!", ErrAnswer)
	}
	if n := len(prev.ToolCalls); n > 0 {
		idx := n - 1
		pf, nf := prev.ToolCalls[idx], next.ToolCalls[idx]
		if pf.Name != nf.Name && pf.Name != "" && nf.Name != "" && !strings.HasPrefix(nf.Name, pf.Name) {
			//lint:ignore ST1005 llama.cpp's message (common_chat_msg_diff::compute_diffs)
			return nil, fmt.Errorf("%w: Invalid diff: tool call mismatch!", ErrAnswer)
		}
		args, err := stringDiff(pf.Arguments, nf.Arguments)
		if err != nil {
			return nil, err
		}
		if args != "" || pf.ID != nf.ID || pf.Name != nf.Name {
			d := AnswerDiff{ToolCallIndex: idx}
			if pf.ID != nf.ID || pf.Name != nf.Name {
				d.ToolCallDelta.ID, d.ToolCallDelta.Name = nf.ID, nf.Name
			}
			d.ToolCallDelta.Arguments = args
			out = append(out, d)
		}
	}
	for idx := len(prev.ToolCalls); idx < len(next.ToolCalls); idx++ {
		out = append(out, AnswerDiff{ToolCallIndex: idx, ToolCallDelta: next.ToolCalls[idx]})
	}
	return out, nil
}

// SetToolCallIDs is common_chat_msg::set_tool_call_ids: each tool call keeps the id it was first given (its own,
// or gen()'s when it has none), across the partial parses of one answer; ids holds them between calls.
func (a *Answer) SetToolCallIDs(ids *[]string, gen func() string) {
	for i := range a.ToolCalls {
		if len(*ids) <= i {
			id := a.ToolCalls[i].ID
			if id == "" {
				id = gen()
			}
			*ids = append(*ids, id)
		}
		a.ToolCalls[i].ID = (*ids)[i]
	}
}
