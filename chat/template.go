package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/tokenizer"
)

// ErrTemplate is wrapped by every error about a template: one the engine cannot parse or render, one that raised
// an exception, or a template family whose llama.cpp handling bankml does not implement.
var ErrTemplate = errors.New("chat: template")

// ChatMLSource is the template llama.cpp uses when a model has none (common/chat.cpp CHATML_TEMPLATE_SRC): with
// --jinja, llama-server's default, every model without tokenizer.chat_template gets ChatML, whatever its family;
// llama_chat_apply_template's built-in per-family formats serve only --no-jinja.
const ChatMLSource = "{%- for message in messages -%}\n" +
	"  {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}\n" +
	"{%- endfor -%}\n" +
	"{%- if add_generation_prompt -%}\n" +
	"  {{- '<|im_start|>assistant\n' -}}\n" +
	"{%- endif -%}"

// Vocab is what a template needs of the tokenizer: the texts of the BOS and EOS tokens (bos_token and eos_token in
// the template; "" when the vocabulary has none), whether the tokenizer adds them (llama_vocab_get_add_bos/eos),
// and the texts of the tokens that only tokenize as special tokens with parse_special (CONTROL tokens), used to
// cut the prompt into [Segment]s.
type Vocab struct {
	BOS, EOS       string
	AddBOS, AddEOS bool
	Control        []string
}

// Caps are the template's capabilities as llama.cpp's jinja::caps_get reports them (common/jinja/caps.cpp). They
// decide how messages are prepared: typed content is joined into a string for a template that only reads strings
// (and a string wrapped in a text part for one that only reads parts), a first system message is merged into the
// next message when the template ignores it, and tool-call arguments are passed as objects when the template
// reads them as objects. llama.cpp finds them by tracking which values a probe render touches; bankml runs the
// same probes and looks at the output instead (see detectCaps), which agrees on the oracle's templates.
type Caps struct {
	StringContent     bool
	TypedContent      bool
	Tools             bool
	ToolCalls         bool
	ParallelToolCalls bool
	SystemRole        bool
	PreserveReasoning bool
	ReasoningEffort   bool
	ObjectArguments   bool
}

// Map gives the capabilities under llama.cpp's names (common_chat_templates_get_caps, llama-server's /props).
func (c Caps) Map() map[string]bool {
	return map[string]bool{
		"supports_string_content":      c.StringContent,
		"supports_typed_content":       c.TypedContent,
		"supports_tools":               c.Tools,
		"supports_tool_calls":          c.ToolCalls,
		"supports_parallel_tool_calls": c.ParallelToolCalls,
		"supports_system_role":         c.SystemRole,
		"supports_preserve_reasoning":  c.PreserveReasoning,
		"supports_reasoning_effort":    c.ReasoningEffort,
		"supports_object_arguments":    c.ObjectArguments,
	}
}

// Template is a model's chat template, compiled, with its vocabulary facts and capabilities. It is immutable and
// safe for concurrent use.
type Template struct {
	source  string
	prog    *program
	caps    Caps
	vocab   Vocab
	builtin bool      // no template in the model: ChatMLSource
	toolUse *Template // tokenizer.chat_template.tool_use, used when a request has tools
	// sideStrip: the template calls lstrip() or rstrip() without arguments (see engineGaps)
	sideStrip bool
	an        *analysis      // the autoparser's analysis of the template
	gb        grammarBackend // schemas and grammars (package grammar)
}

// Source is the template text bankml renders (llama.cpp's common_chat_templates_source): the model's text with
// llama.cpp's two source patches applied, or [ChatMLSource], as its lexer keeps it (line ends normalized to LF,
// one trailing newline dropped).
func (t *Template) Source() string { return t.source }

// ToolUseSource is the model's tokenizer.chat_template.tool_use as bankml renders it (common_chat_templates_source
// of "tool_use"), "" when the model has none.
func (t *Template) ToolUseSource() string {
	if t.toolUse == nil {
		return ""
	}
	return t.toolUse.source
}

// Builtin reports whether the model had no template and llama.cpp's ChatML stands in.
func (t *Template) Builtin() bool { return t.builtin }

// Caps returns the template's capabilities.
func (t *Template) Caps() Caps { return t.caps }

// Vocab returns the vocabulary facts the template was built with.
func (t *Template) Vocab() Vocab { return t.vocab }

// SupportsThinking reports whether the template's analysis found reasoning markers (llama.cpp's
// supports_thinking, whose value llama-server takes as the default of enable_thinking).
func (t *Template) SupportsThinking() bool { return t.an.reasoning.mode != reasoningNone }

// ThinkingMarkers are the texts the analysis found before and after reasoning_content in an assistant turn (for
// Qwen3 "<think>\n" and "\n</think>\n\n"), both "" when it shows none.
func (t *Template) ThinkingMarkers() (start, end string) {
	return t.an.reasoning.start, t.an.reasoning.end
}

// SupportsTools reports whether a request's tools reach the model and its tool calls can be parsed: the template
// renders tool calls (supports_tool_calls) and its analysis found their format.
func (t *Template) SupportsTools() bool {
	tt := t.toolTemplate()
	return tt.caps.ToolCalls && tt.an.tools.format.mode != toolFormatNone
}

// toolTemplate is the template a request with tools renders with.
func (t *Template) toolTemplate() *Template {
	if t.toolUse != nil {
		return t.toolUse
	}
	return t
}

// New compiles a template text for a vocabulary. An empty source or "chatml" gives [ChatMLSource] (as
// common_chat_templates_init does). llama.cpp's two literal patches of known failing templates (GPT-OSS's
// "<|channel|>" content check and Mistral's "[TOOL_CALLS]" content check) are applied first. Errors wrap
// [ErrTemplate]: a template the engine cannot parse.
func New(source string, v Vocab) (*Template, error) {
	builtin := source == "" || source == "chatml"
	if builtin {
		source = ChatMLSource
	}
	source = lexSource(patchSource(source))
	prog, err := compile(source)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot parse the chat template: %v", ErrTemplate, err)
	}
	refuse, sideStrip := engineGaps(source)
	if refuse != "" {
		return nil, fmt.Errorf("%w: the template uses %s, which bankml's engine does not run as llama.cpp does", ErrTemplate, refuse)
	}
	t := &Template{source: source, prog: prog, vocab: v, builtin: builtin, sideStrip: sideStrip, gb: defaultGrammar}
	t.caps = detectCaps(t)
	if t.an, err = t.analyze(); err != nil {
		return nil, err
	}
	return t, nil
}

// patchSource applies common_chat_templates_init's replacements of two template lines that its engine cannot run.
func patchSource(src string) string {
	if strings.Contains(src, "<|channel|>") && strings.Contains(src, "in message.content or") {
		src = strings.ReplaceAll(src, `{%- if "<|channel|>analysis<|message|>" in message.content or "<|channel|>final<|message|>" in message.content %}`, "{%- if false %}")
	}
	if strings.Contains(src, "[TOOL_CALLS]") && strings.Contains(src, "if (message['content'] is none or") {
		src = strings.ReplaceAll(src, "{%- if (message['content'] is none or message['content'] == '' or message['content']|length == 0) and (message['tool_calls'] is not defined or message['tool_calls'] is none or message['tool_calls']|length == 0) %}", "{%- if false %}")
	}
	return src
}

// FromGGUF builds the template of a GGUF model as llama-server does at start-up (common_chat_templates_init with
// no override): tokenizer.chat_template (and tokenizer.chat_template.tool_use, used for requests with tools),
// ChatML when the file has neither, bos_token and eos_token from the vocabulary's BOS and EOS tokens, add_bos and
// add_eos as llama_vocab_get_add_bos/eos give them (see [VocabFromGGUF]). A file whose tokenizer is
// "gpt2" with pre-tokenizer "tekken", 40 blocks and no template gets the text "mistral-v7-tekken", llama.cpp's
// one-off name for Mistral-Small-2503, which its Jinja engine then renders as plain text (kept for fidelity).
// Errors wrap [ErrTemplate] (a template that does not parse) or name the metadata at fault.
func FromGGUF(f *gguf.File) (*Template, error) {
	v, err := VocabFromGGUF(f)
	if err != nil {
		return nil, err
	}
	src, _ := f.GetString("tokenizer.chat_template")
	toolSrc, _ := f.GetString("tokenizer.chat_template.tool_use")
	if src == "" && toolSrc == "" {
		pre, _ := f.GetString("tokenizer.ggml.pre")
		nLayer, _ := f.GetUint64(f.Architecture() + ".block_count")
		if model, _ := f.GetString("tokenizer.ggml.model"); model == "gpt2" && pre == "tekken" && nLayer == 40 {
			src = "mistral-v7-tekken"
		}
	}
	if src == "" && toolSrc != "" {
		src = toolSrc
	}
	t, err := New(src, v)
	if err != nil {
		return nil, err
	}
	if toolSrc != "" {
		// llama.cpp ignores a tool-use template that does not parse (it logs the error).
		if tu, err := New(toolSrc, v); err == nil {
			t.toolUse = tu
		}
	}
	return t, nil
}

// VocabFromGGUF reads the vocabulary facts a template needs through the model's tokenizer (tokenizer.FromGGUF,
// which follows llama_vocab::load): see [VocabFromTokenizer]. It fails when the file's tokenizer cannot be built.
func VocabFromGGUF(f *gguf.File) (Vocab, error) {
	t, err := tokenizer.FromGGUF(f)
	if err != nil {
		return Vocab{}, fmt.Errorf("chat: %w", err)
	}
	return VocabFromTokenizer(t), nil
}

// VocabFromTokenizer gives the vocabulary facts a template needs: the BOS and EOS texts as
// common_token_to_piece(special=true) gives them (empty when the vocabulary has no such token), add_bos / add_eos as
// llama_vocab_get_add_bos/eos, and the texts of every token whose attributes mark it CONTROL after llama.cpp's
// load-time adjustments (those are the texts that become tokens only with parse_special).
func VocabFromTokenizer(t tokenizer.Tokenizer) Vocab {
	piece := func(id int32) string {
		if id < 0 || int(id) >= t.NVocab() {
			return ""
		}
		return string(t.TokenToPiece(id, true))
	}
	v := Vocab{BOS: piece(t.BOS()), EOS: piece(t.EOS()), AddBOS: t.AddBOS(), AddEOS: t.AddEOS()}
	for id := int32(0); int(id) < t.NVocab(); id++ {
		if t.TokenAttr(id)&tokenizer.AttrControl != 0 {
			if s := t.TokenText(id); s != "" {
				v.Control = append(v.Control, s)
			}
		}
	}
	return v
}

// The probe strings of detectCaps, chosen not to occur in templates.
const (
	probeString    = "STRING_MARKER"
	probeTyped     = "TYPED_MARKER_5e1f"
	probeSystem    = "System message 7c2d"
	probeToolDef   = "TOOLDEF_NAME_91aa"
	probeToolCall  = "TOOLCALL_NAME_91ab"
	probeArgValue  = "ARG_VALUE_91ac"
	probeSecond    = "TOOLCALL_SECOND_91ad"
	probeReasoning = "<REASONING_CONTENT_PLACEHOLDER>"
)

// probe renders the template with ctx as llama.cpp's caps_try_execute does (bos and eos "", generation prompt on,
// tools [] unless given), reporting the output and whether it rendered.
func (t *Template) probe(messages, tools *node, extra func(*node)) (string, bool) {
	if tools == nil {
		tools = jarr()
	}
	ctx := jobj().set("messages", messages).set("tools", tools).set("bos_token", jstr("")).
		set("eos_token", jstr("")).set("add_generation_prompt", jbool(true))
	if extra != nil {
		extra(ctx)
	}
	out, err := t.prog.render(ctx, time.Now())
	return out, err == nil
}

func msg(role string, content *node) *node {
	return jobj().set("role", jstr(role)).set("content", content)
}

// detectCaps runs caps_get's probes: typed content, system role, tools and tool calls with object then string
// arguments, parallel tool calls, preserved reasoning; a capability holds when the probe renders and its marker
// reaches the output (llama.cpp asks whether the value was read, which a template can do without printing it).
func detectCaps(t *Template) Caps {
	c := Caps{StringContent: true, Tools: true, ToolCalls: true, SystemRole: true, ParallelToolCalls: true}
	// Content.
	outS, okS := t.probe(jarr(msg("user", jstr(probeString))), nil, nil)
	parts := jarr(jobj().set("type", jstr("text")).set("text", jstr(probeTyped)))
	outT, okT := t.probe(jarr(msg("user", parts)), nil, nil)
	if okT && strings.Contains(outT, probeTyped) && !strings.Contains(outT, "'text': '"+probeTyped+"'") &&
		!strings.Contains(outT, `"text": "`+probeTyped+`"`) {
		c.TypedContent = true
	}
	if !okS || (c.TypedContent && !strings.Contains(outS, probeString)) {
		c.StringContent = false
	}
	// System role.
	if out, ok := t.probe(jarr(msg("system", jstr(probeSystem)), msg("user", jstr("User message"))), nil, nil); !ok || !strings.Contains(out, probeSystem) {
		c.SystemRole = false
	}
	// Tools.
	toolDefs := jarr(jobj().set("name", jstr("tool")).set("type", jstr("function")).set("function",
		jobj().set("name", jstr(probeToolDef)).set("description", jstr("Tool description")).set("parameters",
			jobj().set("type", jstr("object")).set("properties", jobj().set("arg",
				jobj().set("type", jstr("string")).set("description", jstr("Arg description")))).
				set("required", jarr(jstr("arg"))))))
	call := func(name string, args *node) *node {
		return jobj().set("id", jstr("call00001")).set("type", jstr("function")).set("function",
			jobj().set("name", jstr(name)).set("arguments", args))
	}
	convo := func(calls ...*node) *node {
		return jarr(msg("user", jstr("User message")),
			jobj().set("role", jstr("assistant")).set("content", jstr("")).set("tool_calls", jarr(calls...)),
			jobj().set("role", jstr("tool")).set("content", jstr("Tool response")).set("tool_call_id", jstr("call00001")),
			msg("assistant", jstr("The tool response was 'tool response'")),
			msg("user", jstr("User message")))
	}
	objArgs := jobj().set("arg", jstr(probeArgValue))
	if out, ok := t.probe(convo(call(probeToolCall, objArgs)), toolDefs, nil); ok {
		c.Tools = strings.Contains(out, probeToolDef)
		c.ObjectArguments = strings.Contains(out, probeArgValue)
		c.ToolCalls = c.ObjectArguments || strings.Contains(out, probeToolCall) || strings.Contains(out, "call00001")
	}
	if !c.ObjectArguments {
		out, ok := t.probe(convo(call(probeToolCall, jstr(`{"arg": "`+probeArgValue+`"}`))), toolDefs, nil)
		if !ok {
			c.Tools, c.ToolCalls = false, false
		} else {
			c.Tools = strings.Contains(out, probeToolDef)
			c.ToolCalls = strings.Contains(out, probeToolCall) || strings.Contains(out, probeArgValue) || strings.Contains(out, "call00001")
		}
	}
	var args *node = jstr(`{"arg": "value"}`)
	if c.ObjectArguments {
		args = jobj().set("arg", jstr("value"))
	}
	if out, ok := t.probe(convo(call(probeToolCall, args), call(probeSecond, args)), toolDefs, nil); !ok || !strings.Contains(out, probeSecond) {
		c.ParallelToolCalls = false
	}
	// Preserved reasoning.
	thinking := func(ctx *node) {
		ctx.set("enable_thinking", jbool(true))
		setPreserveReasoning(ctx, true)
	}
	asst := func(rc string) *node {
		return jobj().set("role", jstr("assistant")).set("content", jstr("Assistant message")).set("reasoning_content", jstr(rc))
	}
	if out, _ := t.probe(jarr(msg("user", jstr("User message")), asst(probeReasoning), msg("user", jstr("User message")),
		asst("Reasoning content"), msg("user", jstr("User message"))), nil, thinking); strings.Contains(out, probeReasoning) {
		c.PreserveReasoning = true
	}
	c.ReasoningEffort = strings.Contains(t.source, "reasoning_effort") || strings.Contains(t.source, "reasoning_strength")
	return c
}

// setPreserveReasoning sets the variables caps_apply_preserve_reasoning sets.
func setPreserveReasoning(ctx *node, on bool) {
	ctx.set("preserve_thinking", jbool(on)).set("clear_thinking", jbool(!on)).
		set("truncate_history_thinking", jbool(!on)).set("drop_thinking", jbool(!on))
}
