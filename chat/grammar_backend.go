package chat

import (
	"fmt"
	"strings"

	"github.com/bankml/bankml/chat/internal/peg"
	"github.com/bankml/bankml/grammar"
)

// defaultGrammar is the grammar backend of every template: package grammar's schema parser
// (common_chat_schema_from_json) and converter (build_grammar).
var defaultGrammar grammarBackend = grammarPackage{}

type grammarPackage struct{}

// parseSchema parses a schema document; its error is the reference's message ("JSON schema error at #/..."),
// or a *grammar.UnsatisfiableError for a schema with a constraint no value meets (bankml's refusal).
func (grammarPackage) parseSchema(b []byte) (schemaNode, error) {
	doc, err := grammar.ParseSchema(b)
	if err != nil {
		return nil, err
	}
	if err := doc.Satisfiable(); err != nil {
		return nil, err
	}
	return grammarSchema{doc.Root}, nil
}

// build is build_grammar. A pattern the converter cannot express, for which the reference's grammar accepts any
// string (it only prints a warning), is an error here: bankml does not loosen a constraint it was asked for.
func (grammarPackage) build(fn func(peg.GrammarBuilder)) (string, error) {
	var warnings []string
	g, err := grammar.Build(func(b *grammar.Builder) { fn(grammarBuilder{b}) }, grammar.BuildOptions{Warnings: &warnings})
	if err != nil {
		return "", err
	}
	if len(warnings) > 0 {
		return "", fmt.Errorf("%s (bankml refuses a schema it cannot enforce; llama.cpp generates without it)", strings.Join(warnings, "; "))
	}
	return g, nil
}

// grammarBuilder is common_grammar_builder over package grammar's Builder.
type grammarBuilder struct{ b *grammar.Builder }

func (g grammarBuilder) AddRule(name, body string) string { return g.b.AddRule(name, body) }
func (g grammarBuilder) AddSchema(name string, s peg.Schema) string {
	return g.b.AddSchema(name, s.(grammarSchema).s)
}
func (g grammarBuilder) Literal(s string) string { return grammar.FormatLiteral(s) }

// grammarSchema is a node of a parsed schema.
type grammarSchema struct{ s *grammar.Schema }

// MayBeString is common_chat_schema::may_be_string (common/json-schema.cpp): a string, a string const, an enum
// with a string, a $ref to one (a cycle counts as not), anyOf with one, allOf whose constraining children all
// allow one.
func (g grammarSchema) MayBeString() bool { return mayBeString(g.s, map[*grammar.Schema]bool{}) }

func mayBeString(s *grammar.Schema, visited map[*grammar.Schema]bool) bool {
	isString := func(j *grammar.JSON) bool { return j != nil && strings.HasPrefix(j.Dump(), `"`) }
	switch s.Kind {
	case grammar.KindString:
		return true
	case grammar.KindConst:
		return isString(s.Value)
	case grammar.KindEnum:
		for _, v := range s.Values {
			if isString(v) {
				return true
			}
		}
		return false
	case grammar.KindRef:
		if s.Target == nil || visited[s.Target] {
			return false
		}
		visited[s.Target] = true
		r := mayBeString(s.Target, visited)
		delete(visited, s.Target)
		return r
	case grammar.KindAnyOf:
		for _, c := range s.Children {
			if mayBeString(c, visited) {
				return true
			}
		}
		return false
	case grammar.KindAllOf:
		any := false
		for _, c := range s.Children {
			if c.Kind == grammar.KindAny {
				continue
			}
			if !mayBeString(c, visited) {
				return false
			}
			any = true
		}
		return any
	}
	return false
}

func (g grammarSchema) objectProperties() []schemaProperty {
	if g.s.Kind != grammar.KindObject {
		return nil
	}
	out := make([]schemaProperty, len(g.s.Properties))
	for i, p := range g.s.Properties {
		out[i] = schemaProperty{name: p.Name, schema: grammarSchema{p.Schema}, required: p.Required}
	}
	return out
}
