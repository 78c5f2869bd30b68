package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/sample"
)

// ollamaOptionParams are the sampling parameters Ollama options mean, read by Ollama's own parser
// (api.Options.FromMap over api.DefaultOptions) onto base, as docs/serve.md maps them.
func ollamaOptionParams(t *testing.T, base sample.Params, opts map[string]any) sample.Params {
	t.Helper()
	o := api.DefaultOptions()
	if err := o.FromMap(opts); err != nil {
		t.Fatal(err)
	}
	p := base
	p.Temp, p.TopK, p.TopP, p.MinP, p.TypicalP = o.Temperature, int32(o.TopK), o.TopP, o.MinP, o.TypicalP
	p.PenaltyLastN, p.PenaltyRepeat, p.PenaltyPresent, p.PenaltyFreq = int32(o.RepeatLastN), o.RepeatPenalty, o.PresencePenalty, o.FrequencyPenalty
	p.Seed = uint32(o.Seed)
	if err := p.ApplyServerLimits(base); err != nil {
		t.Fatal(err)
	}
	return p
}

// schemaConforms checks a decoded JSON value against the object schemas of these tests (required properties,
// no others, strings no longer than maxLength, integers within minimum and maximum).
func schemaConforms(v any, schema map[string]any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%v is not an object", v)
	}
	props := schema["properties"].(map[string]any)
	for _, r := range schema["required"].([]any) {
		if _, ok := obj[r.(string)]; !ok {
			return fmt.Errorf("required %q missing", r)
		}
	}
	for k, pv := range obj {
		ps, ok := props[k].(map[string]any)
		if !ok {
			if schema["additionalProperties"] == false {
				return fmt.Errorf("property %q not allowed", k)
			}
			continue
		}
		if enum, ok := ps["enum"].([]any); ok {
			found := false
			for _, e := range enum {
				found = found || e == pv
			}
			if !found {
				return fmt.Errorf("%s: %v not in %v", k, pv, enum)
			}
		}
		switch ps["type"] {
		case "string":
			s, ok := pv.(string)
			if m, has := ps["maxLength"].(int); !ok || has && len([]rune(s)) > m {
				return fmt.Errorf("%s: %v", k, pv)
			}
		case "integer":
			f, ok := pv.(float64)
			lo, hasLo := ps["minimum"].(int)
			hi, hasHi := ps["maximum"].(int)
			if !ok || f != math.Trunc(f) || hasLo && f < float64(lo) || hasHi && f > float64(hi) {
				return fmt.Errorf("%s: %v", k, pv)
			}
		}
	}
	return nil
}

// TestOllamaGoClientGetsFormatToolsAndThink drives Ollama's Go client (github.com/ollama/ollama/api) with
// Format (a JSON schema, and "json"), Tools and Think against serve on the synthetic qwen3 model (the real
// Qwen3 vocabulary and template), streamed and not. Each answer is the reference's: the tokens of its grammar
// sampler and chain for the prompt, grammar and triggers common_chat_templates_apply makes of the same request
// as an OpenAI body, parsed by common_chat_parse into content, thinking and tool calls. JSON contents follow
// their format; tool calls arrive in Ollama's form (arguments an object) and follow the tool's parameters (a
// call the answer's length cut short is left out, on both sides of the comparison). For
// the tool requests the server's default sampling carries logit biases (as a model's general.sampling
// defaults would carry settings), the same on the reference's side, so that the random model starts tool
// calls: Ollama's API has no logit_bias.
func TestOllamaGoClientGetsFormatToolsAndThink(t *testing.T) {
	path := qwen3Model(t)
	rm := refModel(t, path)
	ts := newTestServer(t, path, AdmitOptions{}, Options{})
	u, _ := url.Parse(ts.url)
	client := api.NewClient(u, http.DefaultClient)
	ctx := context.Background()
	// a tool whose arguments hold no free text: the steering biases below would otherwise fill its strings
	alarmTool := map[string]any{"type": "function", "function": map[string]any{
		"name": "set_alarm", "description": "Set an alarm",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{
			"hour": map[string]any{"type": "integer"},
			"half": map[string]any{"type": "string", "enum": []any{"am", "pm"}},
		}, "required": []any{"hour", "half"}}}}
	var tool api.Tool
	tb, _ := json.Marshal(alarmTool)
	if err := json.Unmarshal(tb, &tool); err != nil {
		t.Fatal(err)
	}
	var steer []sample.LogitBias
	for text, bias := range map[string]float32{"<tool_call>": 12, "\n": 10} {
		ids, err := rm.Tokenize(text, false, true)
		if err != nil || len(ids) != 1 {
			t.Fatalf("%q: %v %v", text, ids, err)
		}
		steer = append(steer, sample.LogitBias{Token: ids[0], Bias: bias})
	}
	// the tools exactly as the client sends them (api.Tool's field order: the template prints them with tojson)
	toolsJSON, _ := json.Marshal(api.Tools{tool})
	tools := json.RawMessage(toolsJSON)
	schema, _ := json.Marshal(answerSchemaJSON)
	user := []any{map[string]any{"role": "user", "content": "Who are you?"}}
	format := map[string]any{"type": "json_schema", "json_schema": map[string]any{"schema": answerSchemaJSON}}
	cases := []struct {
		name   string
		format json.RawMessage
		tools  bool
		think  *api.ThinkValue
		stream bool
		opts   map[string]any
		openai map[string]any // the request as an OpenAI body, for the reference
	}{
		{"schema", schema, false, nil, false, map[string]any{"seed": 17.0, "num_predict": 96.0},
			map[string]any{"messages": user, "response_format": format}},
		{"schema streamed, think false", schema, false, &api.ThinkValue{Value: false}, true, map[string]any{"seed": 9.0, "num_predict": 96.0},
			map[string]any{"messages": user, "response_format": format, "chat_template_kwargs": map[string]any{"enable_thinking": false}}},
		{"json, think true", json.RawMessage(`"json"`), false, &api.ThinkValue{Value: true}, false, map[string]any{"seed": 5.0, "num_predict": 64.0},
			map[string]any{"messages": user, "response_format": map[string]any{"type": "json_object"}, "chat_template_kwargs": map[string]any{"enable_thinking": true}}},
		{"tools", nil, true, nil, false, map[string]any{"seed": 23.0, "num_predict": 80.0},
			map[string]any{"messages": user, "tools": tools}},
		{"tools streamed, think false", nil, true, &api.ThinkValue{Value: false}, true, map[string]any{"seed": 29.0, "num_predict": 80.0},
			map[string]any{"messages": user, "tools": tools, "chat_template_kwargs": map[string]any{"enable_thinking": false}}},
	}
	same, valid, calls := 0, 0, 0
	base := ts.Server.base
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts.Server.base = base
			if c.tools {
				ts.Server.base.LogitBias = steer
			}
			defer func() { ts.Server.base = base }()
			stream := c.stream
			req := &api.ChatRequest{Model: ts.m.Name, Messages: []api.Message{{Role: "user", Content: "Who are you?"}},
				Format: c.format, Think: c.think, Stream: &stream, Options: c.opts}
			if c.tools {
				req.Tools = api.Tools{tool}
			}
			var content, thinking strings.Builder
			var toolCalls []api.ToolCall
			var final api.ChatResponse
			lines := 0
			err := client.Chat(ctx, req, func(r api.ChatResponse) error {
				lines++
				content.WriteString(r.Message.Content)
				thinking.WriteString(r.Message.Thinking)
				toolCalls = append(toolCalls, r.Message.ToolCalls...)
				if r.Done {
					final = r
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			p := ollamaOptionParams(t, ts.Server.base, c.opts)
			want, wantMsg, prompt := refConstrained(t, rm, path, c.openai, p, int(c.opts["num_predict"].(float64)))
			// the reference's calls, but for one the answer's end cut short (Ollama's form has no place for it)
			var wantCalls []map[string]any
			for _, c := range wantMsg.ToolCalls {
				var args map[string]any
				if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil && want.Finish == "length" {
					continue
				} else if err != nil {
					t.Fatalf("reference call %+v: %v", c, err)
				}
				wantCalls = append(wantCalls, map[string]any{"name": c.Name, "arguments": args})
			}
			ok := content.String() == wantMsg.Content && thinking.String() == wantMsg.ReasoningContent && final.PromptEvalCount == len(prompt) &&
				final.EvalCount == len(want.Tokens) && final.DoneReason == want.Finish && len(toolCalls) == len(wantCalls)
			for i := 0; ok && i < len(toolCalls); i++ {
				var a any
				args, _ := json.Marshal(toolCalls[i].Function.Arguments)
				json.Unmarshal(args, &a)
				ok = toolCalls[i].Function.Name == wantCalls[i]["name"] && fmt.Sprint(a) == fmt.Sprint(wantCalls[i]["arguments"]) &&
					toolCalls[i].Function.Index == i && len(toolCalls[i].ID) == 32
			}
			if !ok {
				t.Fatalf("content %q thinking %q calls %+v eval_count %d done_reason %q; reference %q %q %+v %d tokens %q\ntext %q",
					content.String(), thinking.String(), toolCalls, final.EvalCount, final.DoneReason,
					wantMsg.Content, wantMsg.ReasoningContent, wantMsg.ToolCalls, len(want.Tokens), want.Finish, want.Text)
			}
			if stream && lines < 2 && len(want.Tokens) > 1 {
				t.Errorf("a stream of %d lines", lines)
			}
			same++
			if c.format != nil && final.DoneReason == "stop" {
				var v any
				if err := json.Unmarshal([]byte(content.String()), &v); err != nil {
					t.Fatalf("content %q is not JSON: %v", content.String(), err)
				}
				if string(c.format) != `"json"` {
					if err := schemaConforms(v, answerSchemaJSON); err != nil {
						t.Fatalf("content %q does not follow the schema: %v", content.String(), err)
					}
				} else if _, ok := v.(map[string]any); !ok {
					t.Fatalf("content %q is not a JSON object", content.String())
				}
				valid++
			}
			for _, tc := range toolCalls {
				args, _ := json.Marshal(tc.Function.Arguments)
				var a any
				json.Unmarshal(args, &a)
				if err := schemaConforms(a, alarmTool["function"].(map[string]any)["parameters"].(map[string]any)); err != nil {
					t.Fatalf("tool call %+v: %v", tc, err)
				}
				calls++
			}
			t.Logf("%s: %d tokens, done %s, %d tool calls, content %q", c.name, len(want.Tokens), want.Finish, len(toolCalls), content.String())
		})
	}
	if valid == 0 || calls == 0 {
		t.Errorf("%d JSON answers following their format and %d tool calls: the test did not exercise both", valid, calls)
	}
	t.Logf("Ollama Go client: %d of %d Format/Tools/Think answers equal to the reference; %d JSON answers follow their format, %d tool calls follow the tool's parameters",
		same, len(cases), valid, calls)
}
