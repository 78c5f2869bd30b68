package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/bankml/bankml/grammar"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// node is a JSON value that keeps the order of object keys, as llama.cpp's common_json does (common/json.h: "object
// keys keep the order in which they are added"). The order matters: tojson prints objects in that order.
type node struct {
	kind  nodeKind
	b     bool
	s     string  // string value, or the literal text of a number as given
	i     int64   // integer value (kind numInt)
	f     float64 // float value (kind numFloat)
	items []*node // array items
	keys  []string
	vals  []*node // object values, parallel to keys
}

type nodeKind uint8

const (
	jNull nodeKind = iota
	jBool
	jInt
	jFloat
	jString
	jArray
	jObject
)

func jstr(s string) *node { return &node{kind: jString, s: s} }

func jbool(b bool) *node { return &node{kind: jBool, b: b} }

func jarr(items ...*node) *node { return &node{kind: jArray, items: items} }

func jobj() *node { return &node{kind: jObject} }

// set adds key or replaces its value in place (nlohmann's operator[] on an object).
func (n *node) set(key string, v *node) *node {
	for i, k := range n.keys {
		if k == key {
			n.vals[i] = v
			return n
		}
	}
	n.keys = append(n.keys, key)
	n.vals = append(n.vals, v)
	return n
}

func (n *node) get(key string) (*node, bool) {
	if n == nil || n.kind != jObject {
		return nil, false
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i], true
		}
	}
	return nil, false
}

// clone copies n deeply.
func (n *node) clone() *node {
	if n == nil {
		return nil
	}
	c := *n
	if n.items != nil {
		c.items = make([]*node, len(n.items))
		for i, it := range n.items {
			c.items[i] = it.clone()
		}
	}
	if n.keys != nil {
		c.keys = append([]string(nil), n.keys...)
		c.vals = make([]*node, len(n.vals))
		for i, v := range n.vals {
			c.vals[i] = v.clone()
		}
	}
	return &c
}

// parseJSON parses one JSON value (and nothing after it but white space), keeping the key order. A number without
// fraction or exponent that fits an int64 is an integer, any other number a float64, as nlohmann::json parses them
// (an unsigned value above the int64 range is kept as a float here; llama.cpp would keep it as uint64).
func parseJSON(data []byte) (*node, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	n, err := decodeNode(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return n, nil
}

const maxDepth = 256

func decodeNode(d *json.Decoder, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := d.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: jNull}, nil
	case bool:
		return jbool(t), nil
	case string:
		return jstr(t), nil
	case json.Number:
		return numberNode(string(t))
	case json.Delim:
		switch t {
		case '[':
			n := jarr()
			for d.More() {
				it, err := decodeNode(d, depth+1)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, it)
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '{':
			n := jobj()
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				v, err := decodeNode(d, depth+1)
				if err != nil {
					return nil, err
				}
				n.set(k, v) // a repeated key keeps its first place and the last value, as nlohmann does
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

func numberNode(s string) (*node, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return &node{kind: jInt, i: i, s: s}, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, fmt.Errorf("bad number %q", s)
	}
	if math.IsInf(f, 0) {
		return nil, fmt.Errorf("number %s is out of range", s)
	}
	return &node{kind: jFloat, f: f, s: s}, nil
}

// dump writes n as nlohmann::json::dump() does with no indent: no spaces, object keys in order, strings escaped
// with \" \\ \b \f \n \r \t and \u00xx (lower-case hex) for the other control characters, other bytes as they are
// (ensure_ascii off), floats in nlohmann's shortest round-trip form. It fails on a string that is not valid UTF-8,
// as nlohmann's dump throws (type_error 316).
func (n *node) dump(b *strings.Builder) error {
	switch n.kind {
	case jNull:
		b.WriteString("null")
	case jBool:
		b.WriteString(strconv.FormatBool(n.b))
	case jInt:
		b.WriteString(strconv.FormatInt(n.i, 10))
	case jFloat:
		b.WriteString(nlohmannFloat(n.f))
	case jString:
		if !utf8.ValidString(n.s) {
			return fmt.Errorf("invalid UTF-8 in string %q", n.s)
		}
		grammar.DumpString(b, n.s) // nlohmann escapes as llama.cpp's value_to_json does
	case jArray:
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := it.dump(b); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case jObject:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := jstr(k).dump(b); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := n.vals[i].dump(b); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	}
	return nil
}

func (n *node) dumpString() (string, error) {
	var b strings.Builder
	err := n.dump(&b)
	return b.String(), err
}

// nlohmannFloat formats a finite double as nlohmann::json's dump does (detail::to_chars: the shortest digits that
// round-trip, then format_buffer with min_exp -4 and max_exp 15): 1.0 gives "1.0", 1e15 "1000000000000000.0",
// 1e16 "1e+16", 0.0001 "0.0001", 1e-5 "1e-05".
func nlohmannFloat(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// The shortest digits d1d2...dk and the exponent e with value 0.d1...dk * 10^n, n = e+1.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(expStr)
	k := len(digits)
	n := x + 1 // decimal point position
	const minExp, maxExp = -4, 15
	switch {
	case k <= n && n <= maxExp:
		return sign + digits + strings.Repeat("0", n-k) + ".0"
	case 0 < n && n <= maxExp:
		return sign + digits[:n] + "." + digits[n:]
	case minExp < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	m := digits[:1]
	if k > 1 {
		m += "." + digits[1:]
	}
	ex := n - 1
	es := "+"
	if ex < 0 {
		es, ex = "-", -ex
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, ex)
}
