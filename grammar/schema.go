package grammar

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// SchemaKind is common_chat_schema::node_kind.
type SchemaKind uint8

// The schema node kinds (common/json-schema.h).
const (
	KindAny SchemaKind = iota
	KindRef
	KindAnyOf
	KindAllOf
	KindConst
	KindEnum
	KindNull
	KindBoolean
	KindNumber
	KindInteger
	KindString
	KindArray
	KindTuple
	KindObject
)

// StringFormat is common_chat_schema::string_format.
type StringFormat uint8

// The string formats the converter knows.
const (
	FormatNone StringFormat = iota
	FormatUUID
	FormatDate
	FormatTime
	FormatDateTime
)

// Schema is one node of a JSON schema as common_chat_schema_from_json
// reads it (common/json-schema.cpp): the subset json_schema_to_grammar can
// convert. Which fields are set depends on Kind.
type Schema struct {
	Kind SchemaKind

	Ref    string  // KindRef: the "#/..." reference
	Target *Schema // KindRef: what it refers to

	Children []*Schema // KindAnyOf (oneOf, anyOf, a type array), KindAllOf

	Value  *JSON   // KindConst
	Values []*JSON // KindEnum

	Minimum, Maximum int64 // KindInteger: inclusive bounds, math.MinInt64 / math.MaxInt64 when unbounded

	Pattern              string       // KindString: "" when absent
	Format               StringFormat // KindString
	MinLength, MaxLength int          // KindString: MaxLength -1 when unbounded

	Items              *Schema   // KindArray: a KindAny node when "items" is absent
	MinItems, MaxItems int       // KindArray: MaxItems -1 when unbounded
	TupleItems         []*Schema // KindTuple

	Properties           []SchemaProperty // KindObject, in schema order
	AdditionalProperties *Schema          // KindObject: nil when not allowed
	// UnknownRequired (KindObject) are the names of "required" that are not among Properties, in schema order.
	// The reference reads only the required names it has properties for; bankml keeps the others so that the
	// converter can refuse to drop them (see [Build]).
	UnknownRequired []string
}

// SchemaProperty is one property of an object schema.
type SchemaProperty struct {
	Name     string
	Schema   *Schema
	Required bool
}

// SchemaDocument is common_chat_schema_document: the root node and the
// targets of its $refs by reference.
type SchemaDocument struct {
	Root *Schema
	Refs map[string]*Schema

	// Contradictions are the constraints no JSON value meets, each as "JSON schema error at <path>: <what>",
	// in the order the parser met them: an integer's or a number's lower bound above its upper bound (an
	// exclusive bound and fractional bounds counted, so bounds with no integer between them are one), minLength
	// above maxLength, minItems above maxItems. They are bankml's own: the reference converts such a schema
	// without a word, into a grammar that matches nothing, loops its GBNF parser ({5,1}) or drops the bound
	// (minItems). A contradiction inside one alternative of an anyOf counts too. [SchemaDocument.Satisfiable]
	// is the error to refuse the schema with.
	Contradictions []string
}

// UnsatisfiableError is a schema with a contradiction (see [SchemaDocument.Contradictions]); Msg is the first
// one.
type UnsatisfiableError struct{ Msg string }

func (e *UnsatisfiableError) Error() string { return e.Msg }

// Satisfiable is nil for a document without contradictions, else an *UnsatisfiableError naming the first.
func (d *SchemaDocument) Satisfiable() error {
	if len(d.Contradictions) == 0 {
		return nil
	}
	return &UnsatisfiableError{Msg: d.Contradictions[0]}
}

// SchemaError is a schema outside the subset the converter supports, or one
// it cannot convert; Msg is the text of the reference's exception:
// json_schema_to_grammar's "JSON schema conversion failed:\n" followed by
// common_chat_schema_from_json's "JSON schema error at #/...: ..." or by
// the converter's errors (an invalid pattern, an unresolved $ref), one per
// line. llama-server answers it as "\"json_schema\": " + Msg.
type SchemaError struct{ Msg string }

func (e *SchemaError) Error() string { return e.Msg }

type schemaFailure struct{ msg string }

// ParseSchema reads a JSON schema into its nodes as
// common_chat_schema_from_json does, resolving every "#/..." $ref within
// the document. The error is a *SchemaError (with the "JSON schema error
// at ..." message, not yet prefixed by the conversion's), or a JSON syntax
// error.
func ParseSchema(schema []byte) (*SchemaDocument, error) {
	j, err := ParseJSON(schema)
	if err != nil {
		return nil, err
	}
	return SchemaFromJSON(j)
}

// SchemaFromJSON is ParseSchema on a parsed value.
func SchemaFromJSON(j *JSON) (doc *SchemaDocument, err error) {
	b := &schemaBuilder{root: j, refs: map[string]*Schema{}, built: map[string]bool{}}
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(schemaFailure)
			if !ok {
				panic(v)
			}
			doc, err = nil, &SchemaError{Msg: f.msg}
		}
	}()
	root := b.node(j, "#")
	for _, r := range b.pending {
		r.Target = b.refs[r.Ref]
	}
	return &SchemaDocument{Root: root, Refs: b.refs, Contradictions: b.contradictions}, nil
}

type schemaBuilder struct {
	root           *JSON
	refs           map[string]*Schema
	built          map[string]bool
	pending        []*Schema
	contradictions []string
}

// contradict records a constraint no value meets (the parse goes on, as the reference's does).
func (b *schemaBuilder) contradict(path, msg string) {
	b.contradictions = append(b.contradictions, "JSON schema error at "+path+": "+msg)
}

// boundNames names the keywords that set a lower and an upper bound, with their values as written.
func boundNames(s *JSON, lower, upper string) string {
	return lower + " " + s.get(lower).Dump() + " and " + upper + " " + s.get(upper).Dump()
}

// noIntegerBetween reports an integer's bounds that leave no integer. Judged on the values as written (in
// float64 unless both are integers), not on the converter's int64 bounds, which wrap at the ends of the range and
// turn a float out of range into math.MinInt64 as the reference's do.
func noIntegerBetween(s *JSON, lower, upper string) bool {
	lo, hi := s.get(lower), s.get(upper)
	if !lo.isNumber() || !hi.isNumber() {
		return false
	}
	if lo.isNumberInteger() && hi.isNumberInteger() {
		l, h := lo.bigInt(), hi.bigInt()
		if lower == "exclusiveMinimum" {
			l.Add(l, big.NewInt(1))
		}
		if upper == "exclusiveMaximum" {
			h.Sub(h, big.NewInt(1))
		}
		return l.Cmp(h) > 0
	}
	l, h := math.Ceil(lo.float64()), math.Floor(hi.float64())
	if lower == "exclusiveMinimum" {
		l = math.Floor(lo.float64()) + 1
	}
	if upper == "exclusiveMaximum" {
		h = math.Ceil(hi.float64()) - 1
	}
	return l > h
}

// numberBounds records the contradiction of a number's bounds (which the converter ignores): the lower one
// (minimum, else exclusiveMinimum) above the upper one (maximum, else exclusiveMaximum), or equal to it with
// either exclusive.
func (b *schemaBuilder) numberBounds(s *JSON, path string) {
	lower, upper := "minimum", "maximum"
	if !s.contains(lower) {
		lower = "exclusiveMinimum"
	}
	if !s.contains(upper) {
		upper = "exclusiveMaximum"
	}
	lo, hi := s.get(lower), s.get(upper)
	if !lo.isNumber() || !hi.isNumber() {
		return
	}
	l, h := lo.float64(), hi.float64()
	if l > h || l == h && (lower != "minimum" || upper != "maximum") {
		b.contradict(path, "no number meets "+boundNames(s, lower, upper))
	}
}

func (b *schemaBuilder) fail(path, msg string) {
	panic(schemaFailure{"JSON schema error at " + path + ": " + msg})
}

func (b *schemaBuilder) count(s *JSON, key, path string, def int) int {
	v := s.get(key)
	if v == nil {
		return def
	}
	if !v.isNumberInteger() || int32(v.int64()) < 0 {
		b.fail(path, key+" must be a non-negative integer")
	}
	return int(int32(v.int64()))
}

// bound reads a bound of an integer; a fractional one is rounded inwards.
func (b *schemaBuilder) bound(s *JSON, key, path string, roundUp bool) int64 {
	v := s.get(key)
	if v.isNumberInteger() {
		return v.int64()
	}
	if !v.isNumber() {
		b.fail(path, key+" must be a number")
	}
	if roundUp {
		return cvttsd2si(math.Ceil(v.f))
	}
	return cvttsd2si(math.Floor(v.f))
}

func (b *schemaBuilder) format(s *JSON, path string) StringFormat {
	v := s.get("format")
	if v == nil {
		return FormatNone
	}
	if !v.isString() {
		b.fail(path, "format must be a string")
	}
	switch f := v.s; {
	case f == "date":
		return FormatDate
	case f == "time":
		return FormatTime
	case f == "date-time":
		return FormatDateTime
	case f == "uuid" || len(f) == 5 && f[:4] == "uuid" && f[4] >= '1' && f[4] <= '5':
		return FormatUUID
	}
	return FormatNone
}

// stoull is std::stoull's reading of s: leading white space, an optional
// sign (a minus negates the value modulo 2^64), then decimal digits up to
// the first other byte; ok is false where it throws (no digits, overflow).
func stoull(s string) (uint64, bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] >= '\t' && s[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j == i {
		return 0, false
	}
	v, err := strconv.ParseUint(s[i:j], 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

func (b *schemaBuilder) resolve(ref, path string) *JSON {
	target := b.root
	tokens := strings.Split(ref[1:], "/")
	for _, sel := range tokens[1:] {
		switch {
		case target.isObject() && target.contains(sel):
			target = target.get(sel)
		case target.isArray():
			idx, ok := stoull(sel)
			if !ok {
				idx = uint64(len(target.arr))
			}
			if idx >= uint64(len(target.arr)) {
				b.fail(path, "cannot resolve $ref "+ref+", "+sel+" is out of range")
			}
			target = target.arr[idx]
		default:
			b.fail(path, "cannot resolve $ref "+ref+", "+sel+" not found")
		}
	}
	return target
}

func (b *schemaBuilder) ref(v *JSON, path string) *Schema {
	if !v.isString() {
		b.fail(path, "$ref must be a string")
	}
	ref := v.s
	if !strings.HasPrefix(ref, "#/") {
		b.fail(path, "unsupported $ref "+ref+", only references into the same document are supported")
	}
	if !b.built[ref] {
		// reserve the key first, so that a cycle back to this $ref stops here
		b.built[ref] = true
		b.refs[ref] = nil
		b.refs[ref] = b.node(b.resolve(ref, path), ref)
	}
	n := &Schema{Kind: KindRef, Ref: ref}
	b.pending = append(b.pending, n)
	return n
}

func (b *schemaBuilder) alternatives(kind SchemaKind, alts *JSON, path string) *Schema {
	if !alts.isArray() {
		b.fail(path, "must be an array of schemas")
	}
	if len(alts.arr) == 0 {
		b.fail(path, "must not be empty")
	}
	n := &Schema{Kind: kind}
	for i, a := range alts.arr {
		n.Children = append(n.Children, b.node(a, path+"/"+strconv.Itoa(i)))
	}
	return n
}

func (b *schemaBuilder) object(s *JSON, path string) *Schema {
	n := &Schema{Kind: KindObject}
	required := map[string]bool{}
	if r := s.get("required"); r.isArray() {
		for _, name := range r.arr {
			if name.isString() {
				required[name.s] = true
			}
		}
	}
	if props := s.get("properties"); props != nil {
		if !props.isObject() {
			b.fail(path, "properties must be an object")
		}
		for i, name := range props.keys {
			n.Properties = append(n.Properties, SchemaProperty{Name: name,
				Schema: b.node(props.vals[i], path+"/properties/"+name), Required: required[name]})
		}
	}
	if r := s.get("required"); r.isArray() {
		for _, name := range r.arr {
			if name.isString() && !slices.ContainsFunc(n.Properties, func(p SchemaProperty) bool { return p.Name == name.s }) {
				n.UnknownRequired = append(n.UnknownRequired, name.s)
			}
		}
	}
	if add := s.get("additionalProperties"); add != nil {
		switch {
		case add.isBool():
			if add.b {
				n.AdditionalProperties = &Schema{Kind: KindAny}
			}
		case add.isObject():
			n.AdditionalProperties = b.node(add, path+"/additionalProperties")
		default:
			b.fail(path, "additionalProperties must be a boolean or a schema")
		}
	} else if !s.contains("properties") {
		n.AdditionalProperties = &Schema{Kind: KindAny}
	}
	return n
}

func (b *schemaBuilder) array(s *JSON, path string) *Schema {
	n := &Schema{Kind: KindArray}
	if s.contains("items") || s.contains("prefixItems") {
		key := "prefixItems"
		if s.contains("items") {
			key = "items"
		}
		items := s.get(key)
		if items.isArray() {
			t := &Schema{Kind: KindTuple}
			for i, it := range items.arr {
				t.TupleItems = append(t.TupleItems, b.node(it, path+"/"+key+"/"+strconv.Itoa(i)))
			}
			return t
		}
		n.Items = b.node(items, path+"/"+key)
	} else {
		n.Items = &Schema{Kind: KindAny}
	}
	n.MinItems = b.count(s, "minItems", path, 0)
	n.MaxItems = b.count(s, "maxItems", path, -1)
	if n.MaxItems >= 0 && n.MinItems > n.MaxItems {
		b.contradict(path, "minItems "+strconv.Itoa(n.MinItems)+" is greater than maxItems "+strconv.Itoa(n.MaxItems))
	}
	return n
}

func (b *schemaBuilder) str(s *JSON, path string) *Schema {
	n := &Schema{Kind: KindString}
	if p := s.get("pattern"); p != nil {
		if !p.isString() {
			b.fail(path, "pattern must be a string")
		}
		n.Pattern = p.s
	}
	n.Format = b.format(s, path)
	n.MinLength = b.count(s, "minLength", path, 0)
	n.MaxLength = b.count(s, "maxLength", path, -1)
	if n.MaxLength >= 0 && n.MinLength > n.MaxLength {
		b.contradict(path, "minLength "+strconv.Itoa(n.MinLength)+" is greater than maxLength "+strconv.Itoa(n.MaxLength))
	}
	return n
}

func (b *schemaBuilder) integer(s *JSON, path string) *Schema {
	n := &Schema{Kind: KindInteger, Minimum: math.MinInt64, Maximum: math.MaxInt64}
	lower, upper := "", ""
	if s.contains("minimum") {
		n.Minimum = b.bound(s, "minimum", path, true)
		lower = "minimum"
	} else if s.contains("exclusiveMinimum") {
		n.Minimum = b.bound(s, "exclusiveMinimum", path, false) + 1
		lower = "exclusiveMinimum"
	}
	if s.contains("maximum") {
		n.Maximum = b.bound(s, "maximum", path, false)
		upper = "maximum"
	} else if s.contains("exclusiveMaximum") {
		n.Maximum = b.bound(s, "exclusiveMaximum", path, true) - 1
		upper = "exclusiveMaximum"
	}
	if lower != "" && upper != "" && noIntegerBetween(s, lower, upper) {
		b.contradict(path, "no integer meets "+boundNames(s, lower, upper))
	}
	return n
}

func (b *schemaBuilder) node(s *JSON, path string) *Schema {
	if !s.isObject() {
		b.fail(path, "schema must be an object")
	}
	if r := s.get("$ref"); r != nil {
		return b.ref(r, path)
	}
	if s.contains("oneOf") || s.contains("anyOf") {
		key := "anyOf"
		if s.contains("oneOf") {
			key = "oneOf"
		}
		return b.alternatives(KindAnyOf, s.get(key), path+"/"+key)
	}
	typ := s.get("type")
	if typ.isArray() {
		if len(typ.arr) == 0 {
			b.fail(path, "type must not be empty")
		}
		n := &Schema{Kind: KindAnyOf}
		for i, t := range typ.arr {
			alt := s.clone()
			alt.set("type", t)
			n.Children = append(n.Children, b.node(alt, path+"/type/"+strconv.Itoa(i)))
		}
		return n
	}
	if c := s.get("const"); c != nil {
		return &Schema{Kind: KindConst, Value: c}
	}
	if e := s.get("enum"); e != nil {
		if !e.isArray() || len(e.arr) == 0 {
			b.fail(path, "enum must be a non-empty array")
		}
		return &Schema{Kind: KindEnum, Values: e.arr}
	}
	if !typ.isNull() && !typ.isString() {
		b.fail(path, "type must be a string or an array of strings")
	}
	name := ""
	if typ.isString() {
		name = typ.s
	}
	hasProperties := s.contains("properties") || s.contains("additionalProperties") && !s.get("additionalProperties").isTrue()
	if name == "" {
		switch {
		case hasProperties:
			return b.object(s, path)
		case s.contains("allOf"):
			return b.alternatives(KindAllOf, s.get("allOf"), path+"/allOf")
		case s.contains("items") || s.contains("prefixItems"):
			return b.array(s, path)
		case s.contains("pattern") || s.contains("minLength") || s.contains("maxLength") || b.format(s, path) != FormatNone:
			return b.str(s, path)
		}
		return &Schema{Kind: KindAny}
	}
	switch name {
	case "object":
		if !hasProperties && s.contains("allOf") {
			return b.alternatives(KindAllOf, s.get("allOf"), path+"/allOf")
		}
		return b.object(s, path)
	case "string":
		if s.contains("allOf") {
			return b.alternatives(KindAllOf, s.get("allOf"), path+"/allOf")
		}
		return b.str(s, path)
	case "array":
		return b.array(s, path)
	case "integer":
		return b.integer(s, path)
	case "number":
		b.numberBounds(s, path)
		return &Schema{Kind: KindNumber}
	case "boolean":
		return &Schema{Kind: KindBoolean}
	case "null":
		return &Schema{Kind: KindNull}
	}
	b.fail(path, "unrecognized type "+name)
	return nil
}

// String names the kind as common_chat_schema::kind_name does.
func (k SchemaKind) String() string {
	names := [...]string{"any", "ref", "anyOf", "allOf", "const", "enum", "null", "boolean", "number", "integer",
		"string", "array", "tuple", "object"}
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("SchemaKind(%d)", k)
}
