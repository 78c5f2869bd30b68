package peg

import (
	"slices"
	"strconv"
	"strings"
)

// GrammarBuilder is what BuildGrammar writes to: common_grammar_builder (common/json-schema-to-grammar.h), the
// rule set of json_schema_to_grammar's converter. AddRule adds a rule (renamed when the name is taken by another
// body) and returns its name; AddSchema converts a schema node into rules named after name and returns the
// rule to reference; Literal is gbnf_format_literal.
type GrammarBuilder interface {
	AddRule(name, body string) string
	AddSchema(name string, s Schema) string
	Literal(s string) string
}

// gbnfEscapeCharClass is gbnf_escape_char_class.
func gbnfEscapeCharClass(c uint32) string {
	switch c {
	case '-', ']', '[', '\\':
		return "\\" + string(rune(c))
	case '\n':
		return `\n`
	case '\t':
		return `\t`
	case '\r':
		return `\r`
	}
	if c >= 0x20 && c <= 0x7e {
		return string(rune(c))
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	switch {
	case c <= 0xff:
		b.WriteString(`\x`)
		b.WriteByte(hex[c>>4&0xf])
		b.WriteByte(hex[c&0xf])
	case c <= 0xffff:
		b.WriteString(`\u`)
		for i := 3; i >= 0; i-- {
			b.WriteByte(hex[c>>(4*i)&0xf])
		}
	default:
		b.WriteString(`\U`)
		for i := 7; i >= 0; i-- {
			b.WriteByte(hex[c>>(4*i)&0xf])
		}
	}
	return b.String()
}

func gbnfCharClass(chars []uint32, negate bool) string {
	var b strings.Builder
	if negate {
		b.WriteString("[^")
	} else {
		b.WriteString("[")
	}
	for _, c := range chars {
		b.WriteString(gbnfEscapeCharClass(c))
	}
	b.WriteString("]")
	return b.String()
}

type acRuleFunc func(completing []uint32, buckets map[int][]uint32, bucketOrder []int, specific []uint32, stateName func(int) string) string

// gbnfACGrammar is gbnf_ac_grammar: one rule per non-terminal state of the Aho-Corasick automaton of strings,
// named prefix, prefix-01, prefix-02, ...; it returns the start state's name.
func gbnfACGrammar(gb GrammarBuilder, prefix string, strs []string, build acRuleFunc) string {
	ac := newAhoCorasick(strs)
	stateName := func(s int) string {
		if s == 0 {
			return prefix
		}
		num := strconv.Itoa(s)
		if len(num) == 1 {
			num = "0" + num
		}
		return prefix + "-" + num
	}
	for q := 0; q < ac.numStates(); q++ {
		if ac.terminal(q) {
			continue
		}
		buckets := map[int][]uint32{}
		var completing, specific []uint32
		for _, c := range ac.alphabet {
			d := ac.next(q, c)
			switch {
			case ac.terminal(d):
				completing = append(completing, c)
				specific = append(specific, c)
			case d != 0:
				buckets[d] = append(buckets[d], c)
				specific = append(specific, c)
			}
		}
		order := make([]int, 0, len(buckets))
		for d := range buckets {
			order = append(order, d)
		}
		slices.Sort(order) // std::map order
		gb.AddRule(stateName(q), build(completing, buckets, order, specific, stateName))
	}
	if ac.terminal(0) {
		gb.AddRule(prefix, "|")
	}
	return stateName(0)
}

// gbnfExcludingGrammar matches strings holding none of strs (gbnf_excluding_grammar).
func gbnfExcludingGrammar(gb GrammarBuilder, prefix string, strs []string) string {
	return gbnfACGrammar(gb, prefix, strs, func(_ []uint32, buckets map[int][]uint32, order []int, specific []uint32, name func(int) string) string {
		rhs := "|"
		for _, d := range order {
			rhs += " " + gbnfCharClass(buckets[d], false) + " " + name(d) + " |"
		}
		return rhs + " " + gbnfCharClass(specific, true) + " " + name(0)
	})
}

// gbnfIncludingGrammar matches everything up to and including the first of strs (gbnf_including_grammar).
func gbnfIncludingGrammar(gb GrammarBuilder, prefix string, strs []string) string {
	return gbnfACGrammar(gb, prefix, strs, func(completing []uint32, buckets map[int][]uint32, order []int, specific []uint32, name func(int) string) string {
		var alts []string
		if len(completing) > 0 {
			alts = append(alts, gbnfCharClass(completing, false))
		}
		for _, d := range order {
			alts = append(alts, gbnfCharClass(buckets[d], false)+" "+name(d))
		}
		alts = append(alts, gbnfCharClass(specific, true)+" "+name(0))
		return strings.Join(alts, " | ")
	})
}

// reachableRules is collect_reachable_rules: the rule names reachable from id.
func (a *Arena) reachableRules(id ID, out map[string]bool) {
	visited := map[string]bool{}
	var visit func(id ID)
	visit = func(id ID) {
		p := &a.parsers[id]
		switch p.kind {
		case KSequence, KChoice:
			for _, c := range p.children {
				visit(c)
			}
		case KRepetition, KAnd, KNot, KTag, KAtomic, KGBNF, KAC, KSchema:
			visit(p.child)
		case KRule:
			if !visited[p.text] {
				visited[p.text] = true
				out[p.text] = true
				visit(p.child)
			}
		case KRef:
			if r, err := a.rule(p.text); err == nil {
				visit(r)
			}
		}
	}
	visit(id)
}

func repetitionSuffix(s string, min, max int) string {
	switch {
	case min == 0 && max == 1:
		return s + "?"
	case min == 0 && max == -1:
		return s + "*"
	case min == 1 && max == -1:
		return s + "+"
	case max == -1:
		return s + "{" + strconv.Itoa(min) + ",}"
	case min == max:
		if min == 1 {
			return s
		}
		return s + "{" + strconv.Itoa(min) + "}"
	}
	return s + "{" + strconv.Itoa(min) + "," + strconv.Itoa(max) + "}"
}

// BuildGrammar is common_peg_arena::build_grammar: a GBNF rule for every rule reachable from the root (lazy:
// from the trigger rules), then "root" (lazy: the trigger rules' names, sorted, as alternatives). The reference
// walks its rules in hash-map order and bankml in name order; the text is the same unless two rule bodies
// compete for one name in the builder.
func (a *Arena) BuildGrammar(gb GrammarBuilder, lazy bool) {
	delegates := func(p *parser) bool { return p.schema == nil || (p.raw && p.schema.MayBeString()) }
	effective := func(id ID) *parser {
		for {
			p := &a.parsers[id]
			switch {
			case p.kind == KTag || p.kind == KAtomic:
				id = p.child
			case p.kind == KSchema && delegates(p):
				id = p.child
			default:
				return p
			}
		}
	}
	var toGBNF func(id ID) string
	toGBNF = func(id ID) string {
		p := &a.parsers[id]
		switch p.kind {
		case KEpsilon, KStart, KEnd, KAnd, KNot:
			return ""
		case KLiteral:
			return gb.Literal(p.text)
		case KSequence:
			var s strings.Builder
			for _, c := range p.children {
				g := toGBNF(c)
				if g == "" {
					continue
				}
				if s.Len() > 0 {
					s.WriteByte(' ')
				}
				if k := effective(c).kind; k == KChoice || k == KSequence {
					s.WriteString("(" + g + ")")
				} else {
					s.WriteString(g)
				}
			}
			return s.String()
		case KChoice:
			var s strings.Builder
			for i, c := range p.children {
				if i > 0 {
					s.WriteString(" | ")
				}
				g := toGBNF(c)
				if effective(c).kind == KChoice {
					s.WriteString("(" + g + ")")
				} else {
					s.WriteString(g)
				}
			}
			return s.String()
		case KRepetition:
			g := toGBNF(p.child)
			if k := effective(p.child).kind; k == KChoice || k == KSequence {
				g = "(" + g + ")"
			}
			return repetitionSuffix(g, p.min, p.max)
		case KAny:
			return "."
		case KSpace:
			return "space"
		case KChars:
			return repetitionSuffix(p.text, p.min, p.max)
		case KString:
			d := string(p.delim)
			return `( [^` + d + `\\] | "\\" ( [` + d + `\\/ bfnrt] | "u" [0-9a-fA-F]{4} ) )*`
		case KUntil:
			if len(p.delims) == 0 {
				return ".*"
			}
			return gbnfExcludingGrammar(gb, "until-"+strconv.Itoa(int(id)), p.delims)
		case KSchema:
			if delegates(p) {
				return toGBNF(p.child)
			}
			return gb.AddSchema(p.text, p.schema)
		case KRule, KRef:
			return p.text
		case KTag, KAtomic:
			return toGBNF(p.child)
		case KGBNF:
			return p.text
		case KAC:
			return gbnfIncludingGrammar(gb, "ac-"+strconv.Itoa(int(id)), p.delims)
		}
		panic("peg: unknown parser kind")
	}

	reachable := map[string]bool{}
	names := make([]string, 0, len(a.rules))
	for name := range a.rules {
		names = append(names, name)
	}
	slices.Sort(names)
	if lazy {
		for _, name := range names {
			id := a.rules[name]
			if p := &a.parsers[id]; p.kind == KRule && p.trigger {
				reachable[name] = true
				a.reachableRules(id, reachable)
			}
		}
	} else if a.root != Invalid {
		a.reachableRules(a.root, reachable)
	}
	for _, name := range names {
		if !reachable[name] {
			continue
		}
		if p := &a.parsers[a.rules[name]]; p.kind == KRule {
			gb.AddRule(p.text, toGBNF(p.child))
		}
	}
	if lazy {
		var triggers []string
		for _, name := range names {
			if p := &a.parsers[a.rules[name]]; p.kind == KRule && p.trigger {
				triggers = append(triggers, p.text)
			}
		}
		slices.Sort(triggers)
		gb.AddRule("root", strings.Join(triggers, " | "))
	} else if a.root != Invalid {
		gb.AddRule("root", toGBNF(a.root))
	}
}
