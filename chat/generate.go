package chat

import (
	"fmt"
	"strings"

	"github.com/bankml/bankml/chat/internal/peg"
)

// The parser and grammar generation of llama.cpp's autoparser (common/chat-auto-parser-generator.cpp): from the
// template's analysis and the request, the PEG parser that splits an answer into reasoning, content and tool
// calls, and the GBNF grammar (lazy for tool_choice auto) with its trigger words. Parsers are built in the order
// the reference builds them: parser ids name the "until-N" rules of the grammar.

// ToolChoice is tool_choice (common_chat_tool_choice).
type ToolChoice uint8

const (
	ToolChoiceAuto     ToolChoice = iota // the model may answer or call tools
	ToolChoiceRequired                   // the model must call at least one tool
	ToolChoiceNone                       // the model must not call tools
)

// ParseToolChoice is common_chat_tool_choice_parse_oaicompat: "auto", "none" or "required".
func ParseToolChoice(s string) (ToolChoice, error) {
	switch s {
	case "auto":
		return ToolChoiceAuto, nil
	case "none":
		return ToolChoiceNone, nil
	case "required":
		return ToolChoiceRequired, nil
	}
	return 0, reqErr("Invalid tool_choice: %s", s)
}

// ReasoningFormat is reasoning_format (common_reasoning_format): whether and how reasoning is split from content.
type ReasoningFormat uint8

const (
	ReasoningNone           ReasoningFormat = iota // reasoning stays in the content
	ReasoningAuto                                  // extracted into reasoning_content
	ReasoningDeepseek                              // extracted (llama-server's default)
	ReasoningDeepseekLegacy                        // extracted, and kept inline in streamed content
)

// ParseReasoningFormat is common_reasoning_format_from_name.
func ParseReasoningFormat(s string) (ReasoningFormat, error) {
	switch s {
	case "none":
		return ReasoningNone, nil
	case "auto":
		return ReasoningAuto, nil
	case "deepseek":
		return ReasoningDeepseek, nil
	case "deepseek-legacy":
		return ReasoningDeepseekLegacy, nil
	}
	return 0, reqErr("Unknown reasoning format: %s", s)
}

// String is common_reasoning_format_name.
func (f ReasoningFormat) String() string {
	return [...]string{"none", "auto", "deepseek", "deepseek-legacy"}[f]
}

// TriggerType is a grammar trigger's type (common_grammar_trigger_type).
type TriggerType uint8

const (
	TriggerToken       TriggerType = iota // a token id
	TriggerWord                           // a literal text
	TriggerPattern                        // a regex matched anywhere in the output since the last trigger
	TriggerPatternFull                    // a regex matching the whole output
)

// Trigger wakes a lazy grammar: the output from the trigger on is constrained.
type Trigger struct {
	Type  TriggerType
	Value string
	Token int32 // TriggerToken
}

// toolDef is a tool as the parsers see it: its name and its parameters' parsed schema.
type toolDef struct {
	name   string
	params schemaNode
}

// genInputs are the generation_params the parser and grammar depend on.
type genInputs struct {
	tools           []toolDef
	toolChoice      ToolChoice
	parallel        bool
	jsonSchema      schemaNode // nil: no response format
	reasoningFormat ReasoningFormat
}

// buildCtx is parser_build_context.
type buildCtx struct {
	p                   *peg.Builder
	in                  *genInputs
	reasoningParser     peg.P
	extractingReasoning bool
	a                   *analysis
}

// buildParser is autoparser::build_parser.
func (a *analysis) buildParser(in *genInputs, generationPrompt string) *peg.Arena {
	return peg.Build(func(p *peg.Builder) peg.P {
		ctx := &buildCtx{p: p, in: in, reasoningParser: p.Eps(), a: a}
		ctx.extractingReasoning = in.reasoningFormat != ReasoningNone && a.reasoning.mode != reasoningNone
		ctx.reasoningParser = a.buildReasoningParser(ctx)
		//lint:ignore SA4006 created for its arena id, as the C++ creates it (later ids follow it)
		parser := p.Eps()
		pure := a.reasoning.mode == reasoningNone
		switch {
		case in.jsonSchema != nil:
			rf := p.Rule("response-format", p.Content(p.Schema(p.JSON(), "response-format-schema", in.jsonSchema, false)), false)
			parser = p.Cat(ctx.reasoningParser, p.Space, func() peg.P {
				return p.Choice(p.Cat(p.Lf("```json"), p.Space, rf, p.Space, p.Lf("```")), p.Cat(p.Space, rf, p.Space))
			}, p.End)
			pure = false
		case len(in.tools) > 0 && in.toolChoice != ToolChoiceNone && a.caps.ToolCalls:
			parser = a.buildToolsParser(ctx)
			pure = false
		default:
			parser = a.buildContentParser(ctx)
		}
		start := trimWhitespace(a.reasoning.start)
		if pure {
			return p.Cat(func() peg.P { return p.Prefix(generationPrompt, start) }, parser)
		}
		return p.Prefix(generationPrompt, start).Spaced(parser)
	})
}

// buildReasoningParser is analyze_reasoning::build_parser.
func (a *analysis) buildReasoningParser(ctx *buildCtx) peg.P {
	p, r := ctx.p, &a.reasoning
	if !ctx.extractingReasoning {
		return p.Eps()
	}
	if (r.mode == reasoningTagBased || r.mode == reasoningToolsOnly) && r.end != "" {
		reasoning := func() peg.P { return p.Reasoning(p.Until(trimWhitespace(r.end))) }
		end := func() peg.P { return p.Optspace(r.end) }
		if r.start != "" {
			return p.Optional(p.Cat(func() peg.P { return p.Optspace(r.start) }, reasoning, end))
		}
		return p.Optional(p.Cat(reasoning, end))
	}
	return p.Eps()
}

// buildContentParser is analyze_content::build_parser.
func (a *analysis) buildContentParser(ctx *buildCtx) peg.P {
	p, c := ctx.p, &a.content
	if c.alwaysWrapped() {
		content := func() peg.P { return p.Content(p.Until(c.end)) }
		if ctx.extractingReasoning {
			return p.Cat(ctx.reasoningParser, c.start, content, c.end, p.End)
		}
		return p.Cat(func() peg.P { return p.Content(p.Until(c.start)) }, c.start, content, c.end, p.End)
	}
	return p.Cat(ctx.reasoningParser, func() peg.P { return p.Content(p.Rest()) }, p.End)
}

// buildOptionalWrapped is analyze_content::build_optional_wrapped.
func (a *analysis) buildOptionalWrapped(ctx *buildCtx) peg.P {
	p, c := ctx.p, &a.content
	if c.alwaysWrapped() {
		return p.Optional(p.Cat(c.start, func() peg.P { return p.Content(p.Until(c.end)) }, c.end))
	}
	return p.Eps()
}

// buildToolsParser is analyze_tools::build_parser.
func (a *analysis) buildToolsParser(ctx *buildCtx) peg.P {
	switch a.tools.format.mode {
	case toolFormatJSONNative:
		return a.buildToolsJSONNative(ctx)
	case toolFormatTagWithJSON:
		return a.buildToolsTagJSON(ctx)
	case toolFormatTagWithTagged:
		return a.buildToolsTagTagged(ctx)
	}
	return ctx.p.Eps()
}

func (a *analysis) buildToolsJSONNative(ctx *buildCtx) peg.P {
	p, f, in := ctx.p, &a.tools.format, ctx.in
	nameField, argsField := f.nameField, f.argsField
	if f.functionField != "" && f.functionField != "function" && !strings.Contains(nameField, ".") {
		nameField = f.functionField + "." + nameField
		argsField = f.functionField + "." + argsField
	}
	tools := make([]peg.JSONTool, len(in.tools))
	for i, t := range in.tools {
		tools[i] = peg.JSONTool{Name: t.name, Params: t.params}
	}
	opts := peg.JSONToolsOptions{NameKey: nameField, ArgsKey: argsField, ArrayWrapped: f.toolsArrayWrapped,
		FunctionIsKey: f.funNameIsKey, CallIDKey: f.idField, GenCallIDKey: f.genIDField,
		ParametersOrder: f.parameterOrder, AcceptOpenAIWrapper: f.openaiWrapperTrigger,
		Parallel: in.parallel, ForceToolCalls: in.toolChoice == ToolChoiceRequired}
	//lint:ignore SA4006 created for its arena id, as the C++ creates it (later ids follow it)
	toolsParser := p.Eps()
	if f.sectionStart == "" && f.perCallStart != "" {
		single := p.StandardJSONTools(f.perCallStart, f.perCallEnd, tools, opts)
		toolsParser = p.TriggerRule("tool-calls", p.OneOrMore(p.Cat(single, p.Space)))
	} else {
		toolsParser = p.StandardJSONTools(f.sectionStart, f.sectionEnd, tools, opts)
	}
	if a.content.alwaysWrapped() {
		wrapped := a.buildOptionalWrapped(ctx)
		return p.Cat(ctx.reasoningParser, wrapped, toolsParser, p.End)
	}
	toolStart := "{"
	if f.sectionStart != "" {
		toolStart = f.sectionStart
	} else if f.perCallStart != "" {
		toolStart = f.perCallStart
	}
	return p.Cat(ctx.reasoningParser, func() peg.P { return p.Optional(p.Content(p.Until(toolStart))) }, toolsParser, p.End)
}

// buildFuncParser is analyze_tools::build_func_parser.
func (a *analysis) buildFuncParser(p *peg.Builder, name string, callIDSection peg.P, haveCallID bool, args peg.P, atomicPeek *peg.P) peg.P {
	fn, f := &a.tools.function, &a.tools.format
	open := p.ToolOpen(p.Cat(fn.namePrefix, func() peg.P { return p.ToolName(p.Literal(name)) }, fn.nameSuffix))
	matched := false
	//lint:ignore SA4006 created for its arena id, as the C++ creates it (later ids follow it)
	fp := p.Eps()
	if fn.argsSeparator != "" {
		open = p.Cat(open, p.Space, p.Lf(fn.argsSeparator))
	}
	switch {
	case fn.nameSuffix != "":
		fp = p.Cat(open, callIDSection, p.Space, args)
		matched = true
	case haveCallID:
		fp = p.Cat(func() peg.P { return p.Atomic(p.Cat(open, callIDSection)) }, p.Space, args)
		matched = true
	case atomicPeek != nil:
		fp = p.Cat(func() peg.P { return p.Atomic(p.Cat(open, callIDSection, p.Space, *atomicPeek)) }, args)
		matched = true
	default:
		fp = p.Cat(open, callIDSection, p.Space, args)
	}
	switch {
	case fn.close != "":
		fp = p.Cat(fp, p.Space, func() peg.P { return p.ToolClose(p.Literal(fn.close)) })
	case f.perCallEnd != "":
		var peek peg.P
		if a.tools.arguments.tolerateIntertagWhitespace {
			peek = p.Peek(p.Cat(p.Space, p.Lf(f.perCallEnd)))
		} else {
			peek = p.Peek(p.Literal(f.perCallEnd))
		}
		fp = p.Cat(fp, func() peg.P { return p.ToolClose(peek) })
	default:
		fp = p.Cat(fp, func() peg.P { return p.ToolClose(p.Space()) })
	}
	if !matched {
		fp = p.Atomic(fp)
	}
	return fp
}

func (a *analysis) toolsSection(ctx *buildCtx, choice peg.P, tagged bool) peg.P {
	p, f, in := ctx.p, &a.tools.format, ctx.in
	//lint:ignore SA4006 created for its arena id, as the C++ creates it (later ids follow it)
	calls := p.Eps()
	if f.perCallStart != "" {
		if tagged {
			wrapped := p.Cat(f.perCallStart, p.Space, choice, p.Space, f.perCallEnd)
			if in.parallel {
				calls = p.TriggerRule("tool-call", p.Cat(wrapped, func() peg.P { return p.ZeroOrMore(p.Cat(p.Space, wrapped)) }, p.Space))
			} else {
				calls = p.TriggerRule("tool-call", p.Cat(wrapped, p.Space))
			}
		} else {
			wrapped := p.Cat(f.perCallStart, choice, f.perCallEnd)
			if in.parallel {
				calls = p.TriggerRule("tool-call", p.Cat(wrapped, func() peg.P { return p.ZeroOrMore(p.Cat(p.Space, wrapped)) }))
			} else {
				calls = p.TriggerRule("tool-call", wrapped)
			}
		}
		if f.sectionStart != "" {
			end := func() peg.P {
				switch {
				case f.sectionEnd == "":
					return p.End()
				case tagged:
					return p.Cat(p.Lf(f.sectionEnd), p.Space)
				}
				return p.Literal(f.sectionEnd)
			}
			calls = p.TriggerRule("tool-calls", p.Cat(p.Lf(f.sectionStart), p.Space, calls, p.Space, end))
		}
	} else {
		const sep = ", "
		more := func() peg.P { return p.ZeroOrMore(p.Cat(sep, choice)) }
		switch {
		case tagged && in.parallel:
			calls = p.TriggerRule("tool-call", p.Cat(f.sectionStart, p.Space, choice, more, p.Space, f.sectionEnd))
		case tagged:
			calls = p.TriggerRule("tool-call", p.Cat(f.sectionStart, p.Space, choice, p.Space, f.sectionEnd))
		case in.parallel:
			calls = p.TriggerRule("tool-call", p.Cat(f.sectionStart, choice, more, f.sectionEnd))
		default:
			calls = p.TriggerRule("tool-call", p.Cat(f.sectionStart, choice, f.sectionEnd))
		}
	}
	if in.toolChoice != ToolChoiceRequired {
		calls = p.Optional(calls)
	}
	marker := f.sectionStart
	if marker == "" {
		marker = f.perCallStart
	}
	var before peg.P
	if marker == "" {
		before = p.Eps()
	} else {
		before = p.Until(marker)
	}
	return p.Cat(ctx.reasoningParser, func() peg.P { return p.Optional(p.Content(before)) }, calls, p.End)
}

func (a *analysis) buildToolsTagJSON(ctx *buildCtx) peg.P {
	p, id, ar := ctx.p, &a.tools.callID, &a.tools.arguments
	choice := p.Choice()
	for _, t := range ctx.in.tools {
		haveCallID := false
		section := p.Eps()
		if id.pos == callIDBetweenFuncAndArgs && id.prefix != "" && (id.suffix != "" || ar.start != "") {
			if id.suffix != "" {
				section = p.Cat(func() peg.P {
					return p.Optional(p.Cat(id.prefix, func() peg.P { return p.ToolID(p.Until(id.suffix)) }))
				}, id.suffix)
			} else {
				section = p.Optional(p.Cat(id.prefix, func() peg.P { return p.ToolID(p.Until(ar.start)) }))
			}
			haveCallID = true
		}
		args := p.ToolArgs(p.Schema(p.JSON(), "tool-"+t.name+"-schema", t.params, false))
		if ar.start != "" {
			args = p.Cat(p.Lf(ar.start), args)
		}
		if ar.end != "" {
			args = p.Cat(args, p.Lf(ar.end))
		}
		var peek *peg.P
		if ar.start != "" {
			pk := p.Peek(p.Literal(ar.start))
			peek = &pk
		}
		fp := a.buildFuncParser(p, t.name, section, haveCallID, args, peek)
		choice = choice.Or(p.Rule("tool-"+t.name, fp, false))
	}
	return a.toolsSection(ctx, choice, false)
}

func (a *analysis) buildToolsTagTagged(ctx *buildCtx) peg.P {
	p, id, ar := ctx.p, &a.tools.callID, &a.tools.arguments
	untilSuffix := p.Rule("until-suffix", p.Until(ar.valueSuffix), false)
	choice := p.Choice()
	for _, t := range ctx.in.tools {
		var required, optional []peg.P
		for _, prop := range t.params.objectProperties() {
			open := func() peg.P {
				return p.ToolArgOpen(p.Cat(ar.namePrefix, func() peg.P { return p.ToolArgName(p.Literal(prop.name)) }, ar.nameSuffix))
			}
			closer := func() peg.P { return p.ToolArgClose(p.Literal(ar.valueSuffix)) }
			value := func() peg.P {
				if prop.schema.MayBeString() {
					return p.AC(p.Cat(func() peg.P { return p.ToolArgStringValue(untilSuffix) }, closer), ar.valueSuffix)
				}
				return p.Cat(func() peg.P {
					return p.ToolArgJSONValue(p.Schema(p.JSON(), "tool-"+t.name+"-arg-"+prop.name+"-schema", prop.schema, false))
				}, closer)
			}
			arg := p.ToolArg(p.Cat(open, ar.valuePrefix, value))
			named := p.Rule("tool-"+t.name+"-arg-"+prop.name, arg, false)
			if prop.required {
				required = append(required, named)
			} else {
				optional = append(optional, named)
			}
		}
		seq := p.Eps()
		for i, r := range required {
			if i > 0 {
				seq = p.Cat(seq, p.Space)
			}
			seq = seq.Plus(r)
		}
		if len(optional) > 0 {
			anyOpt := p.Choice()
			for _, o := range optional {
				anyOpt = anyOpt.Or(o)
			}
			seq = p.Cat(seq, func() peg.P { return p.Repeat(p.Cat(p.Space, anyOpt), 0, -1) })
		}
		if ar.start != "" {
			seq = p.Cat(p.Lf(ar.start), seq)
		}
		if ar.end != "" {
			seq = p.Cat(seq, p.Lf(ar.end))
		}
		section := p.Eps()
		haveCallID := false
		if id.pos == callIDBetweenFuncAndArgs && id.prefix != "" && (id.suffix != "" || ar.start != "") {
			haveCallID = true
			if id.suffix != "" {
				section = p.Optional(p.Cat(id.prefix, func() peg.P { return p.ToolID(p.Until(id.suffix)) }, id.suffix))
			} else {
				section = p.Optional(p.Cat(id.prefix, func() peg.P { return p.ToolID(p.Until(ar.start)) }))
			}
		}
		var peek *peg.P
		if ar.namePrefix != "" && len(required) > 0 {
			pk := p.Peek(p.Literal(ar.namePrefix))
			peek = &pk
		}
		fp := a.buildFuncParser(p, t.name, section, haveCallID, seq, peek)
		choice = choice.Or(p.Rule("tool-"+t.name, fp, false))
	}
	return a.toolsSection(ctx, choice, true)
}

// generated is what generate_parser adds to a rendered prompt.
type generated struct {
	parser          *peg.Arena
	grammar         string
	grammarLazy     bool
	triggers        []Trigger
	preservedTokens []string
	additionalStops []string
}

// generate is peg_generator::generate_parser past the prompt: the parser for the request, and the grammar when
// the request has a response format, or tools with tool_choice required (or auto, for a template with a tool-call
// marker to trigger on).
func (a *analysis) generate(in *genInputs, generationPrompt string, gb grammarBackend) (*generated, error) {
	g := &generated{preservedTokens: append([]string(nil), a.preservedTokens...),
		additionalStops: append([]string(nil), a.additionalStops...)}
	g.parser = a.buildParser(in, generationPrompt)
	f := &a.tools.format
	hasTools := f.mode != toolFormatNone && len(in.tools) > 0
	trigger := f.sectionStart
	if trigger == "" {
		trigger = f.perCallStart
	}
	hasFormat := in.jsonSchema != nil
	include := hasFormat || (hasTools && ((in.toolChoice == ToolChoiceAuto && trigger != "") || in.toolChoice == ToolChoiceRequired))
	if !include {
		return g, nil
	}
	g.grammarLazy = !hasFormat && in.toolChoice == ToolChoiceAuto
	var err error
	g.grammar, err = gb.build(func(b peg.GrammarBuilder) { g.parser.BuildGrammar(b, g.grammarLazy) })
	if err != nil {
		return nil, fmt.Errorf("%w: Unable to generate parser for this template. Automatic parser generation failed: %v", ErrRequest, err)
	}
	if g.grammarLazy {
		g.triggers = []Trigger{{Type: TriggerWord, Value: trigger}}
		if f.openaiWrapperTrigger {
			g.triggers = append(g.triggers, Trigger{Type: TriggerWord, Value: `{"type": "function",`})
		}
	}
	return g, nil
}
