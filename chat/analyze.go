package chat

import (
	"fmt"
	"strings"
	"time"

	"github.com/bankml/bankml/chat/internal/peg"
)

// The differential template analysis of llama.cpp's autoparser (common/chat-diff-analyzer.cpp): the template is
// rendered on pairs of probe conversations that differ in one respect, and the difference tells where its
// reasoning, content and tool-call markers are. Every render goes through bankml's engine, which the prompt
// oracle holds equal to llama.cpp's.

// The probe texts (chat-diff-analyzer.cpp).
const (
	funFirst        = "FFF_FIRST_FUN_F"
	funSecond       = "SSS_SECOND_FUN_S"
	argFirst        = "AA_ARG_FST_AA"
	argSecond       = "BB_ARG_SND_BB"
	userMsg         = "U_USER_MSG Hello END_U"
	userMsgTwo      = "V_USER_MSG Hello END_V"
	assistantMsg    = "A_ASST_MSG I can help END_A"
	thinkingContent = "REASON_PART I am thinking END_R"
	callID001       = "call00001"
	callID002       = "call00002"
	callID999       = "call99999"
)

type reasoningMode uint8

const (
	reasoningNone reasoningMode = iota
	reasoningTagBased
	reasoningToolsOnly
)

type contentMode uint8

const (
	contentPlain contentMode = iota
	contentAlwaysWrapped
	contentWrappedWithReasoning
)

type callIDPosition uint8

const (
	callIDNone callIDPosition = iota
	callIDPreFuncName
	callIDBetweenFuncAndArgs
	callIDPostArgs
)

type toolFormat uint8

const (
	toolFormatNone toolFormat = iota
	toolFormatJSONNative
	toolFormatTagWithJSON
	toolFormatTagWithTagged
)

type reasoningAnalysis struct {
	mode       reasoningMode
	start, end string
}

type contentAnalysis struct {
	mode       contentMode
	start, end string
}

func (c *contentAnalysis) alwaysWrapped() bool {
	return c.mode == contentAlwaysWrapped && c.start != "" && c.end != ""
}

type toolFormatAnalysis struct {
	mode                     toolFormat
	sectionStart, sectionEnd string
	perCallStart, perCallEnd string
	funNameIsKey             bool
	toolsArrayWrapped        bool
	openaiWrapperTrigger     bool
	functionField            string
	nameField, argsField     string
	idField, genIDField      string
	parameterOrder           []string
}

type toolFunctionAnalysis struct {
	namePrefix, nameSuffix, argsSeparator, close string
}

type toolArgumentsAnalysis struct {
	start, end                 string
	namePrefix, nameSuffix     string
	valuePrefix, valueSuffix   string
	separator                  string
	tolerateIntertagWhitespace bool
}

type toolIDAnalysis struct {
	pos            callIDPosition
	prefix, suffix string
}

type toolsAnalysis struct {
	format    toolFormatAnalysis
	function  toolFunctionAnalysis
	arguments toolArgumentsAnalysis
	callID    toolIDAnalysis
}

// analysis is llama.cpp's autoparser after analyze_template: the template's reasoning, content and tool-call
// structure, its user and assistant start markers, and the tokens to keep whole.
type analysis struct {
	caps            Caps
	userStart       string
	assistantStart  string
	reasoning       reasoningAnalysis
	content         contentAnalysis
	tools           toolsAnalysis
	preservedTokens []string
	additionalStops []string
}

// probeParams are template_params: what one analysis render sets.
type probeParams struct {
	messages       *node
	tools          *node
	addGen         bool
	enableThinking bool
}

// renderProbe is autoparser::apply_template: common_chat_template_direct_apply with the messages as given (their
// content fitted to the template's string or typed reading), bos_token, eos_token, enable_thinking (also as an
// extra variable), the tools when there are some and add_generation_prompt when true; ok is false when the render
// fails (llama.cpp's "#**ERROR**#").
func (t *Template) renderProbe(p probeParams) (string, bool) {
	msgs := t.normalizeMessages(p.messages.clone())
	ctx := jobj().set("messages", msgs).set("bos_token", jstr(t.vocab.BOS)).set("eos_token", jstr(t.vocab.EOS)).
		set("enable_thinking", jbool(p.enableThinking))
	if p.tools != nil && p.tools.kind == jArray && len(p.tools.items) > 0 {
		ctx.set("tools", p.tools.clone())
	}
	if p.addGen {
		ctx.set("add_generation_prompt", jbool(true))
	}
	if err := checkStripInputs(t, ctx); err != nil {
		return "", false
	}
	out, err := t.prog.render(ctx, time.Now())
	if err != nil {
		return "", false
	}
	return out, true
}

// normalizeMessages is messages_inp_normalizer::normalize: string content wrapped as one text part for a template
// that reads only parts, typed content joined for one that reads only strings.
func (t *Template) normalizeMessages(msgs *node) *node {
	onlyString := t.caps.StringContent && !t.caps.TypedContent
	onlyTyped := !t.caps.StringContent && t.caps.TypedContent
	if (!onlyString && !onlyTyped) || msgs.kind != jArray {
		return msgs
	}
	for _, m := range msgs.items {
		c, ok := m.get("content")
		if !ok {
			continue
		}
		switch {
		case onlyTyped && c.kind == jString:
			m.set("content", jarr(jobj().set("type", jstr("text")).set("text", jstr(c.s))))
		case onlyString && c.kind == jArray:
			m.set("content", jstr(concatParts(c)))
		}
	}
	return msgs
}

// comparison is compare_variants' result.
type comparison struct {
	diff       diffSplit
	outA, outB string
}

// compareVariants renders params and a modified copy and splits the difference; ok is false when either render
// fails.
func (t *Template) compareVariants(a probeParams, modify func(p *probeParams)) (comparison, bool) {
	b := a
	if modify != nil {
		modify(&b)
	}
	outA, okA := t.renderProbe(a)
	outB, okB := t.renderProbe(b)
	if !okA || !okB {
		return comparison{}, false
	}
	return comparison{diff: calculateDiffSplit(outA, outB), outA: outA, outB: outB}, true
}

func probeUser() *node { return jobj().set("role", jstr("user")).set("content", jstr(userMsg)) }

func probeAssistant(content *node) *node {
	return jobj().set("role", jstr("assistant")).set("content", content)
}

// probeTools are the two probe functions, each with two optional string arguments.
func probeTools() *node {
	params := func() *node {
		return jobj().set("type", jstr("object")).set("properties", jobj().
			set(argFirst, jobj().set("type", jstr("string")).set("description", jstr("First argument"))).
			set(argSecond, jobj().set("type", jstr("string")).set("description", jstr("Second argument")))).
			set("required", jarr())
	}
	fn := func(name, desc string) *node {
		return jobj().set("type", jstr("function")).set("function",
			jobj().set("name", jstr(name)).set("description", jstr(desc)).set("parameters", params()))
	}
	return jarr(fn(funFirst, "Test function foo"), fn(funSecond, "Test function bar"))
}

// probeCall is build_tool_call.
func probeCall(name string, args *node, id string) *node {
	return jobj().set("id", jstr(id)).set("type", jstr("function")).set("function",
		jobj().set("name", jstr(name)).set("arguments", args))
}

func argsOf(kv ...string) *node {
	o := jobj()
	for i := 0; i+1 < len(kv); i += 2 {
		o.set(kv[i], jstr(kv[i+1]))
	}
	return o
}

func firstToolCall() *node {
	return probeCall(funFirst, argsOf(argFirst, "XXXX", argSecond, "YYYY"), callID001)
}

func secondToolCall() *node {
	return probeCall(funSecond, argsOf(argFirst, "XXXX", argSecond, "YYYY"), callID002)
}

// assistantCalls is an assistant message with content "" and the tool calls.
func assistantCalls(calls ...*node) *node {
	return jobj().set("role", jstr("assistant")).set("content", jstr("")).set("tool_calls", jarr(calls...))
}

// analyzeTemplate is autoparser::analyze_template.
func (t *Template) analyzeTemplate() *analysis {
	a := &analysis{caps: t.caps}
	a.reasoning = t.analyzeReasoning(t.caps.ToolCalls)
	a.content = t.analyzeContent(&a.reasoning)
	if t.caps.ToolCalls {
		a.tools = t.analyzeTools(&a.reasoning)
	} else {
		a.tools = toolsAnalysis{format: toolFormatAnalysis{functionField: "function", nameField: "name", argsField: "arguments"}}
	}
	a.assistantStart = t.detectAssistantStart(&a.reasoning)
	a.userStart = t.detectUserStart()
	a.collectPreservedTokens()
	for _, w := range analysisWorkarounds {
		w(t.source, a)
	}
	return a
}

func (a *analysis) collectPreservedTokens() {
	add := func(tok string) {
		tok = trimWhitespace(tok)
		if tok == "" {
			return
		}
		for _, p := range a.preservedTokens {
			if p == tok {
				return
			}
		}
		a.preservedTokens = append(a.preservedTokens, tok)
	}
	r, c, tl := &a.reasoning, &a.content, &a.tools
	for _, s := range []string{r.start, r.end, c.start, c.end, tl.format.sectionStart, tl.format.sectionEnd,
		tl.format.perCallStart, tl.format.perCallEnd, tl.function.namePrefix, tl.function.nameSuffix,
		tl.function.argsSeparator, tl.function.close, tl.arguments.start, tl.arguments.end, tl.arguments.namePrefix,
		tl.arguments.nameSuffix, tl.arguments.separator, tl.arguments.valuePrefix, tl.arguments.valueSuffix,
		tl.callID.prefix, tl.callID.suffix} {
		add(s)
	}
}

// analysisWorkarounds are the autoparser's per-template patches, by the same source tests.
var analysisWorkarounds = []func(src string, a *analysis){
	// old reasoning Qwen templates
	func(src string, a *analysis) {
		if strings.Contains(src, "content.split('</think>')") && !strings.Contains(src, "reasoning_content") &&
			!strings.Contains(src, "<SPECIAL_12>") && a.reasoning.mode == reasoningNone {
			a.reasoning = reasoningAnalysis{mode: reasoningTagBased, start: "<think>", end: "</think>"}
			a.preservedTokens = append(a.preservedTokens, "<think>", "</think>")
		}
	},
	// Granite 3.3
	func(src string, a *analysis) {
		if strings.Contains(src, "Write your thoughts between <think></think> and write your response between <response></response>") {
			a.reasoning = reasoningAnalysis{mode: reasoningTagBased, start: "<think>", end: "</think>"}
			a.preservedTokens = append(a.preservedTokens, "<think>", "</think>")
			a.content = contentAnalysis{mode: contentWrappedWithReasoning, start: "<response>", end: "</response>"}
			a.preservedTokens = append(a.preservedTokens, "<response>", "</response>")
		}
	},
	// Cohere Command R+
	func(src string, a *analysis) {
		if strings.Contains(src, "<|CHATBOT_TOKEN|>") && strings.Contains(src, "<|END_OF_TURN_TOKEN|>") && a.content.start == "" {
			a.content = contentAnalysis{mode: contentAlwaysWrapped, start: "<|CHATBOT_TOKEN|>", end: "<|END_OF_TURN_TOKEN|>"}
			a.preservedTokens = append(a.preservedTokens, "<|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>")
			a.userStart = "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>"
		}
	},
	// Functionary 3.1
	func(src string, a *analysis) {
		if strings.Contains(src, `set has_code_interpreter = tools | selectattr("type", "equalto", "code_interpreter") | list | length > 0`) {
			a.content.mode = contentPlain
			a.content.end = ""
			a.tools.function.namePrefix = ""
			a.tools.format.sectionStart, a.tools.format.sectionEnd = "", ""
			a.tools.format.perCallStart, a.tools.format.perCallEnd = "<function=", "</function>"
			a.tools.function.close = ""
			a.preservedTokens = []string{"<|eot_id|>", "<|eom_id|>", "<function=", ">", "</function>"}
		}
	},
	// DeepSeek-R1-Distill-Qwen
	func(src string, a *analysis) {
		if strings.Contains(src, "{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>'") {
			f := &a.tools.format
			f.sectionStart, f.sectionEnd = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
			f.perCallStart = "<｜tool▁call▁begin｜>function"
			a.tools.function.namePrefix = "<｜tool▁sep｜>"
			f.perCallEnd = "<｜tool▁call▁end｜>"
			a.tools.function.close = "```"
		}
	},
	// Nemotron Nano v2
	func(src string, a *analysis) {
		if strings.Contains(src, "<SPECIAL_10>") && strings.Contains(src, "<SPECIAL_11>") && strings.Contains(src, "<SPECIAL_12>") &&
			strings.Contains(src, "<TOOL_RESPONSE>") {
			f := &a.tools.format
			f.mode = toolFormatJSONNative
			f.sectionStart, f.sectionEnd = "", ""
			f.perCallStart, f.perCallEnd = "<TOOLCALL>", "</TOOLCALL>"
			f.toolsArrayWrapped = true
			a.content = contentAnalysis{mode: contentPlain}
			a.reasoning = reasoningAnalysis{mode: reasoningTagBased, start: "<think>\n", end: "</think>"}
			a.assistantStart = "<SPECIAL_11>Assistant"
			a.userStart = "<SPECIAL_11>User"
			a.preservedTokens = []string{"<SPECIAL_11>", "</think>", "<TOOLCALL>", "</TOOLCALL>"}
		}
	},
	// Fireworks
	func(src string, a *analysis) {
		if strings.Contains(src, `{%- set system_prompt = '<|start_header_id|>' + 'system' + '<|end_header_id|>\n\n' + message['content'] | trim + '\n' + system_prompt_suffix + '<|eot_id|>' -%}`) {
			a.assistantStart = "<|start_header_id|>assistant<|end_header_id|>"
			a.userStart = "<|start_header_id|>user<|end_header_id|>"
		}
	},
	// Solar Open
	func(src string, a *analysis) {
		if strings.Contains(src, "<|begin|>assistant<|think|><|end|>") {
			a.assistantStart = "<|begin|>assistant"
		}
	},
	// Apriel 1.6
	func(src string, a *analysis) {
		if strings.Contains(src, "if not loop.last and '[BEGIN FINAL RESPONSE]' in asst_text") {
			a.userStart = "<|begin_user|>"
			a.assistantStart = "<|begin_assistant|>"
		}
	},
	// the JSON {name, parameters} tool instruction: the model emits the OpenAI function wrapper
	func(src string, a *analysis) {
		if strings.Contains(src, `Respond in the format {"name": function name`) && strings.Contains(src, "Do not use variables.") {
			a.tools.format.openaiWrapperTrigger = true
		}
	},
	// Laguna
	func(src string, a *analysis) {
		if strings.Contains(src, "laguna_glm_thinking") {
			a.reasoning.start = trimWhitespace(a.reasoning.start)
			a.reasoning.end = trimWhitespace(a.reasoning.end)
			ar := &a.tools.arguments
			ar.valuePrefix = trimWhitespace(ar.valuePrefix)
			ar.valueSuffix = trimWhitespace(ar.valueSuffix)
			ar.separator = trimWhitespace(ar.separator)
			ar.tolerateIntertagWhitespace = true
			a.additionalStops = append(a.additionalStops, "</assistant>")
		}
	},
	// Bailing V3
	func(src string, a *analysis) {
		if strings.Contains(src, "Bailing V3 chat template") {
			a.tools.arguments.valueSuffix = trimWhitespace(a.tools.arguments.valueSuffix)
			a.tools.arguments.tolerateIntertagWhitespace = true
		}
	},
}

// detectAssistantStart is detect_assistant_start_marker.
func (t *Template) detectAssistantStart(r *reasoningAnalysis) string {
	base := probeParams{messages: jarr(probeUser()), enableThinking: true}
	cmp, ok := t.compareVariants(base, func(p *probeParams) {
		p.messages = jarr(probeUser(), probeAssistant(jstr(assistantMsg)))
	})
	if !ok {
		return ""
	}
	msg := cmp.diff.right
	prefix := msg
	if i := strings.Index(msg, assistantMsg); i >= 0 {
		prefix = msg[:i]
	}
	if r.start != "" {
		if i := strings.Index(prefix, trimWhitespace(r.start)); i >= 0 {
			prefix = prefix[:i]
		}
	}
	if r.end != "" {
		if i := strings.Index(prefix, trimWhitespace(r.end)); i >= 0 {
			prefix = prefix[:i]
		}
	}
	return trimWhitespace(prefix)
}

// detectUserStart is detect_user_start_marker.
func (t *Template) detectUserStart() string {
	base := probeParams{messages: jarr(), enableThinking: true}
	cmp, ok := t.compareVariants(base, func(p *probeParams) { p.messages = jarr(probeUser()) })
	if !ok {
		userTwo := jobj().set("role", jstr("user")).set("content", jstr(userMsgTwo))
		base.messages = jarr(userTwo, probeAssistant(jstr(assistantMsg)))
		cmp, ok = t.compareVariants(base, func(p *probeParams) {
			p.messages = jarr(userTwo.clone(), probeAssistant(jstr(assistantMsg)), probeUser())
		})
		if !ok {
			return ""
		}
	}
	msg := cmp.diff.right
	if i := strings.Index(msg, assistantMsg); i >= 0 {
		msg = msg[i+len(assistantMsg):]
	}
	candidate := msg
	if i := strings.Index(msg, userMsg); i >= 0 {
		candidate = msg[:i]
	}
	var b strings.Builder
	seenMarker := false
	for _, m := range segmentizeMarkers(candidate) {
		lower := strings.ToLower(m.value)
		if m.typ == segMarker && !seenMarker && (strings.Contains(lower, "end") || strings.Contains(lower, "close")) {
			continue
		}
		if m.typ == segText && !seenMarker && trimWhitespace(m.value) == "" {
			continue
		}
		seenMarker = seenMarker || m.typ == segMarker
		b.WriteString(m.value)
	}
	return trimWhitespace(b.String())
}

// analyzeReasoning is analyze_reasoning's constructor.
func (t *Template) analyzeReasoning(supportsTools bool) reasoningAnalysis {
	var r reasoningAnalysis
	t.compareReasoningPresence(&r)
	t.compareThinkingEnabled(&r)
	if supportsTools {
		t.compareReasoningScope(&r)
	}
	return r
}

func (t *Template) compareReasoningPresence(r *reasoningAnalysis) {
	base := probeParams{messages: jarr(probeUser(), probeAssistant(jstr(assistantMsg))), enableThinking: true}
	cmp, ok := t.compareVariants(base, func(p *probeParams) {
		p.messages = jarr(probeUser(), probeAssistant(jstr(assistantMsg)).set("reasoning_content", jstr(thinkingContent)))
	})
	if !ok {
		return
	}
	if cmp.diff.right == "" || !strings.Contains(cmp.diff.right, thinkingContent) {
		return
	}
	delimiter := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Literal(thinkingContent).Plus(p.Space()).Plus(p.Optional(p.Tag("post", p.Marker().Plus(p.Space())).Plus(p.Rest())))
	})
	wrapped := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Tag("pre", p.Marker().Plus(p.Space())).PlusLit(thinkingContent).
			Plus(p.Tag("post", p.Space().Plus(p.Marker()).Plus(p.Space()))).Plus(p.Rest())
	})
	res := wrapped.ParseAnywhereAndExtract(cmp.outB)
	if !res.OK() {
		res = delimiter.ParseAnywhereAndExtract(cmp.outB)
	}
	if res.OK() {
		switch {
		case res.Tags["pre"] != "" && res.Tags["post"] != "":
			r.mode, r.start, r.end = reasoningTagBased, res.Tags["pre"], res.Tags["post"]
		case res.Tags["post"] != "":
			r.mode, r.end = reasoningTagBased, res.Tags["post"]
		}
	}
}

func (t *Template) compareThinkingEnabled(r *reasoningAnalysis) {
	base := probeParams{messages: jarr(probeUser()), addGen: true, enableThinking: false}
	cmp, ok := t.compareVariants(base, func(p *probeParams) { p.enableThinking = true })
	if !ok {
		return
	}
	d := cmp.diff
	lt, rt := trimWhitespace(d.left), trimWhitespace(d.right)
	switch {
	case lt == "" && d.right != "":
		if rt != "" && strings.HasSuffix(cmp.outB, rt) && r.start == "" {
			r.start, r.mode = d.right, reasoningTagBased
		}
	case rt == "" && d.left != "":
		if lt != "" && strings.HasSuffix(cmp.outA, lt) && r.end == "" {
			seg := pruneWhitespaceSegments(segmentizeMarkers(cmp.outA))
			if n := len(seg); n >= 2 && seg[n-1].value == lt && seg[n-2].typ == segMarker {
				r.start = seg[n-2].value
			}
			r.end, r.mode = d.left, reasoningTagBased
		}
	case lt != "" && rt != "":
		const anchorLen = 64
		for dir := 0; dir < 2; dir++ {
			base, ext := cmp.outB, cmp.outA
			if dir == 1 {
				base, ext = cmp.outA, cmp.outB
			}
			n := min(len(base), anchorLen)
			anchor := base[len(base)-n:]
			pos := strings.LastIndex(ext, anchor)
			if pos < 0 || pos+n >= len(ext) {
				continue
			}
			extra := trimWhitespace(ext[pos+n:])
			if extra == "" {
				continue
			}
			seg := pruneWhitespaceSegments(segmentizeMarkers(extra))
			if len(seg) == 2 && seg[0].typ == segMarker && seg[1].typ == segMarker {
				if r.start == "" {
					r.start = seg[0].value
				}
				if r.end == "" {
					r.end = seg[1].value
				}
				r.mode = reasoningTagBased
				break
			}
		}
	}
	if r.mode == reasoningNone && r.start == "" && r.end != "" {
		r.mode = reasoningTagBased
	}
}

func (t *Template) compareReasoningScope(r *reasoningAnalysis) {
	withContent := probeAssistant(jstr(assistantMsg)).set("reasoning_content", jstr(thinkingContent))
	base := probeParams{messages: jarr(probeUser(), withContent), tools: probeTools(), enableThinking: true}
	cmp, ok := t.compareVariants(base, func(p *probeParams) {
		withTools := jobj().set("role", jstr("assistant")).set("content", &node{kind: jNull}).
			set("reasoning_content", jstr(thinkingContent)).
			set("tool_calls", jarr(probeCall(funFirst, argsOf(argFirst, "VVVV", argSecond, "XXXX"), callID001)))
		p.messages = jarr(probeUser(), withTools)
	})
	if !ok {
		return
	}
	inA := strings.Contains(cmp.outA, thinkingContent)
	inB := strings.Contains(cmp.outB, thinkingContent)
	if inA || !inB {
		return
	}
	r.mode = reasoningToolsOnly
	wrapped := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Tag("pre", p.Marker().Plus(p.Space())).PlusLit(thinkingContent).Plus(p.Space()).
			Plus(p.Tag("post", p.Marker().Plus(p.Space())))
	})
	if res := wrapped.ParseAnywhereAndExtract(cmp.outB); res.OK() {
		r.start, r.end = res.Tags["pre"], res.Tags["post"]
		return
	}
	delimiter := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Literal(thinkingContent).Plus(p.Space()).Plus(p.Optional(p.Tag("post", p.Marker().Plus(p.Space()))))
	})
	if res := delimiter.ParseAnywhereAndExtract(cmp.outB); res.OK() {
		r.end = res.Tags["post"]
	} else {
		r.mode = reasoningNone
	}
}

// analyzeContent is analyze_content's constructor.
func (t *Template) analyzeContent(r *reasoningAnalysis) contentAnalysis {
	var c contentAnalysis
	base := probeParams{messages: jarr(probeUser(), probeAssistant(jstr(assistantMsg))), tools: probeTools(), enableThinking: true}
	withTools, ok1 := t.compareVariants(base, func(p *probeParams) {
		p.messages = jarr(probeUser(), assistantCalls(probeCall("test_func", argsOf("arg1", "value1"), callID001)))
	})
	withReasoning, ok2 := t.compareVariants(base, func(p *probeParams) {
		p.messages = jarr(probeUser(), probeAssistant(jstr("")).set("reasoning_content", jstr(thinkingContent)))
	})
	if !ok1 || !ok2 {
		return c
	}
	dt, dr := withTools.diff, withReasoning.diff
	found := false
	if trimWhitespace(dt.left) == assistantMsg {
		plain := peg.BuildTagged(func(p *peg.Builder) peg.P {
			return p.Space().PlusLit(dr.left).Plus(p.Space()).Plus(p.Optional(p.Marker())).Plus(p.Space()).Plus(p.End())
		})
		if plain.ParseAndExtract(dr.left).OK() {
			c.mode, found = contentPlain, true
		} else if r.mode != reasoningNone && r.end != "" {
			post := peg.BuildTagged(func(p *peg.Builder) peg.P {
				return p.Literal(r.end).Plus(p.Space()).PlusLit(assistantMsg)
			})
			if post.ParseAnywhereAndExtract(dr.left).OK() {
				c.mode, found = contentPlain, true
			}
		}
	}
	if !found {
		rdiff := dr.left
		if r.end != "" {
			if i := strings.Index(rdiff, r.end); i >= 0 {
				rdiff = rdiff[i+len(r.end):]
			}
		}
		pure := dt.left
		if len(rdiff) > len(dt.left) {
			pure = rdiff
		}
		wrapped := peg.BuildTagged(func(p *peg.Builder) peg.P {
			return p.Tag("pre", p.Marker().Plus(p.Space())).PlusLit(assistantMsg).Plus(p.Space()).
				Plus(p.Tag("post", p.Marker().Plus(p.Space()))).Plus(p.Rest())
		})
		res := wrapped.ParseAnywhereAndExtract(pure)
		c.start, c.end = res.Tags["pre"], res.Tags["post"]
	}
	if c.start != "" || c.end != "" {
		c.mode = contentAlwaysWrapped
	}
	return c
}

// analyzeTools is analyze_tools' constructor.
func (t *Template) analyzeTools(r *reasoningAnalysis) toolsAnalysis {
	a := toolsAnalysis{format: toolFormatAnalysis{functionField: "function", nameField: "name", argsField: "arguments"}}
	t.analyzeToolCalls(&a, r, t.caps.ParallelToolCalls)
	if a.format.mode != toolFormatNone && a.format.mode != toolFormatJSONNative {
		if t.caps.ParallelToolCalls {
			t.checkPerCallMarkers(&a)
		}
		t.extractFunctionMarkers(&a)
		if a.format.mode == toolFormatTagWithTagged {
			t.extractArgumentNameMarkers(&a)
			t.extractArgumentValueMarkers(&a)
		}
		t.extractArgumentSeparator(&a)
		t.extractArgsMarkers(&a)
		t.extractCallIDMarkers(&a)
	}
	return a
}

func toolProbe(msgs ...*node) probeParams {
	return probeParams{messages: jarr(msgs...), tools: probeTools(), enableThinking: true}
}

func (t *Template) analyzeToolCalls(a *toolsAnalysis, r *reasoningAnalysis, parallel bool) {
	cmp, ok := t.compareVariants(toolProbe(probeUser(), probeAssistant(jstr(assistantMsg))), func(p *probeParams) {
		p.messages = jarr(probeUser(), assistantCalls(firstToolCall()))
	})
	if !ok || cmp.diff.right == "" {
		return
	}
	t.analyzeToolCallFormat(a, cmp.diff.right, funFirst, argFirst, r, parallel)
}

func (t *Template) analyzeToolCallFormat(a *toolsAnalysis, haystack, funNeedle, argNeedle string, r *reasoningAnalysis, parallel bool) {
	if funNeedle == "" || argNeedle == "" || haystack == "" {
		return
	}
	inJSON := func(needle string) bool {
		p := peg.BuildTagged(func(p *peg.Builder) peg.P {
			return p.Choice(p.Literal("{"), p.Literal(":")).Spaced(p.Choice(
				p.Tag("dq", p.Literal(`"`).PlusLit(needle).PlusLit(`"`))))
		})
		return p.ParseAnywhereAndExtract(haystack).OK()
	}
	switch {
	case inJSON(funNeedle):
		a.format.mode = toolFormatJSONNative
	case inJSON(argNeedle):
		a.format.mode = toolFormatTagWithJSON
	default:
		a.format.mode = toolFormatTagWithTagged
	}
	clean := haystack
	if r.start != "" {
		if i := strings.Index(haystack, r.start); i >= 0 {
			clean = haystack[:i] + haystack[i+len(r.start):]
		}
	}
	if r.end != "" {
		if i := strings.Index(clean, r.end); i >= 0 {
			clean = clean[:i] + clean[i+len(r.end):]
		}
	}
	if a.format.mode == toolFormatJSONNative {
		t.analyzeJSONNative(a, clean, funNeedle, argNeedle)
		if parallel {
			t.analyzeJSONNativeParallel(a)
		}
	} else {
		t.analyzeNonJSON(a, clean, funNeedle)
	}
	a.format.sectionEnd = trimWhitespace(a.format.sectionEnd)
	a.format.perCallEnd = trimWhitespace(a.format.perCallEnd)
}

func (t *Template) analyzeJSONNativeParallel(a *toolsAnalysis) {
	cmp, ok := t.compareVariants(toolProbe(probeUser(), assistantCalls(firstToolCall())), func(p *probeParams) {
		p.messages = jarr(probeUser(), assistantCalls(firstToolCall(), secondToolCall()))
	})
	if !ok {
		return
	}
	if f := &a.format; f.sectionStart != "" && strings.Contains(cmp.diff.right, f.sectionStart) {
		f.perCallStart, f.perCallEnd = f.sectionStart, f.sectionEnd
		f.sectionStart, f.sectionEnd = "", ""
	}
}

func (t *Template) analyzeJSONNative(a *toolsAnalysis, clean, funNeedle, argNeedle string) {
	f := &a.format
	jsonStart := strings.IndexByte(clean, '{')
	jsonEnd := strings.LastIndexByte(clean, '}')
	if jsonStart < 0 || jsonEnd < jsonStart {
		// the reference takes substr(npos...) here and throws: the analysis fails
		panic(analysisFailure("no JSON object in the tool call"))
	}
	cut := clean[jsonStart : jsonEnd+1]
	call, err := parseJSON([]byte(cut))
	if err != nil {
		panic(analysisFailure("the tool call is not JSON: " + err.Error()))
	}
	register := func(prefix, key string, v *node) {
		qual := key
		if prefix != "" {
			qual = prefix + "." + key
		}
		dumped, _ := v.dumpString()
		switch {
		case v.kind == jString && strings.Contains(v.s, "call0000"):
			f.idField = qual
		case v.kind == jString && v.s == funNeedle:
			f.nameField = qual
		case strings.Contains(dumped, argNeedle):
			f.argsField = qual
		case strings.Contains(key, "id"):
			f.genIDField = qual
		}
	}
	if call.kind == jObject {
		for i, k := range call.keys {
			v := call.vals[i]
			if k == funNeedle {
				f.funNameIsKey = true
				f.nameField, f.argsField = "", ""
				continue
			}
			if d, _ := v.dumpString(); v.kind == jObject && !strings.Contains(d, argNeedle) {
				f.functionField = k
				for j, sk := range v.keys {
					register(k, sk, v.vals[j])
				}
			}
			register("", k, v)
		}
	}
	arrayParser := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Tag("pre", p.Literal("[").Plus(p.Space())).PlusLit(cut).Plus(p.Tag("post", p.Space().PlusLit("]")))
	})
	if res := arrayParser.ParseAnywhereAndExtract(clean); res.OK() {
		f.toolsArrayWrapped = true
		jsonStart -= len(res.Tags["pre"])
		jsonEnd += len(res.Tags["post"])
	}
	jsonEnd++
	type located struct {
		pos  int
		name string
	}
	var params []located
	find := func(s string) int {
		i := strings.Index(clean, s)
		if i < 0 {
			return int(^uint(0) >> 1) // npos sorts last
		}
		return i
	}
	for _, fld := range []string{f.nameField, f.argsField, f.idField, f.genIDField} {
		if fld != "" {
			params = append(params, located{find(fld), fld})
		}
	}
	sortLocated := func(x, y located) bool {
		if x.pos != y.pos {
			return x.pos < y.pos
		}
		return x.name < y.name
	}
	for i := 1; i < len(params); i++ {
		for j := i; j > 0 && sortLocated(params[j], params[j-1]); j-- {
			params[j], params[j-1] = params[j-1], params[j]
		}
	}
	for _, p := range params {
		f.parameterOrder = append(f.parameterOrder, p.name)
	}
	f.sectionStart = trimLeadingWhitespace(substr(clean, 0, jsonStart))
	f.sectionEnd = trimWhitespace(substrFrom(clean, jsonEnd))
	if f.toolsArrayWrapped && f.sectionEnd == "]" {
		f.sectionEnd = ""
	}
}

// analysisFailure is an exception of the analysis (a std::exception in the reference), which makes
// common_chat_templates_apply refuse the request.
type analysisFailure string

func (e analysisFailure) Error() string { return string(e) }

// substr is std::string::substr(pos, n): n clamped to the end, a pos past the end throws std::out_of_range
// (here a panic of analysisFailure, which the analysis turns into its error).
func substr(s string, pos, n int) string {
	if pos < 0 || pos > len(s) {
		panic(analysisFailure("basic_string::substr: __pos > this->size()"))
	}
	if n < 0 || pos+n > len(s) {
		return s[pos:]
	}
	return s[pos : pos+n]
}

func substrFrom(s string, pos int) string { return substr(s, pos, -1) }

func (t *Template) analyzeNonJSON(a *toolsAnalysis, clean, funNeedle string) {
	funMarker := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Tag("fun_marker", p.Choice(
			p.Tag("fun_pre", p.Literal("<").Plus(p.UntilOneOf([]string{">", funNeedle}))).PlusLit(funNeedle).
				Plus(p.Tag("fun_post", p.Negate(p.Space().PlusLit("<")).Plus(p.Until(">")).PlusLit(">"))).Plus(p.Space()),
			p.Tag("fun_pre", p.Literal("[").Plus(p.UntilOneOf([]string{"]", funNeedle}))).PlusLit(funNeedle).
				Plus(p.Tag("fun_post", p.Negate(p.Space().PlusLit("[").Plus(p.Until("]")).PlusLit("]")).Plus(p.Space())))))
	})
	funRes := funMarker.ParseAnywhereAndExtract(clean)
	marker := funNeedle
	if funRes.OK() {
		marker = funRes.Tags["fun_marker"]
	}
	perTool := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Tag("sec_start", p.Marker().Plus(p.Space())).Plus(p.Tag("call_start", p.Marker().Plus(p.Space()))).
			Plus(p.Tag("fun_pre", p.Until(marker))).PlusLit(marker).Plus(p.Tag("rest", p.Rest()))
	})
	section := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Tag("sec_start", p.Marker().Plus(p.Space())).PlusLit(marker).Plus(p.Tag("rest", p.Rest()))
	})
	res := perTool.ParseAnywhereAndExtract(clean)
	var end peg.TaggedResult
	if res.OK() {
		closer := peg.BuildTagged(func(p *peg.Builder) peg.P {
			return p.Tag("call_end", p.Marker().Plus(p.Space())).Plus(p.Tag("sec_end", p.Marker().Plus(p.Space()))).Plus(p.End())
		})
		end = closer.ParseAnywhereAndExtract(res.Tags["rest"])
		a.function.namePrefix = funRes.Tags["fun_pre"] + a.function.namePrefix
	} else {
		res = section.ParseAnywhereAndExtract(clean)
		closer := peg.BuildTagged(func(p *peg.Builder) peg.P {
			return p.Tag("sec_end", p.Marker().Plus(p.Space())).Plus(p.End())
		})
		end = closer.ParseAnywhereAndExtract(res.Tags["rest"])
	}
	a.format.perCallStart = res.Tags["call_start"]
	a.format.perCallEnd = end.Tags["call_end"]
	a.format.sectionStart = res.Tags["sec_start"]
	a.format.sectionEnd = end.Tags["sec_end"]
}

func (t *Template) checkPerCallMarkers(a *toolsAnalysis) {
	cmp, ok := t.compareVariants(toolProbe(probeUser(), assistantCalls(firstToolCall())), func(p *probeParams) {
		p.messages = jarr(probeUser(), assistantCalls(firstToolCall(), secondToolCall()))
	})
	if !ok {
		return
	}
	common := calculateDiffSplit(cmp.diff.suffix, cmp.diff.right)
	second := trimLeadingWhitespace(common.right)
	f := &a.format
	if f.sectionStart != "" && strings.HasPrefix(second, f.sectionStart) {
		f.perCallStart, f.perCallEnd = f.sectionStart, f.sectionEnd
		f.sectionStart, f.sectionEnd = "", ""
	}
	if f.perCallEnd != "" {
		one, two := strings.Count(cmp.outA, f.perCallEnd), strings.Count(cmp.outB, f.perCallEnd)
		if one > 0 && one == two {
			f.sectionEnd = f.perCallEnd
			f.perCallEnd = ""
		}
	}
}

func (t *Template) extractFunctionMarkers(a *toolsAnalysis) {
	base := toolProbe(probeUser(), assistantCalls(firstToolCall()))
	cmp, ok := t.compareVariants(base, func(p *probeParams) {
		p.messages = jarr(probeUser(), assistantCalls(secondToolCall()))
	})
	if !ok {
		return
	}
	d := cmp.diff
	if !strings.Contains(d.left, funFirst) || !strings.Contains(d.right, funSecond) {
		return
	}
	f, fn := &a.format, &a.function
	prefixMarker := f.perCallStart
	if prefixMarker == "" {
		prefixMarker = f.sectionStart
	}
	if prefixMarker != "" {
		if i := strings.LastIndex(d.prefix, prefixMarker); i >= 0 {
			fn.namePrefix = d.prefix[i+len(prefixMarker):]
		}
	}
	nameParser := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Tag("pre", p.Until(funFirst)).PlusLit(funFirst).
			Plus(p.Tag("post", p.ZeroOrMore(p.Negate(p.Marker()).Plus(p.Any()))))
	})
	if res := nameParser.ParseAndExtract(d.left); res.OK() {
		fn.namePrefix += res.Tags["pre"]
		fn.nameSuffix = res.Tags["post"]
	}
	if f.mode == toolFormatTagWithJSON {
		suffixParser := peg.BuildTagged(func(p *peg.Builder) peg.P {
			nonJSON := p.Marker().Or(p.Negate(p.Literal("{")).Plus(p.Negate(p.Literal("["))).Plus(p.Any()))
			afterJSON := p.ZeroOrMore(p.Negate(p.Marker()).Plus(p.Any())).Plus(p.Marker())
			return p.Tag("ext", p.ZeroOrMore(nonJSON)).Plus(afterJSON)
		})
		if res := suffixParser.ParseAndExtract(d.suffix); res.OK() {
			fn.nameSuffix += res.Tags["ext"]
		}
	} else {
		suffixParser := peg.BuildTagged(func(p *peg.Builder) peg.P {
			return p.Tag("ext", p.ZeroOrMore(p.Negate(p.Marker()).Plus(p.Any())))
		})
		if res := suffixParser.ParseAndExtract(d.suffix); res.OK() {
			fn.nameSuffix += res.Tags["ext"]
			argStart := func(p *peg.Builder) peg.P {
				return p.Marker().Plus(p.Space()).Plus(p.Choice(p.Literal(argFirst), p.Literal(argSecond)))
			}
			sepParser := peg.BuildTagged(func(p *peg.Builder) peg.P {
				return p.Tag("sep", p.ZeroOrMore(p.Negate(argStart(p)).Plus(p.Any()))).Plus(argStart(p))
			})
			if sr := sepParser.ParseAndExtract(substrFrom(d.suffix, len(res.Tags["ext"]))); sr.OK() {
				fn.argsSeparator = trimWhitespace(sr.Tags["sep"])
			}
		}
	}
	suffixMarker := f.perCallEnd
	if suffixMarker == "" {
		suffixMarker = f.sectionEnd
	}
	closer := ""
	if suffixMarker == "" {
		nt, ok := t.compareVariants(base, func(p *probeParams) {
			p.messages = jarr(probeUser(), probeAssistant(jstr(assistantMsg)))
		})
		if ok {
			if i := strings.Index(nt.diff.left, "YYYY"); i >= 0 {
				closer = nt.diff.left[i+4:]
			} else {
				// npos + 4 wraps to 3 in the reference
				closer = substrFrom(nt.diff.left, 3)
			}
		}
	} else if i := strings.Index(d.suffix, suffixMarker); i >= 0 {
		closer = d.suffix[:i]
	} else {
		closer = d.suffix
	}
	if closer != "" {
		switch f.mode {
		case toolFormatTagWithTagged:
			cp := peg.BuildTagged(func(p *peg.Builder) peg.P {
				return p.Until("YYYY").PlusLit("YYYY").Plus(p.Space()).Plus(p.Marker()).Plus(p.Space()).Plus(p.Tag("close", p.Rest()))
			})
			if res := cp.ParseAndExtract(closer); res.OK() {
				fn.close = res.Tags["close"]
			}
		case toolFormatTagWithJSON:
			cp := peg.BuildTagged(func(p *peg.Builder) peg.P {
				return p.Until("YYYY").PlusLit("YYYY").Plus(p.Tag("post_val", p.Rest()))
			})
			if res := cp.ParseAndExtract(closer); res.OK() {
				post := res.Tags["post_val"]
				if pos := strings.LastIndexAny(post, "}]"); pos >= 0 && pos < len(post)-1 {
					fn.close = trimLeadingWhitespace(post[pos+1:])
				}
			}
		}
	}
	fn.close = trimLeadingWhitespace(fn.close)
}

func (t *Template) extractArgumentNameMarkers(a *toolsAnalysis) {
	cmp, ok := t.compareVariants(toolProbe(probeUser(), assistantCalls(probeCall(funFirst, argsOf(argFirst, "XXXX"), callID001))), func(p *probeParams) {
		p.messages = jarr(probeUser(), assistantCalls(probeCall(funFirst, argsOf(argSecond, "YYYY"), callID001)))
	})
	if !ok {
		return
	}
	d := cmp.diff
	if d.left == "" || d.right == "" {
		return
	}
	left := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Tag("pre", p.Until(argFirst)).PlusLit(argFirst).Plus(p.Tag("suffix", p.UntilOneOf([]string{`"`, "X"})))
	})
	right := peg.BuildTagged(func(p *peg.Builder) peg.P {
		return p.Tag("pre", p.Until(argSecond)).PlusLit(argSecond).Plus(p.Tag("suffix", p.UntilOneOf([]string{`"`, "Y"})))
	})
	lr, rr := left.ParseAnywhereAndExtract(d.left), right.ParseAnywhereAndExtract(d.right)
	ar := &a.arguments
	if lr.OK() && rr.OK() && lr.Tags["pre"] != "" && lr.Tags["pre"] == rr.Tags["pre"] && lr.Tags["suffix"] == rr.Tags["suffix"] {
		ar.namePrefix, ar.nameSuffix = lr.Tags["pre"], lr.Tags["suffix"]
		return
	}
	if strings.HasPrefix(d.left, argFirst) && strings.HasPrefix(d.right, argSecond) {
		pre := peg.BuildTagged(func(p *peg.Builder) peg.P {
			last := p.Marker().Plus(p.ZeroOrMore(p.Negate(p.Marker()).Plus(p.Any()))).Plus(p.End())
			return p.ZeroOrMore(p.Negate(last).Plus(p.Any())).Plus(p.Tag("name_prefix", last))
		})
		if res := pre.ParseAndExtract(d.prefix); res.OK() {
			ar.namePrefix = res.Tags["name_prefix"]
		} else {
			ar.namePrefix = d.prefix
		}
		after := d.left[len(argFirst):] + d.suffix
		suf := peg.BuildTagged(func(p *peg.Builder) peg.P {
			return p.Tag("suffix", p.ZeroOrMore(p.Negate(p.Marker()).Plus(p.Any())).Plus(p.Marker()).Plus(p.Space()))
		})
		if res := suf.ParseAnywhereAndExtract(after); res.OK() {
			ar.nameSuffix = res.Tags["suffix"]
		}
	}
}

func (t *Template) extractArgumentValueMarkers(a *toolsAnalysis) {
	cmp, ok := t.compareVariants(toolProbe(probeUser(), assistantCalls(probeCall(funFirst, argsOf(argFirst, "XXXX"), callID001))), func(p *probeParams) {
		p.messages = jarr(probeUser(), assistantCalls(probeCall(funFirst, argsOf(argFirst, "YYYY"), callID001)))
	})
	if !ok {
		return
	}
	d := cmp.diff
	if d.left != "XXXX" || d.right != "YYYY" {
		return
	}
	ar := &a.arguments
	ending := argFirst + ar.nameSuffix
	prefix := d.prefix
	if i := strings.LastIndex(prefix, ending); i >= 0 {
		prefix = prefix[i+len(ending):]
	}
	if prefix != "" {
		pp := peg.BuildTagged(func(p *peg.Builder) peg.P {
			last := p.Marker().Plus(p.ZeroOrMore(p.Negate(p.Marker()).Plus(p.Any()))).Plus(p.End())
			return p.ZeroOrMore(p.Negate(last).Plus(p.Any())).Plus(p.Tag("val_prefix", last))
		})
		if res := pp.ParseAndExtract(prefix); res.OK() {
			ar.valuePrefix = res.Tags["val_prefix"]
		} else {
			ar.valuePrefix = prefix
		}
	}
	vs := d.suffix
	if a.function.close != "" {
		if i := strings.Index(vs, a.function.close); i >= 0 {
			vs = vs[:i]
		}
	} else if a.format.perCallEnd != "" || a.format.sectionEnd != "" {
		end := a.format.perCallEnd
		if end == "" {
			end = a.format.sectionEnd
		}
		if i := strings.Index(vs, end); i >= 0 {
			vs = vs[:i]
		}
	}
	if trimWhitespace(vs) != "" {
		ar.valueSuffix = vs
	}
}

func (t *Template) extractArgumentSeparator(a *toolsAnalysis) {
	cmp, ok := t.compareVariants(toolProbe(probeUser(), assistantCalls(probeCall(funFirst, argsOf(argFirst, "XXXX"), callID001))), func(p *probeParams) {
		p.messages = jarr(probeUser(), assistantCalls(firstToolCall()))
	})
	if !ok {
		return
	}
	if cmp.diff.right != "" {
		a.arguments.separator = untilCommonPrefix(cmp.diff.right, argFirst, argSecond)
	}
}

func (t *Template) extractArgsMarkers(a *toolsAnalysis) {
	cmp, ok := t.compareVariants(toolProbe(probeUser(), assistantCalls(probeCall(funFirst, jobj(), callID001))), func(p *probeParams) {
		p.messages = jarr(probeUser(), assistantCalls(probeCall(funFirst, argsOf(argFirst, "XXXX"), callID001)))
	})
	if !ok {
		return
	}
	d := cmp.diff
	f := &a.format
	if f.mode != toolFormatJSONNative {
		return
	}
	prefixMarker := f.sectionStart
	if prefixMarker == "" {
		prefixMarker = f.perCallStart
	}
	suffixMarker := f.sectionEnd
	if suffixMarker == "" {
		suffixMarker = f.perCallEnd
	}
	prefixPos := 0
	if prefixMarker != "" {
		prefixPos = strings.LastIndex(d.prefix, prefixMarker)
		if prefixPos < 0 {
			prefixPos = 0
		}
	}
	suffixPos := len(d.suffix)
	if suffixMarker != "" {
		if i := strings.Index(d.suffix, suffixMarker); i >= 0 {
			suffixPos = i
		}
	}
	prefixCut := substrFrom(d.prefix, prefixPos+len(prefixMarker))
	suffixCut := d.suffix[:suffixPos]
	start := untilCommonPrefix(prefixCut, "{}", `{"first":`)
	end := afterCommonSuffix(suffixCut, "{}", `"XXXX"}`)
	if start != "" || end != "" {
		if i := strings.Index(start, funFirst); i >= 0 {
			start = start[i+len(funFirst):]
		}
		if i := strings.Index(start, callID001); i >= 0 {
			start = start[i+len(callID001):]
		}
		a.arguments.start, a.arguments.end = start, end
	}
}

func (t *Template) extractCallIDMarkers(a *toolsAnalysis) {
	cmp, ok := t.compareVariants(toolProbe(probeUser(), assistantCalls(firstToolCall())), func(p *probeParams) {
		p.messages = jarr(probeUser(), assistantCalls(probeCall(funFirst, argsOf(argFirst, "XXXX", argSecond, "YYYY"), callID999)))
	})
	if !ok {
		return
	}
	d := cmp.diff
	if d.left == "" && d.right == "" {
		return
	}
	common := callID001[:commonPrefixLen(callID001, callID999)]
	inPrefix := strings.LastIndex(d.prefix, funFirst)
	inSuffix := strings.Index(d.suffix, funFirst)
	lastMarker := func(s string) string {
		p := peg.BuildTagged(func(p *peg.Builder) peg.P {
			last := p.Marker().Plus(p.ZeroOrMore(p.Negate(p.Marker()).Plus(p.Any()))).Plus(p.End())
			return p.ZeroOrMore(p.Negate(last).Plus(p.Any())).Plus(p.Tag("m", p.Marker()))
		})
		if r := p.ParseAnywhereAndExtract(s); r.OK() {
			return r.Tags["m"]
		}
		return ""
	}
	firstMarker := func(s string) string {
		p := peg.BuildTagged(func(p *peg.Builder) peg.P { return p.Tag("m", p.Marker()) })
		if r := p.ParseAnywhereAndExtract(s); r.OK() {
			return r.Tags["m"]
		}
		return ""
	}
	id := &a.callID
	switch {
	case inPrefix >= 0 && inSuffix < 0:
		argsInPrefix := -1
		if i := strings.IndexByte(d.prefix[inPrefix:], '{'); i >= 0 {
			argsInPrefix = inPrefix + i
		}
		argsInSuffix := strings.IndexByte(d.suffix, '{')
		if argsInSuffix >= 0 && argsInPrefix < 0 {
			id.pos = callIDBetweenFuncAndArgs
			after := d.prefix[inPrefix+len(funFirst):]
			pp := peg.BuildTagged(func(p *peg.Builder) peg.P {
				return p.Tag("prefix", p.Marker()).
					Plus(p.ZeroOrMore(p.Negate(p.Marker()).Plus(p.Negate(p.Literal(common))).Plus(p.Any()))).PlusLit(common)
			})
			if r := pp.ParseAnywhereAndExtract(after); r.OK() {
				id.prefix = r.Tags["prefix"]
			} else {
				id.prefix = lastMarker(after)
			}
			sp := peg.BuildTagged(func(p *peg.Builder) peg.P {
				return p.ZeroOrMore(p.Negate(p.Marker()).Plus(p.Negate(p.Literal("{"))).Plus(p.Any())).Plus(p.Tag("suffix", p.Marker()))
			})
			if r := sp.ParseAnywhereAndExtract(d.suffix); r.OK() {
				id.suffix = r.Tags["suffix"]
			}
		} else if argsInPrefix >= 0 {
			id.pos = callIDPostArgs
			afterArgs := d.prefix[argsInPrefix:]
			if cb := strings.LastIndexByte(afterArgs, '}'); cb >= 0 {
				id.prefix = lastMarker(afterArgs[cb+1:])
			}
			id.suffix = firstMarker(d.suffix)
		}
	case inSuffix >= 0 && inPrefix < 0:
		id.pos = callIDPreFuncName
		id.prefix = lastMarker(d.prefix)
		id.suffix = firstMarker(d.suffix[:inSuffix])
	}
	if id.prefix == a.arguments.end {
		id.prefix = ""
	}
	if id.suffix == a.arguments.start {
		id.suffix = ""
	}
	if id.pos != callIDNone && id.suffix != "" && strings.HasPrefix(a.format.perCallEnd, id.suffix) {
		a.format.perCallEnd = ""
	}
}

// analyze runs the analysis as common_chat_templates_apply does before any parser is built; its failure (an
// exception in the reference, which makes llama-server refuse to start) is an error wrapping ErrTemplate. The
// families llama.cpp hands to specialized handlers are not analyzed (Apply refuses them).
func (t *Template) analyze() (a *analysis, err error) {
	if specializedFamily(t.source) != "" {
		return &analysis{caps: t.caps}, nil
	}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(analysisFailure)
			if !ok {
				panic(r)
			}
			a, err = nil, fmt.Errorf("%w: Unable to generate parser for this template. Automatic parser generation failed: %v", ErrTemplate, f)
		}
	}()
	return t.analyzeTemplate(), nil
}
