package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/grammar"
	"github.com/bankml/bankml/sample"
)

// The constraints of an answer: the grammar a chat template's parser made for tools or a response format, a
// JSON schema or a GBNF grammar of the request, lazy grammars and their triggers, and the parsing of a chat
// answer into content, reasoning and tool calls (llama-server's server-common.cpp oaicompat_chat_params_parse,
// server-schema.cpp's grammar fields, server-task.cpp's task_result_state).

// constraintFields are the grammar fields llama-server reads on /completion and /v1/completions
// (server-schema.cpp): json_schema (converted to GBNF), grammar, grammar_lazy, grammar_triggers and
// preserved_tokens.
type constraintFields struct {
	JSONSchema      json.RawMessage `json:"json_schema"`
	Grammar         json.RawMessage `json:"grammar"`
	GrammarLazy     *bool           `json:"grammar_lazy"`
	GrammarTriggers json.RawMessage `json:"grammar_triggers"`
	PreservedTokens json.RawMessage `json:"preserved_tokens"`
	ResponseFormat  json.RawMessage `json:"response_format"`
	Tools           json.RawMessage `json:"tools"`
	ToolChoice      json.RawMessage `json:"tool_choice"`
	budgetFields
}

// budgetFields are the reasoning budget's fields (server-schema.cpp; on the chat route the template's thinking
// tags replace the tags and thinking_budget_tokens is an alias, server-common.cpp).
type budgetFields struct {
	BudgetTokens   *int64          `json:"reasoning_budget_tokens"`
	ThinkingTokens *int64          `json:"thinking_budget_tokens"`
	StartTag       *string         `json:"reasoning_budget_start_tag"`
	EndTags        json.RawMessage `json:"reasoning_budget_end_tags"`
	EndTag         *string         `json:"reasoning_budget_end_tag"`
	Message        *string         `json:"reasoning_budget_message"`
	Control        *bool           `json:"reasoning_control"`
}

// reasoningBudget sets the reasoning budget sampler's parameters on p (common/reasoning-budget.cpp, which
// package sample runs): the start tag's tokens, the end tags' tokens, the budget (-1: none) and the forced end
// (the message's tokens, then the first end tag's), reasoning_control. On a chat route with a template that
// has thinking tags (startTag, endTags), they are the template's, the budget is reasoning_budget_tokens or
// thinking_budget_tokens and the message always set (oaicompat_chat_params_parse); elsewhere the request's
// fields, as server-schema.cpp reads them. With a lazy grammar the sampler keeps the grammar asleep inside the
// reasoning block. A budget (>= 0) or reasoning_control without both tags is refused, where llama-server
// ignores it; reasoning_control is taken, but bankml serves no control route to end reasoning early with.
func (s *Server) reasoningBudget(f budgetFields, p *sample.Params, chatRoute bool, startTag string, endTags []string) error {
	tokens := int64(-1)
	var start string
	var ends []string
	var msg string
	msgSet := false
	if chatRoute && len(endTags) > 0 {
		switch {
		case f.BudgetTokens != nil:
			tokens = *f.BudgetTokens
		case f.ThinkingTokens != nil:
			tokens = *f.ThinkingTokens
		}
		start, ends, msg, msgSet = startTag, endTags, deref(f.Message, ""), true
	} else {
		if f.BudgetTokens != nil {
			tokens = *f.BudgetTokens
		}
		start = deref(f.StartTag, "")
		switch {
		case present(f.EndTags):
			if err := json.Unmarshal(f.EndTags, &ends); err != nil {
				return badRequest("Field 'reasoning_budget_end_tags': expected an array of strings")
			}
		case f.EndTag != nil:
			ends = []string{*f.EndTag}
		}
		if f.Message != nil {
			msg, msgSet = *f.Message, true
		}
	}
	if tokens < -1 || tokens > math.MaxInt32 {
		return badRequest("Field 'reasoning_budget_tokens': %d is outside [-1, %d]", tokens, math.MaxInt32)
	}
	p.ReasoningBudgetTokens, p.ReasoningControl = int32(tokens), deref(f.Control, false)
	p.ReasoningBudgetStart, p.ReasoningBudgetEnd, p.ReasoningBudgetForced = nil, nil, nil
	if start != "" {
		p.ReasoningBudgetStart = s.m.Tokenizer.Tokenize(start, false, true)
	}
	for _, e := range ends {
		if e != "" {
			p.ReasoningBudgetEnd = append(p.ReasoningBudgetEnd, s.m.Tokenizer.Tokenize(e, false, true))
		}
	}
	if msgSet && len(p.ReasoningBudgetEnd) > 0 {
		if msg != "" {
			p.ReasoningBudgetForced = s.m.Tokenizer.Tokenize(msg, false, true)
		}
		p.ReasoningBudgetForced = append(p.ReasoningBudgetForced, p.ReasoningBudgetEnd[0]...)
	}
	if (tokens >= 0 || p.ReasoningControl) && (len(p.ReasoningBudgetStart) == 0 || len(p.ReasoningBudgetEnd) == 0) {
		field := "reasoning_budget_tokens"
		if tokens < 0 {
			field = "reasoning_control"
		}
		return badRequest("Field '%s': no reasoning block to budget (the chat template has no thinking tags, or reasoning_budget_start_tag and reasoning_budget_end_tags are missing); llama-server ignores it", field)
	}
	return nil
}

// schemaGrammar converts a request's JSON schema to GBNF as json_schema_to_grammar does (an empty schema {} is
// any object). Refused with a 400: a schema the converter refuses ("\"json_schema\": JSON schema conversion
// failed: ...", llama-server's words) and, unlike llama-server (which prints a warning and accepts any string
// there), a pattern the converter cannot express and a constraint no value meets (minimum above maximum, ...:
// grammar.SchemaDocument.Contradictions), refused before any generation.
func schemaGrammar(field string, raw json.RawMessage) (string, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && len(obj) == 0 {
		raw = []byte(`{"type":"object"}`)
	}
	failed := func(msg string) error {
		if !strings.HasPrefix(msg, "JSON schema conversion failed") {
			msg = "JSON schema conversion failed:\n" + msg
		}
		return badRequest("%q: %s", field, msg)
	}
	doc, err := grammar.ParseSchema(raw)
	if err != nil {
		var se *grammar.SchemaError
		if errors.As(err, &se) {
			return "", failed(se.Msg)
		}
		return "", badRequest("Field '%s': %v", field, err)
	}
	var ue *grammar.UnsatisfiableError
	if errors.As(doc.Satisfiable(), &ue) {
		return "", badRequest("%q: %s: no value can satisfy this schema, so bankml refuses it before generating (llama.cpp converts it without a word)", field, ue.Msg)
	}
	var warnings []string
	g, err := grammar.Build(func(b *grammar.Builder) { b.AddSchema("root", doc.Root) }, grammar.BuildOptions{Warnings: &warnings})
	if err != nil {
		return "", failed(err.Error())
	}
	if len(warnings) > 0 {
		return "", badRequest("%q: %s: bankml refuses a schema it cannot enforce (llama.cpp generates without it)", field, strings.Join(warnings, "; "))
	}
	return g, nil
}

// completionConstraints reads /completion's and /v1/completions' grammar fields into p, as server-schema.cpp
// does: json_schema (converted; it wins over a grammar given with it, as there) or grammar, grammar_lazy,
// preserved_tokens (each string that is one token), grammar_triggers ([{"type", "value", "token"}]: a word
// that is one token must be a preserved token and becomes a token trigger). Refused with a 400 where
// llama-server would answer unconstrained or loosely: a lazy grammar without triggers, response_format and
// tools (which these routes do not read: llama-server ignores them), a trigger of an unknown type.
func (s *Server) completionConstraints(body []byte, p *sample.Params) error {
	var f constraintFields
	if err := decodeJSON(body, &f); err != nil {
		return err
	}
	if present(f.ResponseFormat) {
		var rf struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(f.ResponseFormat, &rf) != nil || (rf.Type != "" && rf.Type != "text") {
			return badRequest("Field 'response_format': read on /v1/chat/completions only (llama-server ignores it here and answers unconstrained); use json_schema")
		}
	}
	if present(f.Tools) && string(f.Tools) != "[]" {
		return badRequest("Field 'tools': read on /v1/chat/completions only (llama-server ignores it here)")
	}
	p.Grammar, p.GrammarType = "", 0
	switch {
	case present(f.JSONSchema) && !present(f.Grammar):
		g, err := schemaGrammar("json_schema", f.JSONSchema)
		if err != nil {
			return err
		}
		p.Grammar, p.GrammarType = g, sample.GrammarOutputFormat
	case present(f.Grammar):
		var g string
		if err := json.Unmarshal(f.Grammar, &g); err != nil {
			return badRequest("Field 'grammar': expected a string")
		}
		if present(f.JSONSchema) && g != "" {
			return badRequest("Field 'grammar': a grammar and a json_schema given together (llama-server takes the grammar and drops the schema); give one")
		}
		p.Grammar, p.GrammarType = g, sample.GrammarUser
	}
	p.GrammarLazy = deref(f.GrammarLazy, false)
	if present(f.PreservedTokens) {
		var words []string
		if err := json.Unmarshal(f.PreservedTokens, &words); err != nil {
			return badRequest("Field 'preserved_tokens': expected an array of strings")
		}
		p.PreservedTokens = s.preservedTokens(words)
	}
	if present(f.GrammarTriggers) {
		var ts []struct {
			Type  *int    `json:"type"`
			Value *string `json:"value"`
			Token *int32  `json:"token"`
		}
		if err := json.Unmarshal(f.GrammarTriggers, &ts); err != nil {
			return badRequest("Field 'grammar_triggers': expected an array of {\"type\", \"value\"} objects")
		}
		for i, t := range ts {
			if t.Type == nil || t.Value == nil || (*t.Type == int(sample.TriggerToken) && t.Token == nil) {
				return badRequest("Field 'grammar_triggers': trigger %d needs type and value (and token for type 0)", i)
			}
			tr := sample.GrammarTrigger{Type: sample.TriggerType(*t.Type), Value: *t.Value}
			switch tr.Type {
			case sample.TriggerToken:
				tr.Token = *t.Token
				if tr.Token < 0 || int(tr.Token) >= s.m.Tokenizer.NVocab() {
					return badRequest("Field 'grammar_triggers': trigger %d: token %d is outside the vocabulary", i, tr.Token)
				}
				p.GrammarTriggers = append(p.GrammarTriggers, tr)
			case sample.TriggerWord:
				wt, err := s.wordTrigger(tr.Value, p.PreservedTokens)
				if err != nil {
					return err
				}
				p.GrammarTriggers = append(p.GrammarTriggers, wt)
			case sample.TriggerPattern, sample.TriggerPatternFull:
				p.GrammarTriggers = append(p.GrammarTriggers, tr)
			default:
				return badRequest("Field 'grammar_triggers': trigger %d: unknown type %d (0 token, 1 word, 2 pattern, 3 full pattern)", i, *t.Type)
			}
		}
	}
	if p.Grammar != "" && p.GrammarLazy && len(p.GrammarTriggers) == 0 {
		return badRequest("Field 'grammar_triggers': Error: no triggers set for lazy grammar!")
	}
	return s.reasoningBudget(f.budgetFields, p, false, "", nil)
}

// preservedTokens keeps the words that tokenize (with special parsing) to one token, as llama-server's
// preserved_tokens field does.
func (s *Server) preservedTokens(words []string) []int32 {
	var out []int32
	for _, w := range words {
		if ids := s.m.Tokenizer.Tokenize(w, false, true); len(ids) == 1 && !slices.Contains(out, ids[0]) {
			out = append(out, ids[0])
		}
	}
	return out
}

// wordTrigger is server-schema.cpp's word trigger: a word that is one token becomes a token trigger and must be
// a preserved token; a longer one stays a word.
func (s *Server) wordTrigger(word string, preserved []int32) (sample.GrammarTrigger, error) {
	ids := s.m.Tokenizer.Tokenize(word, false, true)
	if len(ids) != 1 {
		return sample.GrammarTrigger{Type: sample.TriggerWord, Value: word}, nil
	}
	if !slices.Contains(preserved, ids[0]) {
		return sample.GrammarTrigger{}, badRequest("Field 'grammar_triggers': Grammar trigger word should be marked as preserved token: %s", word)
	}
	return sample.GrammarTrigger{Type: sample.TriggerToken, Value: word, Token: ids[0]}, nil
}

// chatConstraints sets what a chat template's parser made for the request (chat.Result) on its sampling and
// stop strings, as oaicompat_chat_params_parse passes them to the task: the grammar (type tool_calls, fed the
// generation prompt when not lazy), grammar_lazy, the triggers (a one-token word becomes a token trigger),
// the preserved tokens, the generation prompt and the template's additional stop strings. A request that
// names a grammar of its own keeps it (the template made none: a grammar with tools or a response format is
// refused before). grammar_lazy and grammar_triggers are not read on this route (llama-server overwrites
// them with the template's): given, they are refused.
func (s *Server) chatConstraints(body []byte, req *engine.Request, res chat.Result) error {
	var f constraintFields
	if err := decodeJSON(body, &f); err != nil {
		return err
	}
	if f.GrammarLazy != nil || present(f.GrammarTriggers) {
		return badRequest("Field 'grammar_lazy'/'grammar_triggers': not read on /v1/chat/completions (llama-server replaces them by the chat template's); use /completion for a lazy grammar of your own")
	}
	p := &req.Sampling
	p.PreservedTokens = s.preservedTokens(res.PreservedTokens)
	p.GenerationPrompt = res.GenerationPrompt
	if res.Grammar != "" {
		p.Grammar, p.GrammarType = res.Grammar, sample.GrammarToolCalls
		p.GrammarLazy = res.GrammarLazy
		p.GrammarTriggers = nil
		for _, t := range res.Triggers {
			tr := sample.GrammarTrigger{Type: sample.TriggerType(t.Type), Value: t.Value, Token: t.Token}
			if tr.Type == sample.TriggerWord {
				var err error
				if tr, err = s.wordTrigger(t.Value, p.PreservedTokens); err != nil {
					return err
				}
			}
			p.GrammarTriggers = append(p.GrammarTriggers, tr)
		}
	} else if present(f.JSONSchema) && p.Grammar == "" {
		// a json_schema the template did not use: converted as /completion does (chat.ParseRequest refuses the
		// non-object schemas llama-server's template skips, so this is a guard, not a path a request takes)
		g, err := schemaGrammar("json_schema", f.JSONSchema)
		if err != nil {
			return err
		}
		p.Grammar, p.GrammarType = g, sample.GrammarOutputFormat
	}
	req.Stop = append(req.Stop, res.AdditionalStops...)
	return s.reasoningBudget(f.budgetFields, p, true, res.ThinkingStartTag, res.ThinkingEndTags)
}

// answerState is task_result_state for a chat answer: the text generated so far, the message parsed from it
// and the ids given to its tool calls (random, as llama-server's gen_tool_call_id, kept across updates).
type answerState struct {
	parser *chat.Parser
	text   strings.Builder
	msg    chat.Answer
	ids    []string
}

// update is task_result_state::update_chat_msg: the text added, the answer parsed again (partial while
// generating), and the diffs from the previous answer. A parse that yields nothing changes nothing.
func (a *answerState) update(added string, partial bool) ([]chat.AnswerDiff, error) {
	a.text.WriteString(added)
	msg, err := a.parser.Parse(a.text.String(), partial)
	if err != nil {
		return nil, err
	}
	if msg.Empty() {
		return nil, nil
	}
	msg.SetToolCallIDs(&a.ids, randomString)
	diffs, err := chat.Diffs(a.msg, msg)
	if err != nil {
		return nil, err
	}
	a.msg = msg
	return diffs, nil
}

// sendable is an answer's text as llama-server's JSON carries it (jsonText: bytes that are not UTF-8, which
// the parser lets through, as nlohmann's replace handler writes them).
func sendable(a chat.Answer) chat.Answer { return encodedAnswer(a, jsonText) }

// encodedAnswer is a with every text passed through enc.
func encodedAnswer(a chat.Answer, enc func(string) string) chat.Answer {
	out := chat.Answer{Content: enc(a.Content), ReasoningContent: enc(a.ReasoningContent)}
	for _, tc := range a.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, chat.ToolCall{Name: enc(tc.Name), Arguments: enc(tc.Arguments), ID: tc.ID})
	}
	return out
}

// messageJSON is common_chat_msg::to_json_oaicompat for an answer: role, content ("" when none), then
// reasoning_content when not empty, then tool_calls [{type, function {name, arguments}, id}]; strings as
// sendable writes them.
func messageJSON(a chat.Answer) map[string]any {
	a = sendable(a)
	m := map[string]any{"role": "assistant", "content": a.Content}
	if a.ReasoningContent != "" {
		m["reasoning_content"] = a.ReasoningContent
	}
	if len(a.ToolCalls) > 0 {
		calls := make([]any, len(a.ToolCalls))
		for i, tc := range a.ToolCalls {
			c := map[string]any{"type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}}
			if tc.ID != "" {
				c["id"] = tc.ID
			}
			calls[i] = c
		}
		m["tool_calls"] = calls
	}
	return m
}

// receiptAnswer is the answer a chat receipt hashes and the history keeps: the message's content when that is
// all it has (the text the client shows), else the message object's JSON as bankml writes it (messageJSON:
// role, content, reasoning_content, tool_calls; keys sorted, no HTML escaping); text that is not UTF-8 as
// llama-server's routes send it (jsonText). The Ollama routes, which send it as Go's encoding/json does, hash
// receiptAnswer(encodedAnswer(a, clientText)) (both encodings leave valid UTF-8 as it is).
func receiptAnswer(a chat.Answer) []byte {
	if a.ReasoningContent == "" && len(a.ToolCalls) == 0 {
		return []byte(jsonText(a.Content))
	}
	b, err := marshalJSON(messageJSON(a))
	if err != nil {
		return []byte(jsonText(a.Content))
	}
	return b
}

// diffJSON is server_chat_msg_diff_to_json_oaicompat: a streamed delta with reasoning_content and content when
// they grew, and a tool call's index with its id and type (when the id is new), name and argument text.
func diffJSON(d chat.AnswerDiff) map[string]any {
	delta := map[string]any{}
	if d.ReasoningContentDelta != "" {
		delta["reasoning_content"] = jsonText(d.ReasoningContentDelta)
	}
	if d.ContentDelta != "" {
		delta["content"] = jsonText(d.ContentDelta)
	}
	if d.ToolCallIndex >= 0 {
		tc := map[string]any{"index": d.ToolCallIndex}
		if d.ToolCallDelta.ID != "" {
			tc["id"] = d.ToolCallDelta.ID
			tc["type"] = "function"
		}
		if d.ToolCallDelta.Name != "" || d.ToolCallDelta.Arguments != "" {
			fn := map[string]any{}
			if d.ToolCallDelta.Name != "" {
				fn["name"] = jsonText(d.ToolCallDelta.Name)
			}
			if d.ToolCallDelta.Arguments != "" {
				fn["arguments"] = jsonText(d.ToolCallDelta.Arguments)
			}
			tc["function"] = fn
		}
		delta["tool_calls"] = []any{tc}
	}
	return delta
}

// chatFinishReason is the finish_reason of a chat answer: "tool_calls" when a stopped answer made tool calls.
func chatFinishReason(res engine.Result, a chat.Answer) string {
	if res.FinishReason == "stop" && len(a.ToolCalls) > 0 {
		return "tool_calls"
	}
	return res.FinishReason
}

// answerError is the error of an answer that does not parse in the template's format: llama-server's 500
// (the parser's exception reaches its handler).
func answerError(err error) *APIError {
	return &APIError{Type: TypeServer, Message: fmt.Sprintf("%v", err)}
}
