package chat_test

import (
	"encoding/json"
	"testing"

	"github.com/bankml/bankml/chat"
)

// engineCases are small templates for the places where Jinja engines differ: whitespace control and the lexer's
// source rules, string literal escapes, tojson's formatting, trim and strip, slicing, tests, loops and namespaces.
var engineCases = []struct {
	name, src string
	extra     map[string]any
}{
	{"trailing newline dropped", "A\n{{ 'x' }}\n", nil},
	{"two trailing newlines", "A\n\n", nil},
	{"CRLF normalized", "A\r\nB\rC{{ '\r' }}", nil},
	{"trim_blocks after statement", "{% if true %}\nB{% endif %}\nC", nil},
	{"no trim after expression", "{{ 'a' }}\nB", nil},
	{"trim after dash expression", "{{- 'a' -}}\n  B", nil},
	{"lstrip_blocks", "A\n    {% if true %}B{% endif %}\n  {# c #}\nD", nil},
	{"lstrip at source start", "X  {% if true %}Y{% endif %}", nil},
	{"lstrip keeps text", "X  y {% if true %}Y{% endif %}", nil},
	{"dash control", "A  \n {%- if true -%}  \n B \n {%- endif %} C", nil},
	{"comment dashes", "A  {#- c -#}  B", nil},
	{"escapes", `{{ 'tab\tnl\nbs\\q\'dq\"' }}|{{ "r\rf\fv\vb\b" }}`, nil},
	{"closers in literals", `{{ '}}' ~ "%}" ~ '#}' }}{% set s = '%}' %}{{ s }}`, nil},
	{"tojson basic", "{{ x | tojson }}", map[string]any{"x": map[string]any{"b": []any{1, 2.5, "s", nil, true}, "a": "ü\"\\\n\u0001"}}},
	{"tojson indent", "{{ x | tojson(indent=2) }}|{{ x | tojson(indent=0) }}", map[string]any{"x": map[string]any{"k": []any{1, map[string]any{}, []any{}}, "e": map[string]any{"z": nil}}}},
	{"tojson separators", "{{ x | tojson(separators=(',', ':')) }}", map[string]any{"x": map[string]any{"a": []any{1, 2}}}},
	{"tojson ensure_ascii", "{{ x | tojson(ensure_ascii=true) }}", map[string]any{"x": "é 日 😀"}},
	{"tojson floats", "{{ x | tojson }}", map[string]any{"x": []any{0.1, 1.5, 1e-7, 123456789.0, 1e300, -0.5, 3.0, 100.0, 0.000123}}},
	{"tojson float values", "{{ x | tojson }}|{{ y | tojson }}|{{ z | tojson(indent=1) }}", map[string]any{"x": json.RawMessage("123456789.5"), "y": json.RawMessage("1.0"), "z": json.RawMessage("[0.1, 2.50, 1e-5, 1E+20, -7.25e2]")}},
	{"tojson string", "{{ 'a\"b' | tojson }}", nil},
	{"trim", "[{{ s | trim }}][{{ s.strip() }}][{{ s.lstrip('\n') }}][{{ s.rstrip(' \n') }}][{{ s.strip('\n ') }}]", map[string]any{"s": " \n x \u3000\n "}},
	{"trim unicode", "[{{ s | trim }}][{{ s.strip() }}]", map[string]any{"s": "\u00a0\u2009x\u3000"}},
	{"split", "{% for p in s.split('</think>') %}[{{ p }}]{% endfor %}{{ s.split('</think>')[-1] }}", map[string]any{"s": "a</think>b</think>"}},
	{"startswith endswith in", "{{ s.startswith('<a') }}{{ s.endswith('>') }}{{ 'b' in s }}{{ 'z' not in s }}", map[string]any{"s": "<ab>"}},
	{"slices", "{{ l[::-1] | tojson }}{{ l[1:] | tojson }}{{ l[:-1] | tojson }}{{ l[-1] }}", map[string]any{"l": []any{1, 2, 3}}},
	{"loop vars", "{% for x in l %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", map[string]any{"l": []any{"a", "b"}}},
	{"namespace", "{% set ns = namespace(n=0, s='') %}{% for x in l %}{% set ns.n = ns.n + x %}{% set ns.s = ns.s ~ x %}{% endfor %}{{ ns.n }}|{{ ns.s }}", map[string]any{"l": []any{1, 2, 3}}},
	{"tests", "{{ x is string }}{{ x is defined }}{{ y is defined }}{{ n is none }}{{ m is mapping }}{{ l is iterable }}{{ b is false }}", map[string]any{"x": "s", "n": nil, "m": map[string]any{}, "l": []any{}, "b": false}},
	{"length and filters", "{{ l | length }}{{ s | length }}{{ s | upper }}{{ s | lower }}{{ l | join(',') }}", map[string]any{"l": []any{"a", "b"}, "s": "Ab"}},
	{"printing", "{{ 1 }}|{{ true }}|{{ 'a' + 'b' }}|{{ 2 * 3 }}|{{ 7 % 3 }}", nil},
	{"floor division refused", "{{ 7 // 2 }}", nil},
	{"trim filter forms", "[{{ s|trim }}][{{ s | trim('x') }}][{{ 5 | trim }}]", map[string]any{"s": "x\v a \fx"}},
	{"items", "{% for k, v in m.items() %}{{ k }}={{ v }};{% endfor %}", map[string]any{"m": map[string]any{"z": 1, "a": 2}}},
	{"default", "{{ y | default('d') }}{{ x | default('d') }}", map[string]any{"x": "v"}},
	{"dict literal", "{{ {'a': 1, 'b': [2]} | tojson }}", nil},
	{"if expression", "{{ 'y' if x else 'n' }}{{ 'y' if z else 'n' }}", map[string]any{"x": true}},
	{"macro", "{% macro f(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ f(1) }}{{ f(2, 'c') }}", nil},
	{"raise", "{{ raise_exception('boom') }}", nil},
}

// TestEngineMatchesReference renders each case with bankml's engine and with llama.cpp's (through
// common_chat_template_direct_apply, no messages) and requires the same text, or both failing.
func TestEngineMatchesReference(t *testing.T) {
	ref := oracle(t)
	same := 0
	for _, c := range engineCases {
		t.Run(c.name, func(t *testing.T) {
			a, err := ref.Render(c.src, "", "", json.RawMessage("[]"), nil, false, true, c.extra)
			if err != nil {
				t.Fatal(err)
			}
			ctx := map[string]any{"messages": []any{}, "bos_token": "", "eos_token": "", "enable_thinking": true}
			for k, v := range c.extra {
				ctx[k] = v
			}
			b, err := json.Marshal(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, gerr := chat.Render(c.src, string(b))
			switch {
			case a.Error != "" && gerr != nil:
				same++
			case a.Error != "":
				t.Errorf("the reference failed (%s), bankml rendered %q", a.Error, got)
			case gerr != nil:
				t.Errorf("bankml failed (%v), the reference rendered %q", gerr, a.Prompt)
			case got != a.Prompt:
				t.Errorf("source %q\nref  %q\nbank %q", c.src, a.Prompt, got)
			default:
				same++
			}
		})
	}
	t.Logf("%d of %d engine cases identical to the reference", same, len(engineCases))
}
