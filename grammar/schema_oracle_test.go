package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/reference"
)

// The schema oracle: FromJSONSchema against libllama-common's
// json_schema_to_grammar (through the grammar shim) on llama.cpp's own test
// schemas (tests/test-json-schema-to-grammar.cpp, read from the reference's
// source bundle at test time) and on ownSchemas: the same grammar text byte
// for byte, or the same error message.

// llamaSchemaCases extracts the schemas of the test({STATUS, "name", schema,
// grammar}) calls of tests/test-json-schema-to-grammar.cpp.
func llamaSchemaCases(t *testing.T) []schemaCase {
	src := string(bundleFile(t, "tests/test-json-schema-to-grammar.cpp"))
	var out []schemaCase
	for rest := src; ; {
		i := strings.Index(rest, "test({")
		if i < 0 {
			break
		}
		rest = rest[i+len("test({"):]
		p := &cppScanner{s: rest}
		p.space()
		status := p.word()
		if status != "SUCCESS" && status != "FAILURE" {
			continue
		}
		p.expect(',')
		name := p.literal()
		p.expect(',')
		schema := p.literal()
		if p.err != nil {
			t.Fatalf("tests/test-json-schema-to-grammar.cpp near %q: %v", rest[:min(len(rest), 80)], p.err)
		}
		out = append(out, schemaCase{name: "llama.cpp: " + name, schema: schema})
	}
	if len(out) < 50 {
		t.Fatalf("only %d test cases found in tests/test-json-schema-to-grammar.cpp", len(out))
	}
	return out
}

// cppScanner reads the C++ literals of a test case.
type cppScanner struct {
	s   string
	i   int
	err error
}

func (p *cppScanner) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *cppScanner) word() string {
	j := p.i
	for j < len(p.s) && (isWordChar(p.s[j]) || p.s[j] == '_') {
		j++
	}
	w := p.s[p.i:j]
	p.i = j
	return w
}

func (p *cppScanner) expect(c byte) {
	p.space()
	if p.err == nil && (p.i >= len(p.s) || p.s[p.i] != c) {
		p.err = fmt.Errorf("expecting %q at %d", c, p.i)
	}
	p.i++
}

// literal reads R"""(...)""" or a "..." literal with C escapes.
func (p *cppScanner) literal() string {
	p.space()
	if p.err != nil {
		return ""
	}
	if strings.HasPrefix(p.s[p.i:], `R"""(`) {
		p.i += len(`R"""(`)
		j := strings.Index(p.s[p.i:], `)"""`)
		if j < 0 {
			p.err = errors.New("unterminated raw string")
			return ""
		}
		v := p.s[p.i : p.i+j]
		p.i += j + len(`)"""`)
		return v
	}
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		p.err = fmt.Errorf("expecting a string literal at %d", p.i)
		return ""
	}
	j := p.i + 1
	for j < len(p.s) && p.s[j] != '"' {
		if p.s[j] == '\\' {
			j++
		}
		j++
	}
	v, err := strconv.Unquote(p.s[p.i : j+1])
	if err != nil {
		p.err = err
	}
	p.i = j + 1
	return v
}

type schemaCase struct{ name, schema string }

// ownSchemas cover what llama.cpp's cases leave out.
var ownSchemas = []schemaCase{
	{"formats", `{"type": "object", "properties": {"d": {"type": "string", "format": "date"}, "t": {"type": "string", "format": "time"}, "dt": {"type": "string", "format": "date-time"}, "u": {"type": "string", "format": "uuid3"}, "e": {"type": "string", "format": "email"}}, "required": ["d", "t"]}`},
	{"string lengths", `{"type": "array", "items": [{"type": "string", "minLength": 2}, {"type": "string", "maxLength": 0}, {"type": "string", "minLength": 1, "maxLength": 1}, {"type": "string", "minLength": 3, "maxLength": 7}]}`},
	{"array bounds", `{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}, "minItems": 0, "maxItems": 0}, "b": {"type": "array", "minItems": 2}, "c": {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 1}, "d": {"type": "array", "items": {"type": "null"}, "maxItems": 3}, "e": {"prefixItems": [{"type": "number"}]}}}`},
	{"consts and enums of every type", `{"anyOf": [{"const": 1.5}, {"const": 1e20}, {"const": 1e-7}, {"const": -0.0}, {"const": 100.0}, {"const": 12345678901234567890}, {"const": -9223372036854775808}, {"const": 0.1}, {"const": 1e16}, {"const": 123456.789e3}, {"enum": [null, true, "a\"b\\c\nd", {"k": [1, {"x": 2.50}]}, [], "\u0001\u001f\u007f", "日本"]}]}`},
	{"awkward property names", `{"type": "object", "properties": {"with space": {"type": "integer"}, "quo\"te": {"type": "string"}, "日本": {"type": "boolean"}, "a-b_c.d": {"type": "null"}, "": {"type": "number"}}, "required": ["日本", ""], "additionalProperties": {"type": "string"}}`},
	{"not-strings for additional keys", `{"type": "object", "properties": {"and": {}, "also": {}, "a": {}, "b]": {}}, "additionalProperties": true}`},
	{"integer bounds", `{"type": "array", "items": [{"type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 100}, {"type": "integer", "minimum": 1.5, "maximum": 99.9}, {"type": "integer", "minimum": -1000000, "maximum": 1000000}, {"type": "integer", "minimum": 9223372036854775807}, {"type": "integer", "maximum": -9223372036854775807}, {"type": "integer", "minimum": -7, "maximum": -7}, {"type": "integer", "minimum": 1e30}, {"type": "integer", "exclusiveMaximum": 0}]}`},
	{"refs into arrays and defs", `{"$defs": {"list": [{"type": "string"}, {"type": "integer"}]}, "type": "object", "properties": {"s": {"$ref": "#/$defs/list/0"}, "i": {"$ref": "#/$defs/list/1"}, "again": {"$ref": "#/$defs/list/0"}}, "required": ["s", "i", "again"]}`},
	{"recursive ref", `{"$ref": "#/definitions/tree", "definitions": {"tree": {"type": "object", "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/definitions/tree"}}}, "required": ["value"]}}}`},
	{"allOf with refs and enums", `{"allOf": [{"$ref": "#/$defs/a"}, {"anyOf": [{"type": "object", "properties": {"b": {"type": "string"}}}, {"$ref": "#/$defs/c"}]}], "$defs": {"a": {"type": "object", "properties": {"a": {"type": "integer"}}}, "c": {"type": "object", "properties": {"c": {"type": "boolean"}}}}}`},
	{"allOf enum intersection", `{"allOf": [{"enum": ["x", "y", 1, 2]}, {"enum": [2, "y", "z"]}]}`},
	{"type arrays", `{"type": ["string", "integer", "null"], "minLength": 2, "minimum": 3}`},
	{"typeless structure", `{"items": {"type": "integer"}, "maxItems": 2}`},
	{"typeless string", `{"pattern": "^[a-z]+$"}`},
	{"patterns", `{"type": "array", "items": [{"type": "string", "pattern": "^(\\+|-)?[0-9]{1,3}(\\.[0-9]+)?$"}, {"type": "string", "pattern": "^a.b*c?(d|e)+[^x-z\\]]{2,}f{,3}g{4}$"}, {"type": "string", "pattern": "^\"quoted\"\\\\$"}, {"type": "string", "pattern": "^[\\x41-\\u005A]\\t\\n$"}, {"type": "string", "pattern": "^((a)(b))(?:c)$"}, {"type": "string", "pattern": "^ab.cd\\.$"}]}`},
	{"unsupported patterns degrade", `{"type": "array", "items": [{"type": "string", "pattern": "a+"}, {"type": "string", "pattern": "^a\\db$"}, {"type": "string", "pattern": "^a$b$"}, {"type": "string", "pattern": "^(?<n>a)$"}, {"type": "string", "pattern": "^a{x}$"}, {"type": "string", "pattern": "^a{1,2,3}$"}, {"type": "string", "pattern": "^a{2$"}, {"type": "string", "pattern": "^[\\d]$"}, {"type": "string", "pattern": "^}$"}]}`},
	{"invalid patterns", `{"type": "array", "items": [{"type": "string", "pattern": "^a)$"}, {"type": "string", "pattern": "^[ab$"}, {"type": "string", "pattern": "^*a$"}, {"type": "string", "pattern": "^a\\$"}]}`},
	{"empty object schema", `{"type": "object", "additionalProperties": false}`},
	{"object without properties but additional schema", `{"type": "object", "additionalProperties": {"type": "integer"}}`},
	{"unknown type", `{"type": "date"}`},
	{"bad minItems", `{"type": "array", "minItems": 1.5}`},
	{"negative maxLength", `{"type": "string", "maxLength": -1}`},
	{"huge minItems wraps", `{"type": "array", "minItems": 4294967298}`},
	{"bad properties", `{"type": "object", "properties": []}`},
	{"bad additionalProperties", `{"type": "object", "additionalProperties": 1}`},
	{"bad format", `{"type": "string", "format": 3}`},
	{"bad pattern", `{"type": "string", "pattern": 3}`},
	{"bad bound", `{"type": "integer", "minimum": "3"}`},
	{"empty anyOf", `{"anyOf": []}`},
	{"anyOf not an array", `{"oneOf": {}}`},
	{"empty type array", `{"type": []}`},
	{"type not a string", `{"type": {}}`},
	{"empty enum", `{"enum": []}`},
	{"schema not an object", `[1, 2]`},
	{"schema a string", `"x"`},
	{"schema a number", `42`},
	{"schema a boolean", `true`},
	{"ref not a string", `{"$ref": 1}`},
	{"remote ref", `{"$ref": "https://example.com/s.json"}`},
	{"ref not found", `{"$ref": "#/$defs/missing"}`},
	{"ref index out of range", `{"$ref": "#/items/3", "items": [{}]}`},
	{"ref index not a number", `{"$ref": "#/items/x", "items": [{}]}`},
	{"ref into a nested error", `{"$ref": "#/$defs/a", "$defs": {"a": {"type": "kaboom"}}}`},
	{"maximum int64 min", `{"type": "integer", "maximum": -9223372036854775808}`},
	{"duplicate keys", `{"type": "object", "properties": {"a": {"type": "string"}, "b": {}, "a": {"type": "integer"}}, "type": "object"}`},
	{"empty schema object", `{}`},
	{"JSON mode", `{"type": "object"}`},
	// contradictions (SchemaDocument.Contradictions): the converter writes their grammar without a word
	{"integer minimum above maximum", `{"type": "integer", "minimum": 5, "maximum": 1}`},
	{"exclusive bounds with no integer between", `{"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2}`},
	{"fractional bounds with no integer between", `{"type": "integer", "minimum": 1.5, "maximum": 1.7}`},
	{"minLength above maxLength", `{"type": "string", "minLength": 5, "maxLength": 1}`},
	{"minItems above maxItems", `{"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 1}`},
	{"number minimum above maximum", `{"type": "number", "minimum": 2.5, "maximum": 1}`},
}

// TestSchemasMatchTheReference is the schema oracle (see the top of the
// file).
func TestSchemasMatchTheReference(t *testing.T) {
	_, shim := shimFor(t)
	cases := append(llamaSchemaCases(t), ownSchemas...)
	same := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, ok := shim.SchemaToGrammar(c.schema, true)
			got, err := FromJSONSchema([]byte(c.schema), true)
			if !ok {
				var se *SchemaError
				if !errors.As(err, &se) || se.Msg != want {
					t.Fatalf("error %v, want the reference's %q", err, want)
				}
				same++
				return
			}
			if err != nil {
				t.Fatalf("FromJSONSchema: %v; the reference converts it:\n%s", err, want)
			}
			if got != want {
				t.Fatalf("grammar differs:\n%s\nthe reference's:\n%s", got, want)
			}
			same++
		})
	}
	t.Logf("schemas: %d of %d grammars (or refusals) byte-identical to json_schema_to_grammar's", same, len(cases))
}

// TestBuildMatchesTheReference runs Build against build_grammar: rules and
// schemas added in turn, the schema of a property (as llama.cpp's "sub-schema
// $ref" case), dotall patterns.
func TestBuildMatchesTheReference(t *testing.T) {
	_, shim := shimFor(t)
	item := `{"type": "object", "properties": {"item": {"$ref": "#/$defs/item"}}, "$defs": {"item": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}}}`
	cases := []struct {
		name   string
		dotall bool
		ops    []reference.BuildOp
	}{
		{"sub-schema ref", false, []reference.BuildOp{{Kind: "property", Name: "root", Schema: json.RawMessage(item), Index: 0}}},
		{"tool call", false, []reference.BuildOp{
			{Kind: "schema", Name: "get-weather-args", Schema: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14}}, "required": ["city"]}`)},
			{Kind: "rule", Name: "tool call", Rule: `"<tool_call>" space "{\"name\": \"get_weather\", \"arguments\": " get-weather-args "}" space "</tool_call>"`},
			{Kind: "rule", Name: "root", Rule: "tool-call+"},
			{Kind: "rule", Name: "root", Rule: "tool-call"},
		}},
		{"dotall pattern", true, []reference.BuildOp{{Kind: "schema", Name: "root", Schema: json.RawMessage(`{"type": "string", "pattern": "^a.b$"}`)}}},
		{"pattern without dotall", false, []reference.BuildOp{{Kind: "schema", Name: "p", Schema: json.RawMessage(`{"type": "string", "pattern": "^.+$"}`)}}},
		{"reserved names", false, []reference.BuildOp{
			{Kind: "schema", Name: "string", Schema: json.RawMessage(`{"type": "string"}`)},
			{Kind: "schema", Name: "value", Schema: json.RawMessage(`{"type": "object", "properties": {"x": {}}}`)},
			{Kind: "rule", Name: "space", Rule: `" "`},
		}},
		{"invalid pattern", false, []reference.BuildOp{{Kind: "schema", Name: "root", Schema: json.RawMessage(`{"type": "string", "pattern": "^(a$"}`)}}},
	}
	same := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, ok, err := shim.BuildGrammar(c.ops, c.dotall)
			if err != nil {
				t.Fatal(err)
			}
			got, gerr := Build(func(b *Builder) {
				for _, op := range c.ops {
					if op.Kind == "rule" {
						b.AddRule(op.Name, op.Rule)
						continue
					}
					doc, err := ParseSchema(op.Schema)
					if err != nil {
						t.Fatal(err)
					}
					s := doc.Root
					if op.Kind == "property" {
						s = s.Properties[op.Index].Schema
					}
					b.AddSchema(op.Name, s)
				}
			}, BuildOptions{DotAll: c.dotall})
			if !ok {
				var se *SchemaError
				if !errors.As(gerr, &se) || se.Msg != want {
					t.Fatalf("error %v, want the reference's %q", gerr, want)
				}
			} else if gerr != nil || got != want {
				t.Fatalf("Build: %q, %v; the reference's:\n%s", got, gerr, want)
			}
			same++
		})
	}
	t.Logf("build: %d of %d grammars byte-identical to build_grammar's", same, len(cases))
}

// TestJSONDumpMatchesTheReference compares Dump with common_json's dump on
// numbers (random doubles of every magnitude, integers at the limits) and
// strings, the text the converter writes for const and enum values.
func TestJSONDumpMatchesTheReference(t *testing.T) {
	_, shim := shimFor(t)
	rng := rand.New(rand.NewPCG(1, 2))
	texts := []string{"0", "-0", "0.0", "-0.0", "1", "-1", "1.0", "1e2", "1E-2", "18446744073709551615", "18446744073709551616",
		"-9223372036854775808", "-9223372036854775809", "1e-400", "5e-324", "1.7976931348623157e308", "123456789012345678",
		"0.1", "0.30000000000000004", "1e15", "1e16", "1e-4", "1e-5", "9007199254740993", `"\u0000\u001f\"\\\/\b\f\n\r\t é😀"`,
		`{"b":1,"a":[true,false,null],"b":2}`, `[]`, `{}`, "1e400", `"\ud800"`, "01", "[1,]"}
	for range 2000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		texts = append(texts, strconv.FormatFloat(f, 'g', -1, 64))
		texts = append(texts, strconv.FormatFloat(rng.Float64()*math.Pow(10, float64(rng.IntN(40)-20)), 'g', -1, 64))
	}
	same := 0
	for _, text := range texts {
		want, ok := shim.DumpJSON(text)
		j, err := ParseJSON([]byte(text))
		if !ok {
			if err == nil {
				t.Errorf("%s: parsed as %s; the reference refuses it: %s", text, j.Dump(), want)
				continue
			}
			same++
			continue
		}
		if err != nil {
			t.Errorf("%s: %v; the reference dumps %s", text, err, want)
			continue
		}
		if got := j.Dump(); got != want {
			t.Errorf("%s: dump %s, the reference's %s", text, got, want)
			continue
		}
		same++
	}
	t.Logf("json: %d of %d values parsed and dumped as common_json does (or refused alike)", same, len(texts))
}
