package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/sample"
)

// personSchema is a plain JSON schema (no zod): the answers must follow it.
var personSchema = map[string]any{"type": "object", "properties": map[string]any{
	"name": map[string]any{"type": "string", "maxLength": 16},
	"age":  map[string]any{"type": "integer", "minimum": 0, "maximum": 120},
}, "required": []any{"name", "age"}, "additionalProperties": false}

// alarmTool's arguments hold no free text (the reference's tool-call grammar keeps a parameter's type, not
// its maxLength or bounds; the steering biases would fill free strings with "<tool_call>").
var alarmTool = map[string]any{"type": "function", "function": map[string]any{
	"name": "set_alarm", "description": "Set an alarm",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{
		"hour": map[string]any{"type": "integer"},
		"half": map[string]any{"type": "string", "enum": []any{"am", "pm"}},
	}, "required": []any{"hour", "half"}}}}

// conforms checks a decoded JSON value against the subset of JSON Schema these tests use: type, properties,
// required, additionalProperties false, maxLength, minimum and maximum.
func conforms(v any, schema map[string]any) error {
	switch schema["type"] {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%v is not an object", v)
		}
		props, _ := schema["properties"].(map[string]any)
		for _, r := range schema["required"].([]any) {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("required %q missing from %v", r, obj)
			}
		}
		for k, pv := range obj {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if schema["additionalProperties"] == false {
					return fmt.Errorf("property %q is not allowed", k)
				}
				continue
			}
			if err := conforms(pv, ps); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%v is not a string", v)
		}
		if e, ok := schema["enum"].([]any); ok && !slices.Contains(e, any(s)) {
			return fmt.Errorf("%q is not one of %v", s, e)
		}
		if m, ok := schema["maxLength"].(int); ok && len([]rune(s)) > m {
			return fmt.Errorf("%q is longer than %d", s, m)
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			return fmt.Errorf("%v is not an integer", v)
		}
		if m, ok := schema["minimum"].(int); ok && f < float64(m) {
			return fmt.Errorf("%v < %d", f, m)
		}
		if m, ok := schema["maximum"].(int); ok && f > float64(m) {
			return fmt.Errorf("%v > %d", f, m)
		}
	}
	return nil
}

// constrained is the reference's answer to a chat body with constraints: the template's prompt, grammar,
// triggers, preserved tokens and generation prompt from common_chat_templates_apply, the tokens of its grammar
// sampler and chain (reftest.Generate), and common_chat_parse of their text.
func (o *oracle) constrained(t testing.TB, body map[string]any, p sample.Params, n int) (answer, reference.ChatParse) {
	t.Helper()
	o.chatParse(t, map[string]any{"messages": body["messages"]}, "") // starts the shim
	b, _ := json.Marshal(body)
	ga, err := chatShim.Apply(o.path, b, -1)
	if err != nil || ga.Error != "" {
		t.Fatalf("reference apply: %v %s", err, ga.Error)
	}
	prompt := o.tokenize(t, ga.Prompt)
	if ga.Grammar != "" {
		p.Grammar, p.GrammarType, p.GrammarLazy = ga.Grammar, sample.GrammarToolCalls, ga.GrammarLazy
	}
	for _, w := range ga.PreservedTokens {
		if ids, err := o.ref.Tokenize(w, false, true); err == nil && len(ids) == 1 {
			p.PreservedTokens = append(p.PreservedTokens, ids[0])
		}
	}
	for _, tr := range ga.Triggers {
		st := sample.GrammarTrigger{Type: sample.TriggerType(tr.Type), Value: tr.Value}
		if ids, err := o.ref.Tokenize(tr.Value, false, true); err == nil && len(ids) == 1 && st.Type == sample.TriggerWord {
			st.Type, st.Token = sample.TriggerToken, ids[0]
		}
		p.GrammarTriggers = append(p.GrammarTriggers, st)
	}
	p.GenerationPrompt = ga.GenerationPrompt
	s, err := o.ref.NewSession(o.nCtx, refThreads)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := reftest.Generate(o.ref, s, reftest.Turn{Prompt: prompt, Sampling: p, NPredict: n, Stop: ga.AdditionalStops})
	if err != nil {
		t.Fatal(err)
	}
	pa, err := chatShim.ApplyParse(o.path, b, -1, []string{a.Text})
	if err != nil || pa.Error != "" {
		t.Fatalf("reference parse: %v %s", err, pa.Error)
	}
	return answer{tokens: a.Tokens, text: a.Text, finish: a.Finish}, pa.Parses[0][len(pa.Parses[0])-1]
}

// steer are logit biases (by token text, each one token) that make the random model start tool calls and end
// its turn where the grammar allows: the template's "<tool_call>" and "\n", and "<|im_end|>".
func (o *oracle) steer(t testing.TB) ([]sample.LogitBias, map[string]float64) {
	t.Helper()
	var lb []sample.LogitBias
	obj := map[string]float64{}
	for _, b := range []struct {
		text string
		bias float32
	}{{"<tool_call>", 12}, {"\n", 10}, {"<|im_end|>", 14}} {
		ids, err := o.ref.Tokenize(b.text, false, true)
		if err != nil || len(ids) != 1 {
			t.Fatalf("%q is not one token: %v %v", b.text, ids, err)
		}
		lb = append(lb, sample.LogitBias{Token: ids[0], Bias: b.bias})
		obj[fmt.Sprint(ids[0])] = float64(b.bias)
	}
	return lb, obj
}

// npmResultTools is npmResult with the chat message's reasoning and tool calls.
type npmResultTools struct {
	npmResult
	Reasoning string `json:"reasoning"`
	ToolCalls []struct {
		ID, Name, Arguments string
	} `json:"tool_calls"`
}

// TestOpenAINpmClientGetsSchemaAnswersAndToolCalls runs the official `openai` npm client with response_format
// json_schema (a plain JSON schema, no zod) on stories260K and the synthetic qwen3 model, and with tools,
// streamed and not, on the synthetic qwen3 model (the real Qwen3 template): every answer is the reference's
// (the tokens of its grammar sampler, parsed by common_chat_parse: content, tool calls' names and arguments,
// finish_reason), the JSON contents follow the schema, the tool calls' arguments the tool's parameters, and the
// client assembles streamed tool calls from OpenAI's delta chunks.
func TestOpenAINpmClientGetsSchemaAnswersAndToolCalls(t *testing.T) {
	script := installOpenAI(t)
	total, same, valid, calls := 0, 0, 0, 0
	for _, mdl := range []struct {
		name, path string
		tools      bool
	}{{"stories260K", stories(t), false}, {"qwen3-tiny", qwen3Model(t), true}} {
		t.Run(mdl.name, func(t *testing.T) {
			o := newOracle(t, mdl.path)
			srv := startServe(t, mdl.path, "-t", fmt.Sprint(refThreads))
			var ps struct {
				Models []struct {
					ContextLength int `json:"context_length"`
				} `json:"models"`
			}
			getJSON(t, srv.URL+"/api/ps", &ps)
			o.nCtx = ps.Models[0].ContextLength
			msgs := []any{map[string]any{"role": "user", "content": "Who are you? Answer in JSON."}}
			schemaFormat := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "person", "schema": personSchema}}
			type tcase struct {
				c    npmCase
				p    sample.Params
				tool bool
			}
			base := o.base
			var cases []tcase
			for _, stream := range []bool{false, true} {
				p := base
				p.Seed = 17
				cases = append(cases, tcase{npmCase{Kind: "chat", Stream: stream, Body: map[string]any{"model": "m", "messages": msgs,
					"response_format": schemaFormat, "seed": 17.0, "max_tokens": 96.0}}, p, false})
			}
			if mdl.tools {
				lb, obj := o.steer(t)
				for _, stream := range []bool{false, true} {
					p := base
					p.Seed, p.LogitBias = 23, lb
					cases = append(cases, tcase{npmCase{Kind: "chat", Stream: stream, Body: map[string]any{"model": "m", "messages": msgs,
						"tools": []any{alarmTool}, "tool_choice": "required", "parallel_tool_calls": false, "seed": 23.0,
						"logit_bias": obj, "max_tokens": 96.0}}, p, true})
				}
			}
			var cs []npmCase
			for _, c := range cases {
				cs = append(cs, c.c)
			}
			spec, _ := json.Marshal(map[string]any{"baseURL": srv.URL + "/v1", "cases": cs})
			cmd := exec.Command("node", script)
			cmd.Stdin = bytes.NewReader(spec)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
			}
			var results []npmResultTools
			if err := json.Unmarshal(out, &results); err != nil || len(results) != len(cases) {
				t.Fatalf("script output %q: %v", out, err)
			}
			for i, tc := range cases {
				total++
				r := results[i]
				name := fmt.Sprintf("tools %v stream %v", tc.tool, tc.c.Stream)
				if r.Error != "" {
					t.Errorf("%s: %s", name, r.Error)
					continue
				}
				body := map[string]any{}
				for k, v := range tc.c.Body {
					body[k] = v
				}
				want, wantMsg := o.constrained(t, body, tc.p, int(tc.c.Body["max_tokens"].(float64)))
				wantFinish := want.finish
				if wantFinish == "stop" && len(wantMsg.ToolCalls) > 0 {
					wantFinish = "tool_calls"
				}
				ok := r.Text == wantMsg.Content && r.Reasoning == wantMsg.ReasoningContent && r.FinishReason == wantFinish &&
					len(r.ToolCalls) == len(wantMsg.ToolCalls)
				for k := 0; ok && k < len(r.ToolCalls); k++ {
					g, w := r.ToolCalls[k], wantMsg.ToolCalls[k]
					ok = g.Name == w.Name && g.Arguments == w.Arguments && len(g.ID) == 32
				}
				if !ok {
					t.Errorf("%s: content %q reasoning %q calls %+v finish %q; reference %q %q %+v %q",
						name, r.Text, r.Reasoning, r.ToolCalls, r.FinishReason, wantMsg.Content, wantMsg.ReasoningContent, wantMsg.ToolCalls, wantFinish)
					continue
				}
				same++
				t.Logf("%s: %d tokens, finish_reason %s, %d tool calls, content %q", name, len(want.tokens), wantFinish, len(r.ToolCalls), r.Text)
				if !tc.tool && r.FinishReason == "stop" {
					var v any
					if err := json.Unmarshal([]byte(r.Text), &v); err != nil {
						t.Errorf("%s: content %q is not JSON: %v", name, r.Text, err)
						continue
					}
					if err := conforms(v, personSchema); err != nil {
						t.Errorf("%s: content %q does not follow the schema: %v", name, r.Text, err)
						continue
					}
					valid++
				}
				for _, c := range r.ToolCalls {
					var args any
					if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
						t.Errorf("%s: arguments %q are not JSON: %v", name, c.Arguments, err)
						continue
					}
					params := alarmTool["function"].(map[string]any)["parameters"].(map[string]any)
					if err := conforms(args, params); err != nil {
						t.Errorf("%s: arguments %q do not follow the tool's parameters: %v", name, c.Arguments, err)
						continue
					}
					calls++
				}
			}
		})
	}
	if valid == 0 || calls == 0 {
		t.Errorf("%d schema-conforming JSON answers and %d valid tool calls: the test exercised neither", valid, calls)
	}
	t.Logf("openai npm client (%s): %d of %d constrained answers equal to the reference; %d JSON answers follow the schema, %d tool calls follow the tool's parameters",
		openaiNpm, same, total, valid, calls)
}
