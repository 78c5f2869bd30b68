package grammar

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ElemType is llama_gretype: the kind of one grammar element.
type ElemType uint8

// The element types, with llama_gretype's values.
const (
	End          ElemType = iota // LLAMA_GRETYPE_END: end of a rule definition
	Alt                          // LLAMA_GRETYPE_ALT: start of an alternate definition
	RuleRef                      // LLAMA_GRETYPE_RULE_REF: reference to a rule (Value: rule id)
	Char                         // LLAMA_GRETYPE_CHAR: a code point (Value)
	CharNot                      // LLAMA_GRETYPE_CHAR_NOT: inverse char(s), [^a]
	CharRngUpper                 // LLAMA_GRETYPE_CHAR_RNG_UPPER: upper bound of the range the previous element starts
	CharAlt                      // LLAMA_GRETYPE_CHAR_ALT: an alternate char of the class ([ab])
	CharAny                      // LLAMA_GRETYPE_CHAR_ANY: any character (.)
	Token                        // LLAMA_GRETYPE_TOKEN: a token terminal, <[id]> (Value: token id)
	TokenNot                     // LLAMA_GRETYPE_TOKEN_NOT: any token but one, !<[id]>
)

// Element is llama_grammar_element: a type and a code point, rule id or
// token id.
type Element struct {
	Type  ElemType
	Value uint32
}

// maxRepetitionThreshold is MAX_REPETITION_THRESHOLD (src/llama-grammar.cpp).
const maxRepetitionThreshold = 2000

// ParseError is a grammar text llama_grammar_parser::parse refuses; Msg is
// the text of the exception it catches (what()), e.g. "expecting name at
// ...", "Undefined rule identifier 'foo'".
type ParseError struct{ Msg string }

func (e *ParseError) Error() string { return "error parsing grammar: " + e.Msg }

// Rules are a parsed grammar: llama_grammar_parser's symbol ids and rules.
type Rules struct {
	// Symbols maps rule names, written and generated ("root_3"), to rule ids.
	Symbols map[string]uint32
	// Rules holds each rule's alternates, separated by Alt and closed by End.
	Rules [][]Element
}

// parser is llama_grammar_parser. src is the grammar text; positions are
// byte offsets into it, and reading at or past its end gives 0 as the C
// string's terminator does.
type parser struct {
	src   string
	vocab Tokens
	Rules
}

func (p *parser) at(i int) byte {
	if i < len(p.src) {
		return p.src[i]
	}
	return 0
}

// rest is the C string from i, as the reference's error messages quote it.
func (p *parser) rest(i int) string {
	if i >= len(p.src) {
		return ""
	}
	return p.src[i:]
}

type parseFailure struct{ msg string }

func (p *parser) fail(format string, args ...any) {
	panic(parseFailure{fmt.Sprintf(format, args...)})
}

// Parse parses GBNF text as llama_grammar_parser::parse does
// (src/llama-grammar.cpp), with the same rules, the same generated rule
// names and ids for groups and repetitions, and the same error messages
// (a *ParseError). Token terminals written as text (<think>) are
// tokenized with vocab (tokenize with parse_special, exactly one token);
// vocab may be nil, which refuses them ("no vocab to parse token at ...")
// as the reference does without a vocabulary. The text ends at its first
// NUL byte, as the C string the reference reads does.
//
// Deliberate difference: a repetition {m,n} with n < m, on which the
// reference loops without end (its count of optional copies wraps around),
// is refused with a *ParseError.
func Parse(text string, vocab Tokens) (r *Rules, err error) {
	if i := strings.IndexByte(text, 0); i >= 0 {
		text = text[:i]
	}
	p := &parser{src: text, vocab: vocab, Rules: Rules{Symbols: map[string]uint32{}}}
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(parseFailure)
			if !ok {
				panic(v)
			}
			r, err = nil, &ParseError{Msg: f.msg}
		}
	}()
	pos := p.parseSpace(0, true)
	for p.at(pos) != 0 {
		pos = p.parseRule(pos)
	}
	// Validate that every rule is defined.
	for _, rule := range p.Rules.Rules {
		if len(rule) == 0 {
			p.fail("Undefined rule")
		}
		for _, e := range rule {
			if e.Type == RuleRef && (int(e.Value) >= len(p.Rules.Rules) || len(p.Rules.Rules[e.Value]) == 0) {
				// std::map iterates names in order: the first name with that id.
				names := make([]string, 0, len(p.Symbols))
				for k := range p.Symbols {
					names = append(names, k)
				}
				sort.Strings(names)
				for _, k := range names {
					if p.Symbols[k] == e.Value {
						p.fail("Undefined rule identifier '%s'", k)
					}
				}
			}
		}
	}
	return &p.Rules, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isWordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || isDigit(c)
}

func (p *parser) parseSpace(pos int, newlineOK bool) int {
	for {
		c := p.at(pos)
		if !(c == ' ' || c == '\t' || c == '#' || newlineOK && (c == '\r' || c == '\n')) {
			return pos
		}
		if c == '#' {
			for p.at(pos) != 0 && p.at(pos) != '\r' && p.at(pos) != '\n' {
				pos++
			}
		} else {
			pos++
		}
	}
}

func (p *parser) parseName(pos int) int {
	start := pos
	for isWordChar(p.at(pos)) {
		pos++
	}
	if pos == start {
		p.fail("expecting name at %s", p.rest(start))
	}
	return pos
}

func (p *parser) parseInt(pos int) int {
	start := pos
	for isDigit(p.at(pos)) {
		pos++
	}
	if pos == start {
		p.fail("expecting integer at %s", p.rest(start))
	}
	return pos
}

// parseHex reads size hex digits from pos (parse_hex).
func (p *parser) parseHex(pos, size int) (uint32, int) {
	start, end := pos, pos+size
	var v uint32
	for ; pos < end && p.at(pos) != 0; pos++ {
		v <<= 4
		c := p.at(pos)
		switch {
		case 'a' <= c && c <= 'f':
			v += uint32(c-'a') + 10
		case 'A' <= c && c <= 'F':
			v += uint32(c-'A') + 10
		case '0' <= c && c <= '9':
			v += uint32(c - '0')
		default:
			goto done
		}
	}
done:
	if pos != end {
		p.fail("expecting %d hex chars at %s", size, p.rest(start))
	}
	return v, pos
}

// decodeUTF8At is the parser's decode_utf8: it assumes valid UTF-8 and only
// checks for the end of the text.
func (p *parser) decodeUTF8At(pos int) (uint32, int) {
	lookup := [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}
	first := p.at(pos)
	n := lookup[first>>4]
	mask := byte(1<<(8-n)) - 1
	v := uint32(first & mask)
	end := pos + n
	pos++
	for ; pos < end && p.at(pos) != 0; pos++ {
		v = v<<6 + uint32(p.at(pos)&0x3F)
	}
	return v, pos
}

func (p *parser) parseChar(pos int) (uint32, int) {
	if p.at(pos) == '\\' {
		switch c := p.at(pos + 1); c {
		case 'x':
			return p.parseHex(pos+2, 2)
		case 'u':
			return p.parseHex(pos+2, 4)
		case 'U':
			return p.parseHex(pos+2, 8)
		case 't':
			return '\t', pos + 2
		case 'r':
			return '\r', pos + 2
		case 'n':
			return '\n', pos + 2
		case '\\', '"', '[', ']', '-':
			return uint32(c), pos + 2
		default:
			p.fail("unknown escape at %s", p.rest(pos))
		}
	} else if p.at(pos) != 0 {
		return p.decodeUTF8At(pos)
	}
	p.fail("unexpected end of input")
	return 0, 0
}

// parseToken reads <[id]> or <text> (parse_token).
func (p *parser) parseToken(src int) (uint32, int) {
	pos := src
	if p.at(pos) != '<' {
		p.fail("expecting '<' at %s", p.rest(pos))
	}
	pos++
	if p.at(pos) == '[' {
		pos++
		end := p.parseInt(pos)
		// std::stoul: unsigned long (64 bits here), then truncated to uint32_t.
		v, err := strconv.ParseUint(p.src[pos:end], 10, 64)
		if err != nil {
			p.fail("stoul")
		}
		pos = end
		if p.at(pos) != ']' {
			p.fail("expecting ']' at %s", p.rest(pos))
		}
		pos++
		if p.at(pos) != '>' {
			p.fail("expecting '>' at %s", p.rest(pos))
		}
		pos++
		return uint32(v), pos
	}
	if p.vocab == nil {
		p.fail("no vocab to parse token at %s", p.rest(src))
	}
	for p.at(pos) != 0 && p.at(pos) != '>' {
		pos++
	}
	if p.at(pos) != '>' {
		p.fail("expecting '>' at %s", p.rest(pos))
	}
	pos++
	toks := p.vocab.Tokenize(p.src[src:pos], false, true)
	if len(toks) != 1 {
		p.fail("invalid token '%s'", p.src[src:pos])
	}
	return uint32(toks[0]), pos
}

func (p *parser) getSymbolID(name string) uint32 {
	if id, ok := p.Symbols[name]; ok {
		return id
	}
	id := uint32(len(p.Symbols))
	p.Symbols[name] = id
	return id
}

func (p *parser) generateSymbolID(base string) uint32 {
	id := uint32(len(p.Symbols))
	p.Symbols[base+"_"+strconv.FormatUint(uint64(id), 10)] = id
	return id
}

func (p *parser) addRule(id uint32, rule []Element) {
	for uint32(len(p.Rules.Rules)) <= id {
		p.Rules.Rules = append(p.Rules.Rules, nil)
	}
	p.Rules.Rules[id] = rule
}

func (p *parser) parseAlternates(pos int, name string, id uint32, nested bool) int {
	var rule []Element
	pos = p.parseSequence(pos, name, &rule, nested)
	for p.at(pos) == '|' {
		rule = append(rule, Element{Alt, 0})
		pos = p.parseSpace(pos+1, true)
		pos = p.parseSequence(pos, name, &rule, nested)
	}
	rule = append(rule, Element{End, 0})
	p.addRule(id, rule)
	return pos
}

const noMax = ^uint64(0)

func (p *parser) parseSequence(pos int, name string, rulep *[]Element, nested bool) int {
	lastSymStart := len(*rulep)
	nPrevRules := uint64(1)

	handleRepetitions := func(minTimes, maxTimes uint64) {
		rule := *rulep
		unbounded := maxTimes == noMax
		if lastSymStart == len(rule) {
			p.fail("expecting preceding item to */+/?/{ at %s", p.rest(pos))
		}
		prev := append([]Element(nil), rule[lastSymStart:]...)
		total := uint64(1)
		if !unbounded && maxTimes > 0 {
			total = maxTimes
		} else if minTimes > 0 {
			total = minTimes
		}
		if nPrevRules*total > maxRepetitionThreshold {
			p.fail("number of rules that are going to be repeated multiplied by the new repetition exceeds sane defaults, please reduce the number of repetitions or rule complexity")
		}
		if !unbounded && maxTimes < minTimes {
			p.fail("repetition {%d,%d}: the maximum is below the minimum", minTimes, maxTimes)
		}
		if minTimes == 0 {
			rule = rule[:lastSymStart]
		} else {
			for i := uint64(1); i < minTimes; i++ {
				rule = append(rule, prev...)
			}
		}
		var lastRec uint32
		nOpt := uint64(1)
		if !unbounded {
			nOpt = maxTimes - minTimes
		}
		for i := uint64(0); i < nOpt; i++ {
			rec := append([]Element(nil), prev...)
			recID := p.generateSymbolID(name)
			if i > 0 || unbounded {
				ref := lastRec
				if unbounded {
					ref = recID
				}
				rec = append(rec, Element{RuleRef, ref})
			}
			rec = append(rec, Element{Alt, 0}, Element{End, 0})
			p.addRule(recID, rec)
			lastRec = recID
		}
		if nOpt > 0 {
			rule = append(rule, Element{RuleRef, lastRec})
		}
		nPrevRules *= total
		*rulep = rule
	}

	for p.at(pos) != 0 {
		c := p.at(pos)
		switch {
		case c == '"': // literal string
			pos++
			lastSymStart = len(*rulep)
			nPrevRules = 1
			for p.at(pos) != '"' {
				if p.at(pos) == 0 {
					p.fail("unexpected end of input")
				}
				var ch uint32
				ch, pos = p.parseChar(pos)
				*rulep = append(*rulep, Element{Char, ch})
			}
			pos = p.parseSpace(pos+1, nested)
		case c == '[': // char range(s)
			pos++
			start := Char
			if p.at(pos) == '^' {
				pos++
				start = CharNot
			}
			lastSymStart = len(*rulep)
			nPrevRules = 1
			for p.at(pos) != ']' {
				if p.at(pos) == 0 {
					p.fail("unexpected end of input")
				}
				var ch uint32
				ch, pos = p.parseChar(pos)
				typ := start
				if lastSymStart < len(*rulep) {
					typ = CharAlt
				}
				*rulep = append(*rulep, Element{typ, ch})
				if p.at(pos) == '-' && p.at(pos+1) != ']' {
					if p.at(pos+1) == 0 {
						p.fail("unexpected end of input")
					}
					var hi uint32
					hi, pos = p.parseChar(pos + 1)
					*rulep = append(*rulep, Element{CharRngUpper, hi})
				}
			}
			pos = p.parseSpace(pos+1, nested)
		case c == '<' || c == '!': // token
			typ := Token
			if c == '!' {
				typ = TokenNot
				pos++
			}
			id, end := p.parseToken(pos)
			lastSymStart = len(*rulep)
			nPrevRules = 1
			*rulep = append(*rulep, Element{typ, id})
			pos = p.parseSpace(end, nested)
		case isWordChar(c): // rule reference
			end := p.parseName(pos)
			ref := p.getSymbolID(p.src[pos:end])
			pos = p.parseSpace(end, nested)
			lastSymStart = len(*rulep)
			nPrevRules = 1
			*rulep = append(*rulep, Element{RuleRef, ref})
		case c == '(': // grouping
			pos = p.parseSpace(pos+1, true)
			before := uint32(len(p.Symbols))
			sub := p.generateSymbolID(name)
			pos = p.parseAlternates(pos, name, sub, true)
			nPrevRules = uint64(max(1, uint32(len(p.Symbols))-before))
			lastSymStart = len(*rulep)
			*rulep = append(*rulep, Element{RuleRef, sub})
			if p.at(pos) != ')' {
				p.fail("expecting ')' at %s", p.rest(pos))
			}
			pos = p.parseSpace(pos+1, nested)
		case c == '.': // any char
			lastSymStart = len(*rulep)
			nPrevRules = 1
			*rulep = append(*rulep, Element{CharAny, 0})
			pos = p.parseSpace(pos+1, nested)
		case c == '*':
			pos = p.parseSpace(pos+1, nested)
			handleRepetitions(0, noMax)
		case c == '+':
			pos = p.parseSpace(pos+1, nested)
			handleRepetitions(1, noMax)
		case c == '?':
			pos = p.parseSpace(pos+1, nested)
			handleRepetitions(0, 1)
		case c == '{':
			pos = p.parseSpace(pos+1, nested)
			if !isDigit(p.at(pos)) {
				p.fail("expecting an int at %s", p.rest(pos))
			}
			end := p.parseInt(pos)
			minTimes := p.stoull(p.src[pos:end])
			pos = p.parseSpace(end, nested)
			maxTimes := noMax
			switch p.at(pos) {
			case '}':
				maxTimes = minTimes
				pos = p.parseSpace(pos+1, nested)
			case ',':
				pos = p.parseSpace(pos+1, nested)
				if isDigit(p.at(pos)) {
					end := p.parseInt(pos)
					maxTimes = p.stoull(p.src[pos:end])
					pos = p.parseSpace(end, nested)
				}
				if p.at(pos) != '}' {
					p.fail("expecting '}' at %s", p.rest(pos))
				}
				pos = p.parseSpace(pos+1, nested)
			default:
				p.fail("expecting ',' at %s", p.rest(pos))
			}
			if minTimes > maxRepetitionThreshold {
				p.fail("number of repetitions exceeds sane defaults, please reduce the number of repetitions")
			}
			if maxTimes != noMax && maxTimes > maxRepetitionThreshold {
				maxTimes = noMax
			}
			handleRepetitions(minTimes, maxTimes)
		default:
			return pos
		}
	}
	return pos
}

// stoull is std::stoull on a run of digits: out of range throws
// std::out_of_range, whose what() is "stoull".
func (p *parser) stoull(digits string) uint64 {
	v, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		p.fail("stoull")
	}
	return v
}

func (p *parser) parseRule(src int) int {
	nameEnd := p.parseName(src)
	pos := p.parseSpace(nameEnd, false)
	name := p.src[src:nameEnd]
	id := p.getSymbolID(name)
	if !(p.at(pos) == ':' && p.at(pos+1) == ':' && p.at(pos+2) == '=') {
		p.fail("expecting ::= at %s", p.rest(pos))
	}
	pos = p.parseSpace(pos+3, true)
	pos = p.parseAlternates(pos, name, id, false)
	switch p.at(pos) {
	case '\r':
		if p.at(pos+1) == '\n' {
			pos += 2
		} else {
			pos++
		}
	case '\n':
		pos++
	case 0:
	default:
		p.fail("expecting newline or end at %s", p.rest(pos))
	}
	return p.parseSpace(pos, true)
}
