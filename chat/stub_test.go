package chat

import "github.com/bankml/bankml/chat/internal/peg"

// stubSchema stands in for package grammar's schemas until it lands: an object's properties (in order, with
// their required flags) and whether a property is a string, enough for the parsers' structure; no grammar.
type stubSchema struct {
	str   bool
	props []schemaProperty
}

func (s stubSchema) MayBeString() bool                  { return s.str }
func (s stubSchema) objectProperties() []schemaProperty { return s.props }

func stubFrom(n *node) stubSchema {
	var s stubSchema
	if t, ok := n.get("type"); ok && t.kind == jString && t.s == "string" {
		s.str = true
	}
	props, _ := n.get("properties")
	req := map[string]bool{}
	if r, ok := n.get("required"); ok {
		for _, it := range r.items {
			req[it.s] = true
		}
	}
	if props != nil {
		for i, k := range props.keys {
			s.props = append(s.props, schemaProperty{name: k, schema: stubFrom(props.vals[i]), required: req[k]})
		}
	}
	return s
}

type stubGrammar struct{}

func (stubGrammar) parseSchema(b []byte) (schemaNode, error) {
	n, err := parseJSON(b)
	if err != nil {
		return nil, err
	}
	return stubFrom(n), nil
}

func (stubGrammar) build(fn func(peg.GrammarBuilder)) (string, error) { return "", nil }

// UseStubGrammar sets the stub backend on a template (and its tool-use template).
func UseStubGrammar(t *Template) {
	t.gb = stubGrammar{}
	if t.toolUse != nil {
		t.toolUse.gb = stubGrammar{}
	}
}

// Specialized names the family of a template llama.cpp hands to a specialized handler ("" for none).
func Specialized(t *Template) string { return specializedFamily(t.source) }
