// Package peg is llama.cpp's PEG parser engine (common/peg-parser.cpp, common/trie.cpp): an arena of parsers
// built by a Builder, a packrat-free recursive parser with partial (streaming) results and an AST of tagged and
// named nodes, and the GBNF grammar generated from the same parsers.
//
// # Design record
//
// What. The chat templates' answer parsers (common_chat_parse) and tool-call grammars are built from this
// engine: package chat's autoparser builds an Arena from a template's analysis, parses every prefix of an answer
// with it, and turns it into the grammar that constrains the answer (BuildGrammar).
//
// Follows. common/peg-parser.cpp at the reference's commit: the 21 parser kinds, their parse results
// (fail / success / need more input) in lenient mode, the AST nodes rules and tags create (with the invalid UTF-8
// runs they hold), the builder's flattening of nested sequences and choices, rules and refs resolved at Build,
// and build_grammar's GBNF text (literals, character classes, repetitions, the Aho-Corasick "until" and "ac"
// rules, lazy grammars rooted at trigger rules). Parser ids are assigned in the order the reference's builder
// creates parsers (they name the "until-N" and "ac-N" rules of the grammar), so callers build in that order.
//
// Deliberate differences. No debug printing, no save/load (bankml keeps the Arena in memory; Dump gives the
// reference's to_json for tests). build_grammar walks the rules in name order where the reference walks a hash
// map; the order only matters when two rules of one grammar collide on a name (see BuildGrammar).
//
// Determinism. Building and parsing are pure functions of their inputs.
package peg

import (
	"fmt"
	"regexp"
	"strings"
)

// ID names a parser of an Arena.
type ID int

// Invalid is the id of no parser (COMMON_PEG_INVALID_PARSER_ID).
const Invalid ID = -1

// Status is a parse result's type.
type Status uint8

const (
	Fail     Status = iota // COMMON_PEG_PARSE_RESULT_FAIL
	Success                // COMMON_PEG_PARSE_RESULT_SUCCESS
	NeedMore               // COMMON_PEG_PARSE_RESULT_NEED_MORE_INPUT
)

func (s Status) String() string {
	switch s {
	case Fail:
		return "fail"
	case Success:
		return "success"
	case NeedMore:
		return "need_more_input"
	}
	return "unknown"
}

// Kind is a parser's variant.
type Kind uint8

const (
	KEpsilon Kind = iota
	KStart
	KEnd
	KLiteral
	KSequence
	KChoice
	KRepetition
	KAnd
	KNot
	KAny
	KSpace
	KChars
	KString
	KUntil
	KSchema
	KRule
	KRef
	KAtomic
	KTag
	KGBNF
	KAC
)

var kindNames = [...]string{"epsilon", "start", "end", "literal", "sequence", "choice", "repetition", "and", "not",
	"any", "space", "chars", "string", "until", "schema", "rule", "ref", "atomic", "tag", "gbnf", "ac"}

func (k Kind) String() string { return kindNames[k] }

// charRange is an inclusive range of code points.
type charRange struct{ lo, hi uint32 }

// Schema is a JSON schema node a schema parser carries: the grammar is generated from it (Builder.Schema). The
// peg engine only asks whether a value matching it may be a string (common_chat_schema::may_be_string).
type Schema interface {
	MayBeString() bool
}

// parser is one variant of common_peg_parser_variant; the fields used depend on kind.
type parser struct {
	kind     Kind
	text     string // literal, chars pattern, rule/ref name, tag, gbnf grammar, schema name
	children []ID   // sequence, choice
	child    ID     // repetition, and, not, schema, rule, atomic, tag, gbnf, ac
	min, max int    // repetition, chars (-1: unbounded)
	ranges   []charRange
	negated  bool
	delim    byte     // string
	delims   []string // until, ac
	trie     *trie    // until: built once from delims
	trigger  bool     // rule
	raw      bool     // schema
	schema   Schema   // schema (nil when absent)
}

// Arena holds the parsers, the rules by name and the root (common_peg_arena).
type Arena struct {
	parsers []parser
	rules   map[string]ID
	root    ID
}

// Root is the root parser.
func (a *Arena) Root() ID { return a.root }

// Empty reports whether the arena has no parsers.
func (a *Arena) Empty() bool { return a == nil || len(a.parsers) == 0 }

// Len is the number of parsers.
func (a *Arena) Len() int { return len(a.parsers) }

func (a *Arena) add(p parser) ID {
	a.parsers = append(a.parsers, p)
	return ID(len(a.parsers) - 1)
}

func (a *Arena) rule(name string) (ID, error) {
	id, ok := a.rules[name]
	if !ok {
		return Invalid, fmt.Errorf("Rule not found: %s", name)
	}
	return id, nil
}

// resolveRef returns the rule a ref names, or id itself.
func (a *Arena) resolveRef(id ID) ID {
	if p := &a.parsers[id]; p.kind == KRef {
		if r, ok := a.rules[p.text]; ok {
			return r
		}
	}
	return id
}

// resolveRefs replaces every child that is a ref by the rule it names, and the root too (resolve_refs).
func (a *Arena) resolveRefs() {
	for i := range a.parsers {
		p := &a.parsers[i]
		switch p.kind {
		case KSequence, KChoice:
			for j, c := range p.children {
				p.children[j] = a.resolveRef(c)
			}
		case KRepetition, KAnd, KNot, KTag, KAtomic, KGBNF, KAC, KRule, KSchema:
			p.child = a.resolveRef(p.child)
		}
	}
	if a.root != Invalid {
		a.root = a.resolveRef(a.root)
	}
}

// Builder builds an Arena (common_peg_parser_builder). Every method adds parsers in the order the reference's
// builder adds them for the same call.
type Builder struct {
	a Arena
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder {
	return &Builder{a: Arena{rules: map[string]ID{}, root: Invalid}}
}

// P is a parser handle, common_peg_parser: an id and its builder, with the reference's operators as methods.
type P struct {
	b  *Builder
	ID ID
}

func (b *Builder) wrap(id ID) P { return P{b: b, ID: id} }

func (b *Builder) add(p parser) P { return b.wrap(b.a.add(p)) }

// Plus is p + q: sequence({p, q}).
func (p P) Plus(q P) P { return p.b.Sequence(p, q) }

// PlusLit is p + "s": the literal, then sequence({p, literal}).
func (p P) PlusLit(s string) P { return p.Plus(p.b.Literal(s)) }

// Or is p | q: choice({p, q}).
func (p P) Or(q P) P { return p.b.Choice(p, q) }

// OrLit is p | "s".
func (p P) OrLit(s string) P { return p.Or(p.b.Literal(s)) }

// Spaced is p << q: sequence({p, space(), q}).
func (p P) Spaced(q P) P { return p.b.Sequence(p, p.b.Space(), q) }

// SpacedLit is p << "s".
func (p P) SpacedLit(s string) P { return p.Spaced(p.b.Literal(s)) }

// Cat is the chain o1 + o2 + ... + on of the reference's operator+ as GCC evaluates it: the operands right to
// left first (an operand is a parser already built, a func() P building one, or a string, whose literal the
// operator makes), then the sequences from the left. Parser ids follow that order.
func (b *Builder) Cat(ops ...any) P { return b.chain(ops, b.Sequence) }

// Alt is the chain o1 | o2 | ... | on (choices), evaluated as Cat.
func (b *Builder) Alt(ops ...any) P { return b.chain(ops, b.Choice) }

func (b *Builder) chain(ops []any, join func(...P) P) P {
	vals := make([]any, len(ops))
	for i := len(ops) - 1; i >= 0; i-- {
		switch o := ops[i].(type) {
		case func() P:
			vals[i] = o()
		case P, string:
			vals[i] = o
		default:
			panic(fmt.Sprintf("peg: chain operand %T", o))
		}
	}
	get := func(v any) P {
		if s, ok := v.(string); ok {
			return b.Literal(s)
		}
		return v.(P)
	}
	acc := vals[0]
	for i := 1; i < len(vals); i++ {
		var l, r P
		if s, ok := acc.(string); ok { // "s" + p: the non-member operator makes the literal first
			l = b.Literal(s)
			r = get(vals[i])
		} else {
			l = acc.(P)
			r = get(vals[i])
		}
		acc = join(l, r)
	}
	return get(acc)
}

// LitPlus is "s" + p (the non-member operator: p is evaluated by the caller first, then the literal is added).
func (b *Builder) LitPlus(s string, p P) P { return b.Literal(s).Plus(p) }

// LitSpaced is "s" << p.
func (b *Builder) LitSpaced(s string, p P) P { return b.Literal(s).Spaced(p) }

// Eps matches nothing and always succeeds.
func (b *Builder) Eps() P { return b.add(parser{kind: KEpsilon}) }

// Start matches the start of the input.
func (b *Builder) Start() P { return b.add(parser{kind: KStart}) }

// End matches the end of the input.
func (b *Builder) End() P { return b.add(parser{kind: KEnd}) }

// Literal matches s exactly.
func (b *Builder) Literal(s string) P { return b.add(parser{kind: KLiteral, text: s}) }

// Sequence matches the parsers in order; nested sequences are flattened into this one.
func (b *Builder) Sequence(ps ...P) P {
	var flat []ID
	for _, p := range ps {
		if q := &b.a.parsers[p.ID]; q.kind == KSequence {
			flat = append(flat, q.children...)
		} else {
			flat = append(flat, p.ID)
		}
	}
	return b.add(parser{kind: KSequence, children: flat})
}

// Choice matches the first parser that does not fail; nested choices are flattened into this one.
func (b *Builder) Choice(ps ...P) P {
	flat := []ID{}
	for _, p := range ps {
		if q := &b.a.parsers[p.ID]; q.kind == KChoice {
			flat = append(flat, q.children...)
		} else {
			flat = append(flat, p.ID)
		}
	}
	return b.add(parser{kind: KChoice, children: flat})
}

// OneOrMore is p+.
func (b *Builder) OneOrMore(p P) P { return b.Repeat(p, 1, -1) }

// ZeroOrMore is p*.
func (b *Builder) ZeroOrMore(p P) P { return b.Repeat(p, 0, -1) }

// Optional is p?.
func (b *Builder) Optional(p P) P { return b.Repeat(p, 0, 1) }

// Repeat is p{min,max} (max -1: unbounded).
func (b *Builder) Repeat(p P, min, max int) P {
	return b.add(parser{kind: KRepetition, child: p.ID, min: min, max: max})
}

// Peek is &p: succeeds where p does, consuming nothing.
func (b *Builder) Peek(p P) P { return b.add(parser{kind: KAnd, child: p.ID}) }

// Negate is !p.
func (b *Builder) Negate(p P) P { return b.add(parser{kind: KNot, child: p.ID}) }

// Any matches one UTF-8 code point.
func (b *Builder) Any() P { return b.add(parser{kind: KAny}) }

// Space matches zero or more C isspace bytes.
func (b *Builder) Space() P { return b.add(parser{kind: KSpace}) }

// Chars matches min to max (-1: unbounded) code points of a character class such as "[a-z]" or "[^\n]".
func (b *Builder) Chars(classes string, min, max int) P {
	ranges, negated := parseCharClasses(classes)
	return b.add(parser{kind: KChars, text: classes, ranges: ranges, negated: negated, min: min, max: max})
}

// Ref names a rule, resolved at Build.
func (b *Builder) Ref(name string) P { return b.add(parser{kind: KRef, text: name}) }

// Until matches everything up to the first delimiter (not consumed); invalid UTF-8 is consumed and recorded.
func (b *Builder) Until(delim string) P { return b.UntilOneOf([]string{delim}) }

// UntilOneOf matches everything up to the first of the delimiters.
func (b *Builder) UntilOneOf(delims []string) P {
	d := append([]string(nil), delims...)
	return b.add(parser{kind: KUntil, delims: d, trie: newTrie(d)})
}

// Rest matches everything.
func (b *Builder) Rest() P { return b.UntilOneOf(nil) }

// StringContent matches a JSON-style string's content up to delim (not consumed).
func (b *Builder) StringContent(delim byte) P { return b.add(parser{kind: KString, delim: delim}) }

// Atomic drops the AST nodes of its child when the child needs more input.
func (b *Builder) Atomic(p P) P { return b.add(parser{kind: KAtomic, child: p.ID}) }

// Tag makes an AST node tagged tag for what p matches.
func (b *Builder) Tag(tag string, p P) P { return b.add(parser{kind: KTag, child: p.ID, text: tag}) }

// GBNF parses with p but emits grammar instead of p's grammar.
func (b *Builder) GBNF(p P, grammar string) P {
	return b.add(parser{kind: KGBNF, child: p.ID, text: grammar})
}

// AC parses with p but emits the Aho-Corasick grammar matching everything up to and including the first
// delimiter. It panics on an empty list, as the reference throws (a programming error).
func (b *Builder) AC(p P, delims ...string) P {
	if len(delims) == 0 {
		panic("ac parser requires at least one delimiter")
	}
	return b.add(parser{kind: KAC, child: p.ID, delims: append([]string(nil), delims...)})
}

// Schema wraps p with the schema its grammar is generated from; raw says a raw string value is parsed by p.
func (b *Builder) Schema(p P, name string, s Schema, raw bool) P {
	return b.add(parser{kind: KSchema, child: p.ID, text: name, schema: s, raw: raw})
}

var invalidRuleChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

// RuleName is the reference's rule_name: runs of characters outside [a-zA-Z0-9-] become one "-".
func RuleName(name string) string { return invalidRuleChars.ReplaceAllString(name, "-") }

// Rule stores p as a named rule (a trigger rule roots a lazy grammar) and returns a ref to it.
func (b *Builder) Rule(name string, p P, trigger bool) P {
	clean := RuleName(name)
	id := b.a.add(parser{kind: KRule, text: clean, child: p.ID, trigger: trigger})
	b.a.rules[clean] = id
	return b.Ref(clean)
}

// TriggerRule is Rule(name, p, true).
func (b *Builder) TriggerRule(name string, p P) P { return b.Rule(name, p, true) }

// RuleFunc builds the rule once: a ref when it exists, else a placeholder rule (for recursion), fn's parser,
// the rule, and a ref.
func (b *Builder) RuleFunc(name string, fn func() P, trigger bool) P {
	clean := RuleName(name)
	if _, ok := b.a.rules[clean]; ok {
		return b.Ref(clean)
	}
	placeholder := b.Any()
	ph := b.a.add(parser{kind: KRule, text: clean, child: placeholder.ID, trigger: trigger})
	b.a.rules[clean] = ph
	p := fn()
	id := b.a.add(parser{kind: KRule, text: clean, child: p.ID, trigger: trigger})
	b.a.rules[clean] = id
	return b.Ref(clean)
}

// SetRoot sets the root parser.
func (b *Builder) SetRoot(p P) { b.a.root = p.ID }

// Build resolves the refs and returns the arena; the builder must not be used afterwards.
func (b *Builder) Build() *Arena {
	b.a.resolveRefs()
	a := b.a
	return &a
}

// Build is build_peg_parser: fn's parser as the root.
func Build(fn func(b *Builder) P) *Arena {
	b := NewBuilder()
	b.SetRoot(fn(b))
	return b.Build()
}

// DoubleQuotedString is '"' content '"'.
func (b *Builder) DoubleQuotedString() P {
	return b.RuleFunc("double-quoted-string", func() P {
		return b.Sequence(b.Literal(`"`), b.StringContent('"'), b.Literal(`"`))
	}, false)
}

// SingleQuotedString is "'" content "'".
func (b *Builder) SingleQuotedString() P {
	return b.RuleFunc("single-quoted-string", func() P {
		return b.Sequence(b.Literal("'"), b.StringContent('\''), b.Literal("'"))
	}, false)
}

// QuotedString accepts both quoting styles.
func (b *Builder) QuotedString() P {
	return b.RuleFunc("quoted-string", func() P {
		return b.Choice(b.DoubleQuotedString(), b.SingleQuotedString())
	}, false)
}

// JSONNumber is a JSON number, committed only where the next character cannot extend it.
func (b *Builder) JSONNumber() P {
	return b.RuleFunc("json-number", func() P {
		digit19 := b.Chars("[1-9]", 1, 1)
		digits := b.Chars("[0-9]", 1, -1)
		intPart := b.Choice(b.Literal("0"), b.Sequence(digit19, b.Chars("[0-9]", 0, -1)))
		frac := b.Sequence(b.Literal("."), digits)
		exp := b.Sequence(b.Choice(b.Literal("e"), b.Literal("E")), b.Optional(b.Chars("[+-]", 1, 1)), digits)
		notCont := b.Negate(b.Chars("[0-9.eE+-]", 1, 1))
		return b.Sequence(b.Optional(b.Literal("-")), intPart, b.Optional(frac), b.Optional(exp), notCont)
	}, false)
}

// JSONString is a JSON string.
func (b *Builder) JSONString() P {
	return b.RuleFunc("json-string", func() P {
		return b.Sequence(b.Literal(`"`), b.StringContent('"'), b.Literal(`"`))
	}, false)
}

// JSONBool is true or false.
func (b *Builder) JSONBool() P {
	return b.RuleFunc("json-bool", func() P { return b.Choice(b.Literal("true"), b.Literal("false")) }, false)
}

// JSONNull is null.
func (b *Builder) JSONNull() P {
	return b.RuleFunc("json-null", func() P { return b.Literal("null") }, false)
}

// JSONObject is a JSON object.
func (b *Builder) JSONObject() P {
	return b.RuleFunc("json-object", func() P {
		ws := b.Space()
		member := b.Sequence(b.JSONString(), ws, b.Literal(":"), ws, b.JSON())
		members := b.Sequence(member, b.ZeroOrMore(b.Sequence(ws, b.Literal(","), ws, member)))
		return b.Sequence(b.Literal("{"), ws, b.Choice(b.Literal("}"), b.Sequence(members, ws, b.Literal("}"))))
	}, false)
}

// JSONArray is a JSON array.
func (b *Builder) JSONArray() P {
	return b.RuleFunc("json-array", func() P {
		ws := b.Space()
		elements := b.Sequence(b.JSON(), b.ZeroOrMore(b.Sequence(ws, b.Literal(","), ws, b.JSON())))
		return b.Sequence(b.Literal("["), ws, b.Choice(b.Literal("]"), b.Sequence(elements, ws, b.Literal("]"))))
	}, false)
}

// JSON is any JSON value.
func (b *Builder) JSON() P {
	return b.RuleFunc("json-value", func() P {
		return b.Choice(b.JSONObject(), b.JSONArray(), b.JSONString(), b.JSONNumber(), b.JSONBool(), b.JSONNull())
	}, false)
}

// JSONMember is "key" ws ":" ws p.
func (b *Builder) JSONMember(key string, p P) P {
	ws := b.Space()
	return b.Sequence(b.Literal(`"`+key+`"`), ws, b.Literal(":"), ws, p)
}

// PythonString is a double- or single-quoted string.
func (b *Builder) PythonString() P {
	return b.RuleFunc("python-string", func() P {
		return b.Choice(b.DoubleQuotedString(), b.SingleQuotedString())
	}, false)
}

// PythonNumber is a JSON number.
func (b *Builder) PythonNumber() P { return b.JSONNumber() }

// PythonBool is True or False.
func (b *Builder) PythonBool() P {
	return b.RuleFunc("python-bool", func() P { return b.Choice(b.Literal("True"), b.Literal("False")) }, false)
}

// PythonNull is None.
func (b *Builder) PythonNull() P {
	return b.RuleFunc("python-none", func() P { return b.Literal("None") }, false)
}

// PythonDict is a Python dict literal.
func (b *Builder) PythonDict() P {
	return b.RuleFunc("python-dict", func() P {
		ws := b.Space()
		member := b.Sequence(b.PythonString(), ws, b.Literal(":"), ws, b.PythonValue())
		members := b.Sequence(member, b.ZeroOrMore(b.Sequence(ws, b.Literal(","), ws, member)))
		return b.Sequence(b.Literal("{"), ws, b.Choice(b.Literal("}"), b.Sequence(members, ws, b.Literal("}"))), ws)
	}, false)
}

// PythonArray is a Python list literal.
func (b *Builder) PythonArray() P {
	return b.RuleFunc("python-array", func() P {
		ws := b.Space()
		elements := b.Sequence(b.PythonValue(), b.ZeroOrMore(b.Sequence(b.Literal(","), ws, b.PythonValue())))
		return b.Sequence(b.Literal("["), ws, b.Choice(b.Literal("]"), b.Sequence(elements, ws, b.Literal("]"))), ws)
	}, false)
}

// PythonValue is any Python literal value.
func (b *Builder) PythonValue() P {
	return b.RuleFunc("python-value", func() P {
		return b.Choice(b.PythonDict(), b.PythonArray(), b.PythonString(), b.PythonNumber(), b.PythonBool(), b.PythonNull())
	}, false)
}

// Marker is text delimited by <> or [].
func (b *Builder) Marker() P {
	sharp := b.Cat(func() P { return b.Literal("<") }, func() P { return b.Until(">") }, func() P { return b.Literal(">") })
	square := b.Cat(func() P { return b.Literal("[") }, func() P { return b.Until("]") }, func() P { return b.Literal("]") })
	return b.Choice(sharp, square)
}

// parseHexEscape reads n hex digits at pos; ok is false when they are not all there.
func parseHexEscape(s string, pos, n int) (uint32, bool) {
	if pos+n > len(s) {
		return 0, false
	}
	var v uint32
	for i := range n {
		c := s[pos+i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 + uint32(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 + uint32(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 + uint32(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// parseCharClassChar is parse_char_class_char: one character of a class (escapes included) as a code point
// (a raw byte for non-ASCII input, as the reference reads bytes) and its length.
func parseCharClassChar(s string, pos int) (uint32, int) {
	if s[pos] == '\\' && pos+1 < len(s) {
		switch s[pos+1] {
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[pos+1]]
			if v, ok := parseHexEscape(s, pos+2, n); ok {
				return v, 2 + n
			}
			return uint32(s[pos+1]), 2
		case 'n':
			return '\n', 2
		case 't':
			return '\t', 2
		case 'r':
			return '\r', 2
		case '\\':
			return '\\', 2
		case ']':
			return ']', 2
		case '[':
			return '[', 2
		default:
			return uint32(int8(s[pos+1])), 2
		}
	}
	return uint32(s[pos]), 1
}

// parseCharClasses is parse_char_classes: the ranges of "[...]" (brackets optional) and whether it is negated.
func parseCharClasses(classes string) ([]charRange, bool) {
	content := classes
	content = strings.TrimPrefix(content, "[")
	content = strings.TrimSuffix(content, "]")
	negated := false
	if strings.HasPrefix(content, "^") {
		negated = true
		content = content[1:]
	}
	var ranges []charRange
	for i := 0; i < len(content); {
		start, n := parseCharClassChar(content, i)
		i += n
		if i+1 < len(content) && content[i] == '-' {
			end, m := parseCharClassChar(content, i+1)
			ranges = append(ranges, charRange{start, end})
			i += 1 + m
		} else {
			ranges = append(ranges, charRange{start, start})
		}
	}
	return ranges, negated
}

// ToJSON is common_peg_arena::to_json as Go values (the form llama-server passes the parser around in): the
// parsers in id order, the rules by name and the root. Schema nodes are left out, as the reference leaves them.
func (a *Arena) ToJSON() map[string]any {
	ps := make([]any, len(a.parsers))
	for i := range a.parsers {
		p := &a.parsers[i]
		m := map[string]any{"type": p.kind.String()}
		switch p.kind {
		case KLiteral:
			m["literal"] = p.text
		case KSequence, KChoice:
			m["children"] = append([]ID{}, p.children...)
		case KRepetition:
			m["child"], m["min_count"], m["max_count"] = p.child, p.min, p.max
		case KAnd, KNot, KAtomic:
			m["child"] = p.child
		case KChars:
			rs := []any{}
			for _, r := range p.ranges {
				rs = append(rs, map[string]any{"start": r.lo, "end": r.hi})
			}
			m["pattern"], m["ranges"], m["negated"], m["min_count"], m["max_count"] = p.text, rs, p.negated, p.min, p.max
		case KString:
			m["delimiter"] = string(p.delim)
		case KUntil:
			m["delimiters"] = append([]string{}, p.delims...)
		case KSchema:
			m["child"], m["name"], m["raw"] = p.child, p.text, p.raw
		case KRule:
			m["name"], m["child"], m["trigger"] = p.text, p.child, p.trigger
		case KRef:
			m["name"] = p.text
		case KTag:
			m["child"], m["tag"] = p.child, p.text
		case KGBNF:
			m["child"], m["grammar"] = p.child, p.text
		case KAC:
			m["child"], m["delimiters"] = p.child, append([]string{}, p.delims...)
		}
		ps[i] = m
	}
	rules := map[string]any{}
	for k, v := range a.rules {
		rules[k] = v
	}
	var root any = a.root
	if a.root == Invalid {
		root = uint64(1<<64 - 1)
	}
	return map[string]any{"parsers": ps, "rules": rules, "root": root}
}
