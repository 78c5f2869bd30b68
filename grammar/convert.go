package grammar

import (
	"errors"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is common/json-schema-to-grammar.cpp: a schema's nodes become
// GBNF rules, written byte for byte as the reference writes them.

const spaceRule = `| " " | "\n"{1,2} [ \t]{0,20}`

type builtinRule struct {
	content string
	deps    []string
}

var primitiveRules = map[string]builtinRule{
	"boolean":       {`("true" | "false")`, nil},
	"decimal-part":  {`[0-9]{1,16}`, nil},
	"integral-part": {`[0] | [1-9] [0-9]{0,15}`, nil},
	"number":        {`("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?`, []string{"integral-part", "decimal-part"}},
	"integer":       {`("-"? integral-part)`, []string{"integral-part"}},
	"value":         {`object | array | string | number | boolean | null`, []string{"object", "array", "string", "number", "boolean", "null"}},
	"object":        {`"{" space ( string ":" space value ("," space string ":" space value)* )? space "}"`, []string{"string", "value"}},
	"array":         {`"[" space ( value ("," space value)* )? space "]"`, []string{"value"}},
	"uuid":          {`"\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\""`, nil},
	"char":          {`[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})`, nil},
	"string":        {`"\"" char* "\""`, []string{"char"}},
	"null":          {`"null"`, nil},
}

var stringFormatRules = map[string]builtinRule{
	"date":             {`[0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] )`, nil},
	"time":             {`([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )`, nil},
	"date-time":        {`date "T" time`, []string{"date", "time"}},
	"date-string":      {`"\"" date "\""`, []string{"date"}},
	"time-string":      {`"\"" time "\""`, []string{"time"}},
	"date-time-string": {`"\"" date-time "\""`, []string{"date-time"}},
}

func isReservedName(name string) bool {
	if name == "root" {
		return true
	}
	_, p := primitiveRules[name]
	_, f := stringFormatRules[name]
	return p || f
}

// replaceNonRuleChars replaces each run of bytes outside [a-zA-Z0-9-] by
// "-" (regex_replace with [^a-zA-Z0-9-]+).
func replaceNonRuleChars(s string) string {
	var b strings.Builder
	run := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isWordChar(c) {
			b.WriteByte(c)
			run = false
		} else if !run {
			b.WriteByte('-')
			run = true
		}
	}
	return b.String()
}

// FormatLiteral is gbnf_format_literal: s as a GBNF string literal, with
// '\r', '\n', '"' and '\\' escaped.
func FormatLiteral(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\r':
			b.WriteString(`\r`)
		case '\n':
			b.WriteString(`\n`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// gbnfEscapeLength is gbnf_escape_length: the length of the GBNF escape at
// pos of pattern, or 0 when there is none.
func gbnfEscapeLength(pattern string, pos int) int {
	if pos+1 >= len(pattern) || pattern[pos] != '\\' {
		return 0
	}
	nHex := 0
	switch pattern[pos+1] {
	case 'x':
		nHex = 2
	case 'u':
		nHex = 4
	case 'U':
		nHex = 8
	case 't', 'r', 'n', '\\', '"', '[', ']', '-':
		return 2
	default:
		return 0
	}
	if pos+2+nHex > len(pattern) {
		return 0
	}
	for i := pos + 2; i < pos+2+nHex; i++ {
		h := pattern[i]
		if !(isDigit(h) || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
			return 0
		}
	}
	return 2 + nHex
}

func buildRepetition(item string, minItems, maxItems int, sep string) string {
	hasMax := maxItems != math.MaxInt32
	if maxItems == 0 {
		return ""
	}
	if minItems == 0 && maxItems == 1 {
		return item + "?"
	}
	if sep == "" {
		if minItems == 1 && !hasMax {
			return item + "+"
		}
		if minItems == 0 && !hasMax {
			return item + "*"
		}
		s := item + "{" + strconv.Itoa(minItems) + ","
		if hasMax {
			s += strconv.Itoa(maxItems)
		}
		return s + "}"
	}
	m := maxItems
	if hasMax {
		m = maxItems - 1
	}
	innerMin := 0
	if minItems != 0 {
		innerMin = minItems - 1
	}
	result := item + " " + buildRepetition("("+sep+" "+item+")", innerMin, m, "")
	if minItems == 0 {
		result = "(" + result + ")?"
	}
	return result
}

// converter is common_chat_schema_converter.
type converter struct {
	dotall       bool
	rules        map[string]string
	refsResolved map[string]bool
	errors       []string
	warnings     []string
}

func newConverter(dotall bool) *converter {
	return &converter{dotall: dotall, rules: map[string]string{"space": spaceRule}, refsResolved: map[string]bool{}}
}

func (c *converter) addRule(name, rule string) string {
	esc := replaceNonRuleChars(name)
	if r, ok := c.rules[esc]; !ok || r == rule {
		c.rules[esc] = rule
		return esc
	}
	i := 0
	for {
		r, ok := c.rules[esc+strconv.Itoa(i)]
		if !ok || r == rule {
			break
		}
		i++
	}
	key := esc + strconv.Itoa(i)
	c.rules[key] = rule
	return key
}

func (c *converter) unionRule(name string, alts []*Schema) string {
	rules := make([]string, 0, len(alts))
	for i, a := range alts {
		sep := "-"
		if name == "" {
			sep = "alternative-"
		}
		rules = append(rules, c.visit(a, name+sep+strconv.Itoa(i)))
	}
	return strings.Join(rules, " | ")
}

type unsupportedPattern struct{ msg string }
type invalidPattern struct{ msg string }

func (c *converter) visitPattern(pattern, name string) (out string) {
	snapshot := maps.Clone(c.rules)
	defer func() {
		if v := recover(); v != nil {
			switch e := v.(type) {
			case unsupportedPattern:
				c.rules = snapshot
				c.warnings = append(c.warnings, "pattern "+pattern+" is not supported ("+e.msg+"), accepting any string")
				out = c.addRule(name, c.addPrimitive("string", primitiveRules["string"]))
			case invalidPattern:
				c.rules = snapshot
				c.errors = append(c.errors, "Invalid pattern "+pattern+": "+e.msg)
				out = ""
			default:
				panic(v)
			}
		}
	}()
	return c.patternToRule(pattern, name)
}

const maxPatternDepth = 100

func isNonLiteral(c byte) bool { return strings.IndexByte("|.()[]{}*+?^$", c) >= 0 }

type litOrRule struct {
	s       string
	literal bool
}

func toRule(ls litOrRule) string {
	if ls.literal {
		return `"` + ls.s + `"`
	}
	return ls.s
}

// stoi is std::stoi: leading space, sign, digits up to the first other
// byte; ok is false where it throws.
func stoi(s string) (int, bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] >= '\t' && s[i] <= '\r') {
		i++
	}
	j := i
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	k := j
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	if k == j {
		return 0, false
	}
	v, err := strconv.ParseInt(s[i:k], 10, 32)
	if err != nil {
		return 0, false
	}
	return int(v), true
}

func (c *converter) patternToRule(pattern, name string) string {
	if len(pattern) < 2 || pattern[0] != '^' || pattern[len(pattern)-1] != '$' {
		panic(unsupportedPattern{"not anchored with '^' and '$'"})
	}
	sub := pattern[1 : len(pattern)-1]
	subRuleIDs := map[string]string{}
	i, length, depth := 0, len(sub), 0

	var transform func() litOrRule
	transform = func() litOrRule {
		var seq []litOrRule
		getDot := func() string {
			rule := `[^\x0A\x0D]`
			if c.dotall {
				rule = `[\U00000000-\U0010FFFF]`
			}
			return c.addRule("dot", rule)
		}
		joinSeq := func() litOrRule {
			var ret []litOrRule
			literal := ""
			flush := func() {
				if literal != "" {
					ret = append(ret, litOrRule{literal, true})
					literal = ""
				}
			}
			for _, item := range seq {
				if item.literal {
					literal += item.s
				} else {
					flush()
					ret = append(ret, item)
				}
			}
			flush()
			results := make([]string, len(ret))
			for k, item := range ret {
				results[k] = toRule(item)
			}
			return litOrRule{strings.Join(results, " "), false}
		}
		for i < length {
			ch := sub[i]
			switch {
			case ch == '.':
				seq = append(seq, litOrRule{getDot(), false})
				i++
			case ch == '(':
				i++
				if i < length && sub[i] == '?' {
					if i+1 < length && sub[i+1] == ':' {
						i += 2
					} else {
						panic(unsupportedPattern{"unsupported group syntax"})
					}
				}
				depth++
				if depth > maxPatternDepth {
					panic(unsupportedPattern{"pattern nesting too deep"})
				}
				seq = append(seq, litOrRule{"(" + toRule(transform()) + ")", false})
			case ch == ')':
				i++
				if depth == 0 {
					panic(invalidPattern{"unbalanced parentheses"})
				}
				depth--
				return joinSeq()
			case ch == '^' || ch == '$':
				panic(unsupportedPattern{"anchor inside the pattern"})
			case ch == '[':
				sq := "["
				i++
				for i < length && sub[i] != ']' {
					if sub[i] == '\\' {
						n := gbnfEscapeLength(sub, i)
						if n == 0 {
							panic(unsupportedPattern{"unsupported escape in character class: " + substr(sub, i, 2)})
						}
						sq += sub[i : i+n]
						i += n
					} else {
						sq += sub[i : i+1]
						i++
					}
				}
				if i >= length {
					panic(invalidPattern{"unterminated character class"})
				}
				sq += "]"
				i++
				seq = append(seq, litOrRule{sq, false})
			case ch == '|':
				seq = append(seq, litOrRule{"|", false})
				i++
			case ch == '*' || ch == '+' || ch == '?':
				if len(seq) == 0 {
					panic(invalidPattern{"nothing to repeat"})
				}
				seq[len(seq)-1] = litOrRule{toRule(seq[len(seq)-1]) + string(ch), false}
				i++
			case ch == '{':
				curly := "{"
				i++
				for i < length && sub[i] != '}' {
					curly += sub[i : i+1]
					i++
				}
				if i >= length {
					panic(unsupportedPattern{"unterminated curly brackets"})
				}
				curly += "}"
				i++
				nums := strings.Split(curly[1:len(curly)-1], ",")
				minTimes, maxTimes := 0, math.MaxInt32
				if len(nums) != 1 && len(nums) != 2 {
					panic(unsupportedPattern{"wrong number of values in curly brackets"})
				}
				bad := false
				if len(nums) == 1 {
					v, ok := stoi(nums[0])
					bad = !ok
					minTimes, maxTimes = v, v
				} else {
					if nums[0] != "" {
						v, ok := stoi(nums[0])
						bad = !ok
						minTimes = v
					}
					if !bad && nums[1] != "" {
						v, ok := stoi(nums[1])
						bad = !ok
						maxTimes = v
					}
				}
				if bad {
					panic(unsupportedPattern{"invalid number in curly brackets"})
				}
				if len(seq) == 0 {
					panic(invalidPattern{"nothing to repeat"})
				}
				last := &seq[len(seq)-1]
				if !last.literal {
					id, ok := subRuleIDs[last.s]
					if !ok || id == "" {
						subRuleIDs[last.s] = ""
						id = c.addRule(name+"-"+strconv.Itoa(len(subRuleIDs)), last.s)
						subRuleIDs[last.s] = id
					}
					last.s = id
				}
				item := last.s
				if last.literal {
					item = `"` + last.s + `"`
				}
				*last = litOrRule{buildRepetition(item, minTimes, maxTimes, ""), false}
			default:
				literal := ""
				for i < length {
					if sub[i] == '\\' {
						if i == length-1 {
							panic(invalidPattern{"trailing backslash"})
						}
						next := sub[i+1]
						if strings.IndexByte("^$.[]()|{}*+?", next) >= 0 {
							i++
							literal += sub[i : i+1]
							i++
						} else {
							n := gbnfEscapeLength(sub, i)
							if n == 0 {
								panic(unsupportedPattern{"unsupported escape: " + substr(sub, i, 2)})
							}
							literal += sub[i : i+n]
							i += n
						}
					} else if sub[i] == '"' {
						literal += `\"`
						i++
					} else if !isNonLiteral(sub[i]) &&
						(i == length-1 || literal == "" || sub[i+1] == '.' || !isNonLiteral(sub[i+1])) {
						literal += sub[i : i+1]
						i++
					} else {
						break
					}
				}
				if literal == "" {
					panic(unsupportedPattern{"unsupported character: " + string([]byte{ch})})
				}
				seq = append(seq, litOrRule{literal, true})
			}
		}
		return joinSeq()
	}

	rule := toRule(transform())
	if depth != 0 {
		panic(invalidPattern{"unbalanced parentheses"})
	}
	return c.addRule(name, `"\"" (`+rule+`) "\""`)
}

// substr is std::string::substr(pos, n).
func substr(s string, pos, n int) string {
	return s[pos:min(len(s), pos+n)]
}

// notStrings is _not_strings: a rule for a JSON string that is none of
// strings.
func (c *converter) notStrings(strs []string) string {
	type node struct {
		children map[uint32]int
		pattern  bool
	}
	nodes := []*node{{children: map[uint32]int{}}}
	for _, w := range strs {
		cur := 0
		for pos := 0; pos < len(w); {
			r, n := utf8.DecodeRuneInString(w[pos:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			next, ok := nodes[cur].children[uint32(r)]
			if !ok {
				next = len(nodes)
				nodes = append(nodes, &node{children: map[uint32]int{}})
				nodes[cur].children[uint32(r)] = next
			}
			cur = next
			pos += n
		}
		nodes[cur].pattern = true
	}
	charRule := c.addPrimitive("char", primitiveRules["char"])
	var out strings.Builder
	out.WriteString(`["] ( `)
	var visit func(int)
	visit = func(idx int) {
		n := nodes[idx]
		cps := slices.Sorted(maps.Keys(n.children))
		rejects := ""
		for k, cp := range cps {
			ch := string(rune(cp))
			rejects += ch
			if k > 0 {
				out.WriteString(" | ")
			}
			out.WriteString("[" + ch + "]")
			child := n.children[cp]
			if len(nodes[child].children) > 0 {
				out.WriteString(" (")
				visit(child)
				out.WriteString(")")
			} else {
				out.WriteString(" " + charRule + "+")
			}
		}
		if len(cps) > 0 {
			out.WriteString(` | [^"` + rejects + `] ` + charRule + "*")
		}
	}
	visit(0)
	out.WriteString(" )")
	if !nodes[0].pattern {
		out.WriteString("?")
	}
	out.WriteString(` ["]`)
	return out.String()
}

func (c *converter) resolveRef(s *Schema) string {
	frag := s.Ref
	if i := strings.IndexByte(frag, '#'); i >= 0 {
		frag = frag[i+1:]
	}
	name := "ref" + replaceNonRuleChars(frag)
	if _, ok := c.rules[name]; !ok && !c.refsResolved[s.Ref] {
		if s.Target == nil {
			c.errors = append(c.errors, "Unresolved $ref "+s.Ref)
			return ""
		}
		c.refsResolved[s.Ref] = true
		name = c.visit(s.Target, name)
		delete(c.refsResolved, s.Ref)
	}
	return name
}

type namedSchema struct {
	name   string
	schema *Schema
}

func (c *converter) objectRule(props []namedSchema, required map[string]bool, name string, additional *Schema) string {
	var requiredProps, optionalProps, propNames []string
	kv := map[string]string{}
	dash := "-"
	if name == "" {
		dash = ""
	}
	for _, p := range props {
		ruleName := c.visit(p.schema, name+dash+p.name)
		kv[p.name] = c.addRule(name+dash+p.name+"-kv",
			FormatLiteral((&JSON{kind: jsonString, s: p.name}).Dump())+` space ":" space `+ruleName)
		if required[p.name] {
			requiredProps = append(requiredProps, p.name)
		} else {
			optionalProps = append(optionalProps, p.name)
		}
		propNames = append(propNames, p.name)
	}
	if additional != nil {
		subName := name + dash + "additional"
		var valueRule string
		if additional.Kind != KindAny {
			valueRule = c.visit(additional, subName+"-value")
		} else {
			valueRule = c.addPrimitive("value", primitiveRules["value"])
		}
		var keyRule string
		if len(propNames) == 0 {
			keyRule = c.addPrimitive("string", primitiveRules["string"])
		} else {
			keyRule = c.addRule(subName+"-k", c.notStrings(propNames))
		}
		kv["*"] = c.addRule(subName+"-kv", keyRule+` ":" space `+valueRule)
		optionalProps = append(optionalProps, "*")
	}
	if len(requiredProps) == 0 && len(optionalProps) == 0 {
		return `"{" space "}"`
	}
	rule := `"{" space `
	for i, p := range requiredProps {
		if i > 0 {
			rule += ` "," space `
		}
		rule += kv[p]
	}
	if len(optionalProps) > 0 {
		rule += " ("
		if len(requiredProps) > 0 {
			rule += ` "," space ( `
		}
		var recursiveRefs func(ks []string, firstOptional bool) string
		recursiveRefs = func(ks []string, firstOptional bool) string {
			if len(ks) == 0 {
				return ""
			}
			k := ks[0]
			kvName := kv[k]
			commaRef := `( "," space ` + kvName + " )"
			var res string
			if firstOptional {
				if k == "*" {
					res = commaRef + "*"
				} else {
					res = commaRef + "?"
				}
			} else {
				res = kvName
				if k == "*" {
					res += " " + commaRef + "*"
				}
			}
			if len(ks) > 1 {
				res += " " + c.addRule(name+dash+k+"-rest", recursiveRefs(ks[1:], true))
			}
			return res
		}
		for i := range optionalProps {
			if i > 0 {
				rule += " | "
			}
			rule += recursiveRefs(optionalProps[i:], false)
		}
		if len(requiredProps) > 0 {
			rule += " )"
		}
		rule += " )?"
	}
	rule += ` space "}"`
	return rule
}

func (c *converter) addPrimitive(name string, rule builtinRule) string {
	n := c.addRule(name, rule.content)
	for _, dep := range rule.deps {
		r, ok := primitiveRules[dep]
		if !ok {
			if r, ok = stringFormatRules[dep]; !ok {
				c.errors = append(c.errors, "Rule "+dep+" not known")
				continue
			}
		}
		if _, ok := c.rules[dep]; !ok {
			c.addPrimitive(dep, r)
		}
	}
	return n
}

func constantRule(v *JSON) string { return FormatLiteral(v.Dump()) }

func (c *converter) visitPrimitive(ruleName, typ string) string {
	name := typ
	if ruleName == "root" {
		name = "root"
	}
	return c.addPrimitive(name, primitiveRules[typ])
}

// allOfDropped warns of what visitAllOf's object grammar leaves out (bankml's own warnings; the reference drops
// them without one): enum components without a value common to all, a component other than an object or a schema
// without constraints, and a component's required name that no component has a property for. merged are the
// properties visitAllOf collected.
func (c *converter) allOfDropped(s *Schema, merged []namedSchema) {
	allEnums := true
	for _, child := range s.Children {
		allEnums = allEnums && target(child).Kind == KindEnum
	}
	if allEnums {
		c.warnings = append(c.warnings, "allOf: no value is in every enum component, so the grammar generates {}")
		return
	}
	check := func(comp *Schema) {
		comp = target(comp)
		switch comp.Kind {
		case KindAny:
		case KindObject:
			for _, r := range comp.UnknownRequired {
				if !slices.ContainsFunc(merged, func(p namedSchema) bool { return p.name == r }) {
					c.warnings = append(c.warnings, "allOf: required property "+strconv.Quote(r)+
						" is in no component's properties, so the grammar never generates it")
				}
			}
		case KindEnum:
			c.warnings = append(c.warnings, "allOf: an enum component is dropped (the converter intersects enums only when every component is one)")
		default:
			c.warnings = append(c.warnings, "allOf: a component of type "+comp.Kind.String()+
				" is dropped (the converter merges the properties of object components only)")
		}
	}
	for _, child := range s.Children {
		if child.Kind == KindAnyOf {
			for _, alt := range child.Children {
				check(alt)
			}
		} else {
			check(child)
		}
	}
}

// target follows a $ref to the node it names (the node itself when it is no $ref or an unresolved one).
func target(s *Schema) *Schema {
	for seen := 0; s.Kind == KindRef && s.Target != nil && seen < 64; seen++ {
		s = s.Target
	}
	return s
}

func (c *converter) visitAllOf(s *Schema, name, ruleName string) string {
	required := map[string]bool{}
	var props []namedSchema
	enumValues := map[string]int{}
	var add func(comp *Schema, isRequired bool)
	add = func(comp *Schema, isRequired bool) {
		switch comp.Kind {
		case KindRef:
			if comp.Target != nil {
				add(comp.Target, isRequired)
			}
		case KindObject:
			for _, p := range comp.Properties {
				props = append(props, namedSchema{p.Name, p.Schema})
				if isRequired {
					required[p.Name] = true
				}
			}
		case KindEnum:
			for _, v := range comp.Values {
				enumValues[constantRule(v)]++
			}
		}
	}
	for _, child := range s.Children {
		if child.Kind == KindAnyOf {
			for _, alt := range child.Children {
				add(alt, false)
			}
		} else {
			add(child, true)
		}
	}
	if len(enumValues) > 0 {
		keys := make([]string, 0, len(enumValues))
		for k := range enumValues {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var inter []string
		for _, k := range keys {
			if enumValues[k] == len(s.Children) {
				inter = append(inter, k)
			}
		}
		if len(inter) > 0 {
			return c.addRule(ruleName, "("+strings.Join(inter, " | ")+")")
		}
	}
	c.allOfDropped(s, props)
	return c.addRule(ruleName, c.objectRule(props, required, name, nil))
}

func (c *converter) visit(s *Schema, name string) string {
	ruleName := name
	switch {
	case isReservedName(name):
		ruleName = name + "-"
	case name == "":
		ruleName = "root"
	}
	subName := name
	if name != "" {
		subName += "-"
	}
	switch s.Kind {
	case KindRef:
		return c.addRule(ruleName, c.resolveRef(s))
	case KindAnyOf:
		return c.addRule(ruleName, c.unionRule(name, s.Children))
	case KindAllOf:
		return c.visitAllOf(s, name, ruleName)
	case KindConst:
		return c.addRule(ruleName, constantRule(s.Value))
	case KindEnum:
		vals := make([]string, len(s.Values))
		for i, v := range s.Values {
			vals[i] = constantRule(v)
		}
		return c.addRule(ruleName, "("+strings.Join(vals, " | ")+")")
	case KindObject:
		if len(s.Properties) == 0 && s.AdditionalProperties != nil && s.AdditionalProperties.Kind == KindAny {
			return c.addRule(ruleName, c.addPrimitive("object", primitiveRules["object"]))
		}
		if s.AdditionalProperties == nil {
			for _, r := range s.UnknownRequired {
				c.warnings = append(c.warnings, "required property "+strconv.Quote(r)+
					" is not in properties and additionalProperties allows no other, so the grammar never generates it")
			}
		}
		var props []namedSchema
		required := map[string]bool{}
		for _, p := range s.Properties {
			props = append(props, namedSchema{p.Name, p.Schema})
			if p.Required {
				required[p.Name] = true
			}
		}
		return c.addRule(ruleName, c.objectRule(props, required, name, s.AdditionalProperties))
	case KindTuple:
		rule := `"[" space `
		for i, it := range s.TupleItems {
			if i > 0 {
				rule += ` "," space `
			}
			rule += c.visit(it, subName+"tuple-"+strconv.Itoa(i))
		}
		rule += ` space "]"`
		return c.addRule(ruleName, rule)
	case KindArray:
		if s.Items.Kind == KindAny && s.MinItems == 0 && s.MaxItems < 0 {
			return c.visitPrimitive(ruleName, "array")
		}
		item := c.visit(s.Items, subName+"item")
		maxItems := s.MaxItems
		if maxItems < 0 {
			maxItems = math.MaxInt32
		}
		return c.addRule(ruleName, `"[" space `+buildRepetition(item, s.MinItems, maxItems, `"," space`)+` space "]"`)
	case KindString:
		if s.Pattern != "" {
			return c.visitPattern(s.Pattern, ruleName)
		}
		if s.Format == FormatUUID {
			return c.visitPrimitive(ruleName, "uuid")
		}
		if s.Format != FormatNone {
			prim := "date-time"
			switch s.Format {
			case FormatDate:
				prim = "date"
			case FormatTime:
				prim = "time"
			}
			prim += "-string"
			return c.addRule(ruleName, c.addPrimitive(prim, stringFormatRules[prim]))
		}
		if s.MinLength > 0 || s.MaxLength >= 0 {
			charRule := c.addPrimitive("char", primitiveRules["char"])
			maxLen := s.MaxLength
			if maxLen < 0 {
				maxLen = math.MaxInt32
			}
			return c.addRule(ruleName, `"\"" `+buildRepetition(charRule, s.MinLength, maxLen, "")+` "\""`)
		}
		return c.visitPrimitive(ruleName, "string")
	case KindInteger:
		if s.Minimum == math.MinInt64 && s.Maximum == math.MaxInt64 {
			return c.visitPrimitive(ruleName, "integer")
		}
		var out strings.Builder
		out.WriteString("(")
		if err := buildMinMaxInt(s.Minimum, s.Maximum, &out, 16, true); err != nil {
			panic(schemaFailure{err.Error()})
		}
		out.WriteString(")")
		return c.addRule(ruleName, out.String())
	case KindNumber:
		return c.visitPrimitive(ruleName, "number")
	case KindBoolean:
		return c.visitPrimitive(ruleName, "boolean")
	case KindNull:
		return c.visitPrimitive(ruleName, "null")
	case KindAny:
		return c.addRule(ruleName, c.addPrimitive("value", primitiveRules["value"]))
	}
	return ""
}

const conversionFailed = "JSON schema conversion failed:\n"

// checkErrors is check_errors: the errors gathered, as one *SchemaError.
// Warnings (patterns the converter cannot express, which then accept any
// string) are kept in c.warnings; the reference prints them to stderr.
func (c *converter) checkErrors() error {
	if len(c.errors) > 0 {
		return &SchemaError{Msg: conversionFailed + strings.Join(c.errors, "\n")}
	}
	return nil
}

func (c *converter) format() string {
	keys := slices.Sorted(maps.Keys(c.rules))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteString(" ::= ")
		b.WriteString(c.rules[k])
		b.WriteByte('\n')
	}
	return b.String()
}

// run calls f, turning a failure of the integer range builder (the one
// std::runtime_error the converter can throw) into its error.
func (c *converter) run(f func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			sf, ok := v.(schemaFailure)
			if !ok {
				panic(v)
			}
			err = errors.New(sf.msg)
		}
	}()
	f()
	return nil
}

// FromJSONSchema converts a JSON schema to GBNF as llama.cpp's
// json_schema_to_grammar(schema, force_gbnf) does
// (common/json-schema-to-grammar.cpp), byte for byte: rules sorted by name,
// one per line. forceGBNF is accepted for the signature's sake: the
// reference's libraries are built without llguidance, so the result is
// GBNF either way. Errors: a *SchemaError with the reference's message
// ("JSON schema conversion failed:\n..."), or a JSON syntax error.
func FromJSONSchema(schema []byte, forceGBNF bool) (string, error) {
	_ = forceGBNF
	return FromJSONSchemaWarn(schema, nil)
}

// FromJSONSchemaWarn is FromJSONSchema that also appends the converter's
// warnings to *warnings (when not nil): the patterns it cannot express, for
// which the grammar accepts any string (the reference prints them and goes
// on; a caller that must not loosen a constraint refuses the schema).
func FromJSONSchemaWarn(schema []byte, warnings *[]string) (string, error) {
	j, err := ParseJSON(schema)
	if err != nil {
		return "", err
	}
	return fromJSON(j, warnings)
}

// FromJSON is FromJSONSchema on a parsed value.
func FromJSON(j *JSON) (string, error) { return fromJSON(j, nil) }

func fromJSON(j *JSON, warnings *[]string) (string, error) {
	doc, err := SchemaFromJSON(j)
	if err != nil {
		return "", &SchemaError{Msg: conversionFailed + err.(*SchemaError).Msg}
	}
	g, runtimeErr, err := convertDocument(doc, warnings)
	if runtimeErr != nil {
		return "", &SchemaError{Msg: conversionFailed + runtimeErr.Error()}
	}
	return g, err
}

// FromSchemaDocument is json_schema_to_grammar(const
// common_chat_schema_document &): the grammar of an already parsed schema.
func FromSchemaDocument(doc *SchemaDocument) (string, error) {
	g, runtimeErr, err := convertDocument(doc, nil)
	if runtimeErr != nil {
		return "", &SchemaError{Msg: runtimeErr.Error()}
	}
	return g, err
}

// convertDocument converts doc; runtimeErr is the std::runtime_error the
// converter may throw (which json_schema_to_grammar(json) wraps), err the
// conversion's own errors.
func convertDocument(doc *SchemaDocument, warnings *[]string) (g string, runtimeErr, err error) {
	c := newConverter(false)
	if err := c.run(func() { c.visit(doc.Root, "") }); err != nil {
		return "", err, nil
	}
	if err := c.checkErrors(); err != nil {
		return "", nil, err
	}
	if warnings != nil {
		*warnings = append(*warnings, c.warnings...)
	}
	return c.format(), nil, nil
}

// BuildOptions are common_grammar_options.
type BuildOptions struct {
	// DotAll makes '.' in patterns match any code point, line breaks
	// included.
	DotAll bool

	// Warnings, when set, receives the converter's warnings: the patterns
	// it cannot express, for which the grammar accepts any string (the
	// reference prints them to stderr and goes on). A caller that must not
	// loosen a constraint refuses the schema when there are any.
	Warnings *[]string
}

// Builder is common_grammar_builder: it adds rules and schemas to the
// grammar Build makes, as common/chat.cpp's parsers do for tool calls.
type Builder struct{ c *converter }

// AddRule adds rule under name (runs of characters outside [a-zA-Z0-9-]
// become '-'; a name taken by another rule gets a number) and returns the
// name it was given.
func (b *Builder) AddRule(name, rule string) string { return b.c.addRule(name, rule) }

// AddSchema adds the rules of schema (a node of a SchemaDocument) under
// name ("root" is the start rule) and returns the name of its rule.
func (b *Builder) AddSchema(name string, s *Schema) string {
	if name == "root" {
		name = ""
	}
	return b.c.visit(s, name)
}

// Build is build_grammar: cb adds rules through the Builder; the result is
// the grammar text with the "space" rule and every rule added, sorted by
// name. Errors are a *SchemaError (an invalid pattern or an unresolved $ref
// in a schema added).
func Build(cb func(b *Builder), opts BuildOptions) (string, error) {
	c := newConverter(opts.DotAll)
	if err := c.run(func() { cb(&Builder{c}) }); err != nil {
		return "", &SchemaError{Msg: err.Error()}
	}
	if err := c.checkErrors(); err != nil {
		return "", err
	}
	if opts.Warnings != nil {
		*opts.Warnings = append(*opts.Warnings, c.warnings...)
	}
	return c.format(), nil
}
