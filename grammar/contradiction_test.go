package grammar

import (
	"errors"
	"testing"
)

// TestContradictionsAreNamed checks that ParseSchema names every constraint no value meets, with its place in
// the schema, and leaves satisfiable bounds alone (a contradiction is bankml's refusal: the reference converts
// these schemas, see ownSchemas).
func TestContradictionsAreNamed(t *testing.T) {
	cases := []struct{ name, schema, want string }{
		{"an integer's minimum above its maximum", `{"type": "integer", "minimum": 5, "maximum": 1}`, "JSON schema error at #: no integer meets minimum 5 and maximum 1"},
		{"exclusive bounds with no integer between them", `{"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2}}}`, "JSON schema error at #/properties/n: no integer meets exclusiveMinimum 1 and exclusiveMaximum 2"},
		{"fractional bounds with no integer between them", `{"type": "integer", "minimum": 1.5, "maximum": 1.7}`, "JSON schema error at #: no integer meets minimum 1.5 and maximum 1.7"},
		{"an exclusive minimum at the top of int64", `{"type": "integer", "exclusiveMinimum": 9223372036854775807, "maximum": 9223372036854775807}`, "JSON schema error at #: no integer meets exclusiveMinimum 9223372036854775807 and maximum 9223372036854775807"},
		{"a number's minimum above its maximum", `{"type": "number", "minimum": 2.5, "maximum": 1}`, "JSON schema error at #: no number meets minimum 2.5 and maximum 1"},
		{"a number's exclusive bounds that meet", `{"type": "number", "exclusiveMinimum": 1, "maximum": 1}`, "JSON schema error at #: no number meets exclusiveMinimum 1 and maximum 1"},
		{"minLength above maxLength", `{"type": "array", "items": [{"type": "string"}, {"type": "string", "minLength": 5, "maxLength": 1}]}`, "JSON schema error at #/items/1: minLength 5 is greater than maxLength 1"},
		{"minItems above maxItems", `{"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 1}`, "JSON schema error at #: minItems 3 is greater than maxItems 1"},
		{"a contradiction inside one alternative", `{"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 3, "maximum": 2}]}`, "JSON schema error at #/anyOf/1: no integer meets minimum 3 and maximum 2"},
		{"a contradiction behind a $ref", `{"$ref": "#/$defs/n", "$defs": {"n": {"type": "string", "minLength": 2, "maxLength": 0}}}`, "JSON schema error at #/$defs/n: minLength 2 is greater than maxLength 0"},
		{"a type array's integer branch", `{"type": ["string", "integer"], "minimum": 9, "maximum": 8}`, "JSON schema error at #/type/1: no integer meets minimum 9 and maximum 8"},
		{"equal integer bounds", `{"type": "integer", "minimum": 7, "maximum": 7}`, ""},
		{"exclusive bounds around one integer", `{"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 3}`, ""},
		{"fractional bounds around one integer", `{"type": "integer", "minimum": 1.5, "maximum": 2.5}`, ""},
		{"a maximum past int64 (the converter's bound wraps)", `{"type": "integer", "minimum": 0, "maximum": 1e30}`, ""},
		{"equal number bounds", `{"type": "number", "minimum": 1, "maximum": 1}`, ""},
		{"equal lengths", `{"type": "string", "minLength": 3, "maxLength": 3}`, ""},
		{"lengths without a maximum", `{"type": "string", "minLength": 3}`, ""},
		{"item counts without a maximum", `{"type": "array", "minItems": 3}`, ""},
		{"a tuple's item counts (the converter ignores them)", `{"type": "array", "items": [{"type": "integer"}]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := ParseSchema([]byte(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			err = doc.Satisfiable()
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused a satisfiable schema: %v", err)
				}
				return
			}
			var ue *UnsatisfiableError
			if !errors.As(err, &ue) || ue.Msg != c.want {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestConverterWarnsOfWhatItDrops checks that the converter warns (bankml's warnings, which every caller refuses
// as a schema it cannot enforce) where its grammar, as the reference's, leaves out a required property or an
// allOf component, and stays silent where it enforces the whole schema. The grammars themselves stay the
// reference's (TestSchemasMatchTheReference).
func TestConverterWarnsOfWhatItDrops(t *testing.T) {
	cases := []struct{ name, schema, want string }{
		{"a required name outside properties without additionalProperties", `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}`,
			`required property "b" is not in properties and additionalProperties allows no other, so the grammar never generates it`},
		{"a required name outside properties with additionalProperties false", `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"], "additionalProperties": false}`,
			`required property "b" is not in properties and additionalProperties allows no other, so the grammar never generates it`},
		{"an allOf of integer bounds, which the converter turns into {}", `{"allOf": [{"type": "integer", "minimum": 1}, {"maximum": 10}]}`,
			`allOf: a component of type integer is dropped (the converter merges the properties of object components only)`},
		{"an allOf of an object and a string", `{"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "string"}]}`,
			`allOf: a component of type string is dropped (the converter merges the properties of object components only)`},
		{"an allOf of enums without a common value", `{"allOf": [{"enum": [1, 2]}, {"enum": [3]}]}`,
			`allOf: no value is in every enum component, so the grammar generates {}`},
		{"an allOf of an object and an enum", `{"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"enum": [{"a": "x"}]}]}`,
			`allOf: an enum component is dropped (the converter intersects enums only when every component is one)`},
		{"an allOf component requiring a name no component has", `{"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["c"]}]}`,
			`allOf: required property "c" is in no component's properties, so the grammar never generates it`},
		{"a required name outside properties that additionalProperties allows", `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"], "additionalProperties": true}`, ""},
		{"required names all among properties", `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}`, ""},
		{"an allOf of objects, one requiring the other's property", `{"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["a"]}]}`, ""},
		{"an allOf of a $ref'd object and a description", `{"allOf": [{"$ref": "#/$defs/o"}, {"description": "x"}], "$defs": {"o": {"type": "object", "properties": {"a": {"type": "string"}}}}}`, ""},
		{"an allOf of enums with a common value", `{"allOf": [{"enum": [1, 2]}, {"enum": [2, 3]}]}`, ""},
		{"an allOf with an anyOf of objects", `{"allOf": [{"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}]}, {"type": "object", "properties": {"b": {"type": "string"}}}]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var warnings []string
			if _, err := FromJSONSchemaWarn([]byte(c.schema), &warnings); err != nil {
				t.Fatal(err)
			}
			switch {
			case c.want == "" && len(warnings) > 0:
				t.Fatalf("warned of a schema the grammar enforces: %q", warnings)
			case c.want != "" && (len(warnings) != 1 || warnings[0] != c.want):
				t.Fatalf("warnings %q, want [%q]", warnings, c.want)
			}
		})
	}
}
