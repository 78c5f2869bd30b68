package grammar

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON is a JSON value as llama.cpp's common_json holds it (nlohmann's
// ordered_json): objects keep their keys in the order they first appear (a
// repeated key keeps its first place and takes the last value), and
// numbers are signed integers, unsigned integers or doubles as nlohmann's
// parser reads them. The converter needs these distinctions: they decide
// how a const or enum value is written into the grammar (Dump).
type JSON struct {
	kind jsonKind
	b    bool
	i    int64
	u    uint64
	f    float64
	s    string
	arr  []*JSON
	keys []string
	vals []*JSON
}

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonInt
	jsonUint
	jsonFloat
	jsonString
	jsonArray
	jsonObject
)

// ParseJSON parses text as nlohmann::ordered_json::parse does: an integer
// without fraction or exponent is unsigned when it has no sign and fits 64
// bits, signed when negative and fitting, else a double; a number too large
// for a double, invalid UTF-8, unescaped control characters and trailing
// text are errors.
func ParseJSON(text []byte) (*JSON, error) {
	p := &jsonParser{s: string(text)}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, fmt.Errorf("grammar: JSON: unexpected %q at byte %d", p.s[p.i], p.i)
	}
	return v, nil
}

type jsonParser struct {
	s string
	i int
}

const maxJSONDepth = 10000

func (p *jsonParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("grammar: JSON at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *jsonParser) value(depth int) (*JSON, error) {
	if depth > maxJSONDepth {
		return nil, p.errorf("nested too deeply")
	}
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		o := &JSON{kind: jsonObject}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return o, nil
		}
		for {
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return nil, p.errorf("expecting a key")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, p.errorf("expecting ':'")
			}
			p.i++
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			o.set(k, v)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return o, nil
			}
			return nil, p.errorf("expecting ',' or '}'")
		}
	case c == '[':
		p.i++
		a := &JSON{kind: jsonArray, arr: []*JSON{}}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return a, nil
		}
		for {
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			a.arr = append(a.arr, v)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == ']' {
				p.i++
				return a, nil
			}
			return nil, p.errorf("expecting ',' or ']'")
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &JSON{kind: jsonString, s: s}, nil
	case c == 't' && strings.HasPrefix(p.s[p.i:], "true"):
		p.i += 4
		return &JSON{kind: jsonBool, b: true}, nil
	case c == 'f' && strings.HasPrefix(p.s[p.i:], "false"):
		p.i += 5
		return &JSON{kind: jsonBool}, nil
	case c == 'n' && strings.HasPrefix(p.s[p.i:], "null"):
		p.i += 4
		return &JSON{kind: jsonNull}, nil
	case c == '-' || isDigit(c):
		return p.number()
	}
	return nil, p.errorf("unexpected %q", p.s[p.i])
}

func (p *jsonParser) number() (*JSON, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
			n++
		}
		return n
	}
	intStart := p.i
	if n := digits(); n == 0 {
		return nil, p.errorf("invalid number")
	} else if n > 1 && p.s[intStart] == '0' {
		return nil, p.errorf("invalid number: leading zero")
	}
	isFloat := false
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
		isFloat = true
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
		isFloat = true
	}
	text := p.s[start:p.i]
	if !isFloat {
		if text[0] == '-' {
			if v, err := strconv.ParseInt(text, 10, 64); err == nil {
				return &JSON{kind: jsonInt, i: v}, nil
			}
		} else if v, err := strconv.ParseUint(text, 10, 64); err == nil {
			return &JSON{kind: jsonUint, u: v}, nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
		return nil, p.errorf("number overflow parsing '%s'", text)
	}
	return &JSON{kind: jsonFloat, f: f}, nil
}

func (p *jsonParser) str() (string, error) {
	p.i++ // '"'
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return "", p.errorf("unterminated string")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", p.errorf("unterminated string")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xDC00 || p.i+1 >= len(p.s) || p.s[p.i] != '\\' || p.s[p.i+1] != 'u' {
						return "", p.errorf("invalid surrogate pair")
					}
					p.i += 2
					r2, err := p.hex4()
					if err != nil {
						return "", err
					}
					if r2 < 0xDC00 || r2 > 0xDFFF {
						return "", p.errorf("invalid surrogate pair")
					}
					r = utf16.DecodeRune(r, r2)
				}
				b.WriteRune(r)
			default:
				return "", p.errorf("invalid escape")
			}
		case c < 0x20:
			return "", p.errorf("control character in a string")
		default:
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && n <= 1 {
				return "", p.errorf("invalid UTF-8")
			}
			b.WriteString(p.s[p.i : p.i+n])
			p.i += n
		}
	}
}

func (p *jsonParser) hex4() (rune, error) {
	if p.i+4 > len(p.s) {
		return 0, p.errorf("invalid \\u escape")
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, p.errorf("invalid \\u escape")
	}
	p.i += 4
	return rune(v), nil
}

// set puts key k to v: a new key goes last, an existing one keeps its place.
func (j *JSON) set(k string, v *JSON) {
	for i, key := range j.keys {
		if key == k {
			j.vals[i] = v
			return
		}
	}
	j.keys = append(j.keys, k)
	j.vals = append(j.vals, v)
}

// get returns the value of key k of an object, or nil.
func (j *JSON) get(k string) *JSON {
	if j == nil || j.kind != jsonObject {
		return nil
	}
	for i, key := range j.keys {
		if key == k {
			return j.vals[i]
		}
	}
	return nil
}

func (j *JSON) contains(k string) bool { return j.get(k) != nil }

func (j *JSON) isNull() bool          { return j == nil || j.kind == jsonNull }
func (j *JSON) isObject() bool        { return j != nil && j.kind == jsonObject }
func (j *JSON) isArray() bool         { return j != nil && j.kind == jsonArray }
func (j *JSON) isString() bool        { return j != nil && j.kind == jsonString }
func (j *JSON) isBool() bool          { return j != nil && j.kind == jsonBool }
func (j *JSON) isNumberInteger() bool { return j != nil && (j.kind == jsonInt || j.kind == jsonUint) }
func (j *JSON) isNumber() bool        { return j.isNumberInteger() || j != nil && j.kind == jsonFloat }

// int64 is get<int64_t>(): integers converted as C++ casts them.
func (j *JSON) int64() int64 {
	switch j.kind {
	case jsonInt:
		return j.i
	case jsonUint:
		return int64(j.u)
	case jsonFloat:
		return cvttsd2si(j.f)
	}
	return 0
}

// float64 is a number's value as a double.
func (j *JSON) float64() float64 {
	switch j.kind {
	case jsonInt:
		return float64(j.i)
	case jsonUint:
		return float64(j.u)
	}
	return j.f
}

// bigInt is an integer's exact value.
func (j *JSON) bigInt() *big.Int {
	if j.kind == jsonUint {
		return new(big.Int).SetUint64(j.u)
	}
	return big.NewInt(j.i)
}

// cvttsd2si is a double converted to int64_t on x86-64: truncated, and
// INT64_MIN when out of range or NaN.
func cvttsd2si(d float64) int64 {
	if !(d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
		return math.MinInt64
	}
	return int64(d)
}

// isTrue is `== true`: only the boolean true.
func (j *JSON) isTrue() bool { return j != nil && j.kind == jsonBool && j.b }

// clone copies j deeply.
func (j *JSON) clone() *JSON {
	if j == nil {
		return nil
	}
	c := *j
	c.arr = make([]*JSON, len(j.arr))
	for i, v := range j.arr {
		c.arr[i] = v.clone()
	}
	c.keys = append([]string(nil), j.keys...)
	c.vals = make([]*JSON, len(j.vals))
	for i, v := range j.vals {
		c.vals[i] = v.clone()
	}
	return &c
}

// Dump writes j as nlohmann's dump() does: no spaces, keys in order,
// strings with '"', '\\' and control characters escaped (\b \f \n \r \t,
// others \u00xx) and other bytes as they are, integers in decimal, doubles
// in the shortest form that reads back (with ".0" when they look like an
// integer, exponents as e+NN from 1e16 and below 1e-4; the digits are
// Grisu2's, which read back as the same double), NaN and infinities
// as null.
func (j *JSON) Dump() string {
	var b strings.Builder
	j.dump(&b)
	return b.String()
}

func (j *JSON) dump(b *strings.Builder) {
	switch {
	case j.isNull():
		b.WriteString("null")
	case j.kind == jsonBool:
		b.WriteString(strconv.FormatBool(j.b))
	case j.kind == jsonInt:
		b.WriteString(strconv.FormatInt(j.i, 10))
	case j.kind == jsonUint:
		b.WriteString(strconv.FormatUint(j.u, 10))
	case j.kind == jsonFloat:
		b.WriteString(dumpFloat(j.f))
	case j.kind == jsonString:
		DumpString(b, j.s)
	case j.kind == jsonArray:
		b.WriteByte('[')
		for i, v := range j.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			v.dump(b)
		}
		b.WriteByte(']')
	case j.kind == jsonObject:
		b.WriteByte('{')
		for i, k := range j.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			DumpString(b, k)
			b.WriteByte(':')
			j.vals[i].dump(b)
		}
		b.WriteByte('}')
	}
}

// DumpString writes s as a JSON string the way nlohmann::json's dump escapes it (the reference's JSON writer):
// '"', '\\' and the C escapes \b \f \n \r \t by name, other bytes below 0x20 as \u00XX, every other byte as
// it is (no UTF-8 validation: the callers hold valid text or want its bytes).
func DumpString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// dumpFloat is nlohmann's to_chars: the digits Grisu2 gives for x, laid out
// by format_buffer with kMinExp -4, kMaxExp 15.
func dumpFloat(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "null"
	}
	var b strings.Builder
	if math.Signbit(x) {
		b.WriteByte('-')
		x = -x
	}
	if x == 0 {
		b.WriteString("0.0")
		return b.String()
	}
	d, exp := grisu2(x)
	digits := string(d)
	k := len(digits)
	n := k + exp // position of the decimal point
	const minExp, maxExp = -4, 15
	switch {
	case k <= n && n <= maxExp:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", n-k))
		b.WriteString(".0")
	case 0 < n && n <= maxExp:
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case minExp < n && n <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		e := n - 1
		if e < 0 {
			b.WriteByte('-')
			e = -e
		} else {
			b.WriteByte('+')
		}
		if e < 10 {
			b.WriteByte('0')
		}
		b.WriteString(strconv.Itoa(e))
	}
	return b.String()
}
