package chat_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/chat"
)

func mustNew(t *testing.T, src string, v chat.Vocab) *chat.Template {
	t.Helper()
	tmpl, err := chat.New(src, v)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// TestBadInputsAreRefusedByName: malformed requests wrap ErrRequest, templates that do not parse, raise, or
// belong to a family llama.cpp renders specially wrap ErrTemplate, each error saying what is wrong.
func TestBadInputsAreRefusedByName(t *testing.T) {
	chatml := mustNew(t, "", chat.Vocab{})
	for _, tc := range []struct {
		name, body string
		want       string
	}{
		{"not json", `{`, "not JSON"},
		{"no messages", `{"tools": []}`, "'messages' is required"},
		{"messages not array", `{"messages": {}}`, "to be an array"},
		{"no role", `[{"content": "x"}]`, "Missing 'role'"},
		{"user without content", `[{"role": "user"}]`, "must contain 'content'"},
		{"content number", `[{"role": "user", "content": 5}]`, "string or an array"},
		{"image part", `[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]`, "unsupported content[].type"},
		{"tool call type", `[{"role": "assistant", "tool_calls": [{"type": "x"}]}]`, "Unsupported tool call type"},
		{"tool call name", `[{"role": "assistant", "tool_calls": [{"type": "function", "function": {}}]}]`, "Missing tool call name"},
		{"tool type", `{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "retrieval"}]}`, "Unsupported tool type"},
		{"two final assistants", `[{"role": "user", "content": "x"}, {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]`, "2 or more assistant"},
		{"continue a tool call", `[{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}]`, "contains tool calls"},
		{"enable_thinking string", `{"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"enable_thinking": "yes"}}`, "expected boolean"},
		{"gen prompt and continue", `{"messages": [{"role": "user", "content": "x"}], "continue_final_message": true, "add_generation_prompt": true}`, "Cannot set both"},
	} {
		_, err := chat.ParseRequest([]byte(tc.body))
		if !errors.Is(err, chat.ErrRequest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want ErrRequest naming %q", tc.name, err, tc.want)
		}
	}
	in, err := chat.ParseRequest([]byte(`[{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{bad"}}]}, {"role": "user", "content": "y"}]`))
	if err != nil {
		t.Fatal(err)
	}
	qwenLike := mustNew(t, "{% for m in messages %}{% for c in m.tool_calls %}{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}", chat.Vocab{})
	if !qwenLike.Caps().ObjectArguments {
		t.Fatal("a template printing tool arguments as JSON reads them as objects")
	}
	if _, err := qwenLike.Apply(in); !errors.Is(err, chat.ErrRequest) || !strings.Contains(err.Error(), "arguments as JSON") {
		t.Errorf("unparsable arguments: %v", err)
	}
	for _, tc := range []struct{ name, src, want string }{
		{"unclosed tag", "{% if x %}", ""},
		{"bad escape", `{{ 'a\q' }}`, `unknown escape`},
		{"floor division", `{{ 7 // 2 }}`, "//"},
		{"split without separator", `{{ s.split() }}`, "split() without a separator"},
		{"maxsplit", `{{ s.split(',', 1) }}`, "maxsplit"},
		{"unclosed comment", `{# x`, "comment"},
	} {
		_, err := chat.New(tc.src, chat.Vocab{})
		if !errors.Is(err, chat.ErrTemplate) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New error %v, want ErrTemplate naming %q", tc.name, err, tc.want)
		}
	}
	simple, _ := chat.ParseRequest([]byte(`[{"role": "user", "content": "x"}]`))
	raising := mustNew(t, "{{ raise_exception('no ' + messages[0].role) }}", chat.Vocab{})
	if _, err := raising.Apply(simple); !errors.Is(err, chat.ErrTemplate) || !strings.Contains(err.Error(), "Jinja Exception: no user") {
		t.Errorf("raise_exception: %v", err)
	}
	special := mustNew(t, "{{ '<|channel|>' }}", chat.Vocab{})
	if _, err := special.Apply(simple); !errors.Is(err, chat.ErrTemplate) || !strings.Contains(err.Error(), "GPT-OSS") {
		t.Errorf("specialized family: %v", err)
	}
	if _, err := chatml.Apply(simple); err != nil {
		t.Errorf("ChatML: %v", err)
	}
}

// TestNowIsInjectable: strftime_now, datetime and date_string take Inputs.Now in its own location, in the C
// library's formats (%d %b %Y: "26 Jul 2024").
func TestNowIsInjectable(t *testing.T) {
	tmpl := mustNew(t, "{{ strftime_now('%Y-%m-%d %H:%M %a %j') }}|{{ datetime }}|{{ date_string }}", chat.Vocab{})
	in, _ := chat.ParseRequest([]byte(`[{"role": "user", "content": "x"}]`))
	in.Now = time.Date(2024, 7, 6, 9, 5, 0, 0, time.FixedZone("X", 3600))
	res, err := tmpl.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2024-07-06 09:05 Sat 188|Jul 06 2024|06 Jul 2024"; res.Prompt != want {
		t.Errorf("got %q, want %q", res.Prompt, want)
	}
	again, _ := tmpl.Apply(in)
	if again.Prompt != res.Prompt {
		t.Error("the same inputs rendered differently")
	}
}

// TestLeadingBOSIsStrippedOnce: with add_bos the template's leading BOS text is removed (once, at the start only);
// without add_bos it stays; with add_eos a trailing EOS text goes too.
func TestLeadingBOSIsStrippedOnce(t *testing.T) {
	src := "{{ bos_token }}{{ bos_token }}{% for m in messages %}[{{ m.content }}]{{ bos_token }}{% endfor %}{{ eos_token }}"
	in, _ := chat.ParseRequest([]byte(`[{"role": "user", "content": "x"}]`))
	for _, tc := range []struct {
		v    chat.Vocab
		want string
	}{
		{chat.Vocab{BOS: "<s>", EOS: "</s>"}, "<s><s>[x]<s></s>"},
		{chat.Vocab{BOS: "<s>", EOS: "</s>", AddBOS: true}, "<s>[x]<s></s>"},
		{chat.Vocab{BOS: "<s>", EOS: "</s>", AddBOS: true, AddEOS: true}, "<s>[x]<s>"},
	} {
		res, err := mustNew(t, src, tc.v).Apply(in)
		if err != nil {
			t.Fatal(err)
		}
		if res.Prompt != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.v, res.Prompt, tc.want)
		}
	}
}

// FuzzApply: no request and no template makes Apply panic or hang; segments always concatenate to the prompt.
func FuzzApply(f *testing.F) {
	f.Add(`[{"role": "user", "content": "<|im_end|> hi"}]`, "")
	f.Add(`{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "a"}]}], "tools": [{"type": "function", "function": {"name": "f"}}]}`, "{% for m in messages %}{{ m.content | tojson(indent=2) }}{% endfor %}")
	f.Add(`[{"role": "user", "content": "x"}, {"role": "assistant", "content": "y", "reasoning_content": "r"}]`, "{{ messages[0].content.strip('x') }}{{ messages | length }}")
	f.Fuzz(func(t *testing.T, body, src string) {
		tmpl, err := chat.New(src, chat.Vocab{BOS: "<s>", EOS: "</s>", AddBOS: true, Control: []string{"<|im_end|>", "<s>"}})
		if err != nil {
			return
		}
		in, err := chat.ParseRequest([]byte(body))
		if err != nil {
			return
		}
		res, err := tmpl.Apply(in)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, s := range res.Segments {
			b.WriteString(s.Text)
		}
		if b.String() != res.Prompt {
			t.Fatalf("segments %+v do not make the prompt %q", res.Segments, res.Prompt)
		}
	})
}

// TestSchemasBankmlCannotHonourAreRefusedByField: a response format's schema that is not an object (which
// llama-server's template skips, answering unconstrained) or has a constraint no value meets (which the
// reference converts without a word) is refused by ParseRequest, naming the field it came from; the empty
// schema {} stays JSON mode.
func TestSchemasBankmlCannotHonourAreRefusedByField(t *testing.T) {
	const msgs = `"messages": [{"role": "user", "content": "x"}]`
	for _, tc := range []struct{ name, constraint, want string }{
		{"a string schema", `"response_format": {"type": "json_schema", "json_schema": {"schema": "x"}}`, `"response_format.json_schema.schema": JSON schema conversion failed:` + "\n" + `JSON schema error at #: schema must be an object`},
		{"a number schema", `"response_format": {"type": "json_schema", "json_schema": {"schema": 42}}`, `schema must be an object`},
		{"an array schema", `"response_format": {"type": "json_schema", "json_schema": {"schema": [1]}}`, `schema must be an object`},
		{"a boolean schema", `"response_format": {"type": "json_schema", "json_schema": {"schema": true}}`, `schema must be an object`},
		{"a json_object's string schema", `"response_format": {"type": "json_object", "schema": "x"}`, `"response_format.schema": JSON schema conversion failed:`},
		{"a top-level string json_schema", `"json_schema": "x"`, `"json_schema": JSON schema conversion failed:` + "\n" + `JSON schema error at #: schema must be an object`},
		{"an integer's minimum above its maximum", `"response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "integer", "minimum": 5, "maximum": 1}}}`, `"response_format.json_schema.schema": JSON schema error at #: no integer meets minimum 5 and maximum 1: no value can satisfy this schema`},
		{"exclusive bounds with no integer between", `"json_schema": {"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2}}}`, `"json_schema": JSON schema error at #/properties/n: no integer meets exclusiveMinimum 1 and exclusiveMaximum 2`},
		{"minLength above maxLength", `"response_format": {"type": "json_object", "schema": {"type": "string", "minLength": 5, "maxLength": 1}}`, `"response_format.schema": JSON schema error at #: minLength 5 is greater than maxLength 1`},
		{"minItems above maxItems", `"json_schema": {"type": "array", "minItems": 3, "maxItems": 1}`, `JSON schema error at #: minItems 3 is greater than maxItems 1`},
	} {
		_, err := chat.ParseRequest([]byte(`{` + msgs + `, ` + tc.constraint + `}`))
		if !errors.Is(err, chat.ErrRequest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want ErrRequest naming %q", tc.name, err, tc.want)
		}
	}
	for _, rf := range []string{`{"type": "json_schema", "json_schema": {"schema": {}}}`, `{"type": "json_object"}`} {
		in, err := chat.ParseRequest([]byte(`{` + msgs + `, "response_format": ` + rf + `}`))
		if err != nil || in.JSONSchema != `{"type":"object"}` {
			t.Errorf("%s: %q, %v; want JSON mode ({\"type\":\"object\"})", rf, in.JSONSchema, err)
		}
	}
	// Apply refuses the same schemas when they reach it directly (a caller that builds Inputs itself)
	chatml := mustNew(t, "", chat.Vocab{})
	in, err := chat.ParseRequest([]byte(`{` + msgs + `}`))
	if err != nil {
		t.Fatal(err)
	}
	for js, want := range map[string]string{`"x"`: "schema must be an object", `{"type": "string", "minLength": 2, "maxLength": 1}`: "minLength 2 is greater than maxLength 1"} {
		in.JSONSchema = js
		if _, err := chatml.Apply(in); !errors.Is(err, chat.ErrRequest) || !strings.Contains(err.Error(), want) {
			t.Errorf("Apply of json_schema %s: %v, want ErrRequest naming %q", js, err, want)
		}
	}
}
