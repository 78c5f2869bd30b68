package peg

import (
	"slices"
	"strings"
)

// The AST tags of chat parsers (common_chat_peg_builder's constants, common/chat-peg-parser.h).
const (
	TagReasoningBlock    = "reasoning-block"
	TagReasoning         = "reasoning"
	TagContent           = "content"
	TagTool              = "tool"
	TagToolOpen          = "tool-open"
	TagToolClose         = "tool-close"
	TagToolID            = "tool-id"
	TagToolName          = "tool-name"
	TagToolArgs          = "tool-args"
	TagToolArg           = "tool-arg"
	TagToolArgOpen       = "tool-arg-open"
	TagToolArgClose      = "tool-arg-close"
	TagToolArgName       = "tool-arg-name"
	TagToolArgValue      = "tool-arg-value"
	TagToolArgStringValu = "tool-arg-string-value"
)

// Reasoning tags p's text as reasoning.
func (b *Builder) Reasoning(p P) P { return b.Tag(TagReasoning, p) }

// Content tags p's text as content.
func (b *Builder) Content(p P) P { return b.Tag(TagContent, p) }

// Tool tags a whole tool call.
func (b *Builder) Tool(p P) P { return b.Tag(TagTool, p) }

// ToolOpen is atomic(tag(tool-open, p)).
func (b *Builder) ToolOpen(p P) P { return b.Atomic(b.Tag(TagToolOpen, p)) }

// ToolClose is atomic(tag(tool-close, p)).
func (b *Builder) ToolClose(p P) P { return b.Atomic(b.Tag(TagToolClose, p)) }

// ToolID is atomic(tag(tool-id, p)).
func (b *Builder) ToolID(p P) P { return b.Atomic(b.Tag(TagToolID, p)) }

// ToolName is atomic(tag(tool-name, p)).
func (b *Builder) ToolName(p P) P { return b.Atomic(b.Tag(TagToolName, p)) }

// ToolArgs tags the arguments.
func (b *Builder) ToolArgs(p P) P { return b.Tag(TagToolArgs, p) }

// ToolArg tags one tagged argument.
func (b *Builder) ToolArg(p P) P { return b.Tag(TagToolArg, p) }

// ToolArgOpen is atomic(tag(tool-arg-open, p)).
func (b *Builder) ToolArgOpen(p P) P { return b.Atomic(b.Tag(TagToolArgOpen, p)) }

// ToolArgClose is atomic(tag(tool-arg-close, p)).
func (b *Builder) ToolArgClose(p P) P { return b.Atomic(b.Tag(TagToolArgClose, p)) }

// ToolArgName is atomic(tag(tool-arg-name, p)).
func (b *Builder) ToolArgName(p P) P { return b.Atomic(b.Tag(TagToolArgName, p)) }

// ToolArgStringValue tags a value the schema declares a string.
func (b *Builder) ToolArgStringValue(p P) P { return b.Tag(TagToolArgStringValu, p) }

// ToolArgJSONValue tags a JSON value.
func (b *Builder) ToolArgJSONValue(p P) P { return b.Tag(TagToolArgValue, p) }

// Prefix is common_chat_peg_builder::prefix: eps for "", else the literal of s up to delim's first occurrence
// (all of s when delim is "" or absent).
func (b *Builder) Prefix(s, delim string) P {
	if s == "" {
		return b.Eps()
	}
	if delim == "" {
		return b.Literal(s)
	}
	if i := strings.Index(s, delim); i >= 0 {
		return b.Literal(s[:i])
	}
	return b.Literal(s)
}

// Optspace is common_chat_peg_builder::optspace: the tag's text with each of its leading and trailing white space
// characters optional.
func (b *Builder) Optspace(tag string) P {
	p := b.Eps()
	endPre, startSuf := len(tag), len(tag)
	for i := 0; i < len(tag); i++ {
		if !isSpace(tag[i]) {
			endPre = i
			break
		}
	}
	for i := len(tag); i > 0; i-- {
		if !isSpace(tag[i-1]) {
			startSuf = i
			break
		}
	}
	for i := 0; i < endPre; i++ {
		p = p.Plus(b.Optional(b.Literal(tag[i : i+1])))
	}
	mid := ""
	if startSuf > endPre {
		mid = tag[endPre:startSuf]
	}
	p = p.Plus(b.Literal(mid))
	for i := startSuf; i < len(tag); i++ {
		p = p.Plus(b.Optional(b.Literal(tag[i : i+1])))
	}
	return p
}

// JSONTool is a function tool for StandardJSONTools: its name and the parsed schema of its parameters
// (common_chat_tool_parameters of its definition).
type JSONTool struct {
	Name   string
	Params Schema
}

// JSONToolsOptions are standard_json_tools' layout options.
type JSONToolsOptions struct {
	NameKey, ArgsKey         string // "" means "name" / "arguments"; "a.b" names a nested field
	ArrayWrapped             bool   // the calls are a JSON array
	FunctionIsKey            bool   // {"<name>": {...}}
	CallIDKey, GenCallIDKey  string // JSON keys of a string call id and a generated id
	ParametersOrder          []string
	AcceptOpenAIWrapper      bool
	Parallel, ForceToolCalls bool
}

func splitKey(key string) (prefix, field string) {
	if i := strings.IndexByte(key, '.'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// Lf is a thunk building literal(s), for a chain operand that is an explicit literal() call.
func (b *Builder) Lf(s string) func() P { return func() P { return b.Literal(s) } }

// idChoice is choice({literal("\"") + tool_id(string_content('"')) + literal("\""), tool_id(json_number())}).
func (b *Builder) idChoice() P {
	return b.Choice(
		b.Cat(b.Lf(`"`), func() P { return b.ToolID(b.StringContent('"')) }, b.Lf(`"`)),
		b.ToolID(b.JSONNumber()))
}

// StandardJSONTools is common_chat_peg_builder::standard_json_tools: the tool-call section between the start and
// end markers, one choice per tool in the layout the options describe, each tool's arguments constrained by its
// schema ("tool-NAME-schema"), as the trigger rule "tool-call"; optional unless ForceToolCalls.
func (b *Builder) StandardJSONTools(sectionStart, sectionEnd string, tools []JSONTool, o JSONToolsOptions) P {
	if len(tools) == 0 {
		return b.Eps()
	}
	nameKey, argsKey := o.NameKey, o.ArgsKey
	if nameKey == "" {
		nameKey = "name"
	}
	if argsKey == "" {
		argsKey = "arguments"
	}
	//lint:ignore SA4006 created for its arena id, as the C++ creates it (later ids follow it)
	choices := b.Eps() // tool_choices starts as eps()
	switch {
	case o.FunctionIsKey:
		choices = b.jsonToolsFunctionIsKey(tools, o.ArgsKey, argsKey, o.CallIDKey, o.GenCallIDKey)
	default:
		np, _ := splitKey(nameKey)
		ap, _ := splitKey(argsKey)
		if np != "" || ap != "" {
			choices = b.jsonToolsNestedKeys(tools, nameKey, argsKey, o.CallIDKey, o.GenCallIDKey)
		} else {
			choices = b.jsonToolsFlatKeys(tools, nameKey, argsKey, o.CallIDKey, o.GenCallIDKey, o.ParametersOrder, o.AcceptOpenAIWrapper)
		}
	}
	calls := choices
	if o.Parallel {
		calls = b.Cat(calls, func() P { return b.ZeroOrMore(b.Cat(b.Space, b.Lf(","), b.Space, choices)) })
	}
	if o.ArrayWrapped {
		calls = b.Cat(b.Lf("["), b.Space, calls, b.Space, b.Lf("]"))
	}
	section := b.TriggerRule("tool-call", b.Cat(b.Lf(sectionStart), b.Space, calls, b.Space, b.Lf(sectionEnd)))
	if o.ForceToolCalls {
		return section
	}
	return b.Optional(section)
}

func (b *Builder) toolSchema(t JSONTool) P {
	return b.Schema(b.JSON(), "tool-"+t.Name+"-schema", t.Params, false)
}

// optIDField is optional(id_parser + space() + optional(literal(",") + space())).
func (b *Builder) optIDField(id P) P {
	return b.Optional(b.Cat(id, b.Space, func() P { return b.Optional(b.Cat(b.Lf(","), b.Space)) }))
}

// jsonToolsFunctionIsKey is build_json_tools_function_is_key: {"NAME": {...}}.
func (b *Builder) jsonToolsFunctionIsKey(tools []JSONTool, argsKey, effArgsKey, callIDKey, genCallIDKey string) P {
	choices := b.Choice()
	for _, t := range tools {
		var inner []P
		if callIDKey != "" {
			id := b.Atomic(b.Cat(b.Lf(`"`+callIDKey+`"`), b.Space, b.Lf(":"), b.Space, b.Lf(`"`),
				func() P { return b.ToolID(b.StringContent('"')) }, b.Lf(`"`)))
			inner = append(inner, b.optIDField(id))
		}
		if genCallIDKey != "" {
			gid := b.Atomic(b.Cat(b.Lf(`"`+genCallIDKey+`"`), b.Space, b.Lf(":"), b.Space, b.idChoice))
			inner = append(inner, b.optIDField(gid))
		}
		//lint:ignore SA4006 created for its arena id, as the C++ creates it (later ids follow it)
		args := b.Eps()
		if argsKey == "" {
			args = b.ToolArgs(b.toolSchema(t))
		} else {
			args = b.Cat(b.Lf(`"`+effArgsKey+`"`), b.Space, b.Lf(":"), b.Space, func() P { return b.ToolArgs(b.toolSchema(t)) })
		}
		inner = append(inner, args)
		//lint:ignore SA4006 created for its arena id, as the C++ creates it (later ids follow it)
		obj := b.Eps()
		if argsKey == "" && len(inner) == 1 {
			obj = inner[0]
		} else {
			obj = b.Cat(b.Lf("{"), b.Space)
			for i, f := range inner {
				obj = obj.Plus(f)
				if i < len(inner)-1 {
					obj = obj.Plus(b.Space())
				}
			}
			obj = b.Cat(obj, b.Space, b.Lf("}"))
		}
		body := b.Tool(b.Cat(func() P { return b.ToolOpen(b.Literal("{")) }, b.Space, b.Lf(`"`),
			func() P { return b.ToolName(b.Literal(t.Name)) }, b.Lf(`"`), b.Space, b.Lf(":"), b.Space, obj, b.Space,
			func() P { return b.ToolClose(b.Literal("}")) }))
		choices = choices.Or(b.Rule("tool-"+t.Name, body, false))
	}
	return choices
}

// jsonToolsNestedKeys is build_json_tools_nested_keys: {id?, "function": {"name": ..., "arguments": ...}}.
func (b *Builder) jsonToolsNestedKeys(tools []JSONTool, nameKey, argsKey, callIDKey, genCallIDKey string) P {
	choices := b.Choice()
	np, nf := splitKey(nameKey)
	ap, af := splitKey(argsKey)
	prefix, nameField, argsField := np, nf, af
	if np == "" {
		prefix, nameField = ap, nameKey
	}
	if ap == "" {
		argsField = argsKey
	}
	for _, t := range tools {
		nestedName := b.Cat(b.Lf(`"`+nameField+`"`), b.Space, b.Lf(":"), b.Space, func() P {
			return b.Atomic(b.Cat(b.Lf(`"`), func() P { return b.ToolName(b.Literal(t.Name)) }, b.Lf(`"`)))
		})
		nestedArgs := b.Cat(b.Lf(`"`+argsField+`"`), b.Space, b.Lf(":"), b.Space, func() P { return b.ToolArgs(b.toolSchema(t)) })
		nestedObj := b.Cat(b.Lf("{"), b.Space, nestedName, b.Space, b.Lf(","), b.Space, nestedArgs, b.Space, b.Lf("}"))
		body := b.Cat(func() P { return b.ToolOpen(b.Literal("{")) }, b.Space)
		if callIDKey != "" {
			if p, _ := splitKey(callIDKey); p == "" {
				id := b.Atomic(b.Cat(b.Lf(`"`+callIDKey+`"`), b.Space, b.Lf(":"), b.Space, b.Lf(`"`),
					func() P { return b.ToolID(b.StringContent('"')) }, b.Lf(`"`)))
				body = b.Cat(body, func() P { return b.Optional(b.Cat(id, b.Space, b.Lf(","), b.Space)) })
			}
		}
		if genCallIDKey != "" {
			if p, _ := splitKey(genCallIDKey); p == "" {
				gid := b.Atomic(b.Cat(b.Lf(`"`+genCallIDKey+`"`), b.Space, b.Lf(":"), b.Space, b.idChoice))
				body = b.Cat(body, func() P { return b.Optional(b.Cat(gid, b.Space, b.Lf(","), b.Space)) })
			}
		}
		field := b.Cat(b.Lf(`"`+prefix+`"`), b.Space, b.Lf(":"), b.Space, nestedObj)
		body = b.Cat(body, field, b.Space, func() P { return b.ToolClose(b.Literal("}")) })
		choices = choices.Or(b.Rule("tool-"+t.Name, b.Tool(body), false))
	}
	return choices
}

// jsonToolsFlatKeys is build_json_tools_flat_keys: {"name": ..., "arguments": ..., ids?} in parameter order.
func (b *Builder) jsonToolsFlatKeys(tools []JSONTool, nameKey, argsKey, callIDKey, genCallIDKey string, order []string, openaiWrapper bool) P {
	choices := b.Choice()
	nameKeyP := b.Literal(`"` + nameKey + `"`)
	argsKeyP := b.Literal(`"` + argsKey + `"`)
	for _, t := range tools {
		toolName := b.Cat(nameKeyP, b.Space, b.Lf(":"), b.Space, func() P {
			return b.Atomic(b.Cat(b.Lf(`"`), func() P { return b.ToolName(b.Literal(t.Name)) }, b.Lf(`"`)))
		})
		toolArgs := b.Cat(argsKeyP, b.Space, b.Lf(":"), b.Space, func() P { return b.ToolArgs(b.toolSchema(t)) })
		idP := b.Eps()
		if callIDKey != "" {
			idP = b.Atomic(b.Cat(b.Lf(`"`+callIDKey+`"`), b.Space, b.Lf(":"), b.Space, b.idChoice))
		}
		genP := b.Eps()
		if genCallIDKey != "" {
			genP = b.Atomic(b.Cat(b.Lf(`"`+genCallIDKey+`"`), b.Space, b.Lf(":"), b.Space, b.idChoice))
		}
		type pair struct {
			p   P
			key string
		}
		pairs := []pair{{toolName, nameKey}, {toolArgs, argsKey}}
		if callIDKey != "" {
			pairs = append(pairs, pair{b.Optional(idP), callIDKey})
		}
		if genCallIDKey != "" {
			pairs = append(pairs, pair{b.Optional(genP), genCallIDKey})
		}
		pos := func(k string) int {
			if i := slices.Index(order, k); i >= 0 {
				return i
			}
			return len(order)
		}
		// libstdc++'s std::sort is an insertion sort (stable) below 16 elements
		slices.SortStableFunc(pairs, func(x, y pair) int { return pos(x.key) - pos(y.key) })
		typeField := b.Eps()
		if openaiWrapper {
			typeField = b.Optional(b.Cat(b.Lf(`"type"`), b.Space, b.Lf(":"), b.Space, b.Lf(`"function"`), b.Space, b.Lf(","), b.Space))
		}
		body := b.Cat(func() P { return b.ToolOpen(b.Literal("{")) }, b.Space, typeField)
		for i, pr := range pairs {
			body = body.Plus(pr.p)
			if i < len(pairs)-1 {
				body = b.Cat(body, b.Space, b.Lf(","), b.Space)
			}
		}
		body = b.Cat(body, b.Space, func() P { return b.ToolClose(b.Literal("}")) })
		choices = choices.Or(b.Rule("tool-"+t.Name, b.Tool(body), false))
	}
	return choices
}

// Tagged is a parser for the template analysis (tagged_peg_parser): parse and collect the text of every tag.
type Tagged struct{ a *Arena }

// BuildTagged is build_tagged_peg_parser.
func BuildTagged(fn func(b *Builder) P) Tagged { return Tagged{Build(fn)} }

// TaggedResult is a tagged parse: the result and the last text of each tag.
type TaggedResult struct {
	Result
	Tags map[string]string
}

// OK reports success.
func (r TaggedResult) OK() bool { return r.Status == Success }

func (t Tagged) extract(input string, start int) TaggedResult {
	c := &Context{Input: input}
	r := t.a.Parse(c, start)
	tags := map[string]string{}
	c.Visit(r, func(n *Node) {
		if n.Tag != "" {
			tags[n.Tag] = n.Text
		}
	})
	return TaggedResult{Result: r, Tags: tags}
}

// ParseAndExtract parses input from its start.
func (t Tagged) ParseAndExtract(input string) TaggedResult { return t.extract(input, 0) }

// ParseAnywhereAndExtract parses from each position in turn until a parse succeeds (the last position's result
// when none does).
func (t Tagged) ParseAnywhereAndExtract(input string) TaggedResult {
	if input == "" {
		return t.ParseAndExtract(input)
	}
	for i := 0; i < len(input); i++ {
		r := t.extract(input, i)
		if r.OK() || i == len(input)-1 {
			return r
		}
	}
	panic("unreachable")
}
