package chat

import (
	"github.com/bankml/bankml/chat/internal/peg"
)

// schemaNode is a node of a parsed JSON schema (llama.cpp's common_chat_schema, common/json-schema.h): the
// tool-call and response-format parsers carry one per schema, and the grammar is converted from it.
type schemaNode interface {
	peg.Schema
	// objectProperties are an object schema's properties in schema order (nil for any other kind).
	objectProperties() []schemaProperty
}

// schemaProperty is common_chat_schema_property.
type schemaProperty struct {
	name     string
	schema   schemaNode
	required bool
}

// grammarBackend is what the parsers need of package grammar: common_chat_schema_from_json (an error for a
// schema outside the subset the converter supports, with its message) and build_grammar (the converter's rules,
// formatted; an error for a schema the converter refuses).
type grammarBackend interface {
	parseSchema(schema []byte) (schemaNode, error)
	build(fn func(peg.GrammarBuilder)) (string, error)
}
