package chat

import (
	"errors"
	"fmt"
	"github.com/bankml/bankml/grammar"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// program is a compiled template: the Go engine's program for the normalized source.
type program struct {
	tmpl *jinja.Template
}

func compile(source string) (*program, error) {
	norm, err := normalizeSource(source)
	if err != nil {
		return nil, err
	}
	t, err := jinja.Compile(norm)
	if err != nil {
		return nil, err
	}
	return &program{tmpl: t}, nil
}

// errRaised is wrapped by the error of a template's raise_exception call.
var errRaised = errors.New("template raised an exception")

// render runs the program with the variables of ctx (a JSON object, keys in order) and the globals and filters
// that bankml supplies in place of the Go engine's own (see engineOverrides).
func (p *program) render(ctx *node, now time.Time) (out string, err error) {
	defer func() {
		// The Go engine is a third-party parser and evaluator; a template must never take the process down.
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("template engine failure: %v", r)
		}
	}()
	vars := make(map[string]jinja.Value, len(ctx.keys)+8)
	for name, v := range engineOverrides(now) {
		vars[name] = v
	}
	for i, k := range ctx.keys {
		vars[k] = toValue(ctx.vals[i])
	}
	return p.tmpl.RenderValues(vars)
}

// toValue converts a JSON value to the Go engine's value, keeping object key order; integers stay integers (as
// llama.cpp's jinja::from_json makes value_int from a JSON integer and value_float from any other number).
func toValue(n *node) jinja.Value {
	switch n.kind {
	case jBool:
		return jinja.NewBool(n.b)
	case jInt:
		return jinja.NewInt(n.i)
	case jFloat:
		return jinja.NewFloat(n.f)
	case jString:
		return jinja.NewString(n.s)
	case jArray:
		items := make([]jinja.Value, len(n.items))
		for i, it := range n.items {
			items[i] = toValue(it)
		}
		return jinja.NewList(items)
	case jObject:
		d := jinja.NewDict()
		for i, k := range n.keys {
			d.AsDict().Set(k, toValue(n.vals[i]))
		}
		return d
	}
	return jinja.None()
}

// engineOverrides are the globals and filters whose llama.cpp behaviour (common/jinja/value.cpp) differs from the
// Go engine's. Globals are variables, and a variable shadows the Go engine's global of that name. The Go engine
// looks filters up among its built-ins first, so normalizeSource renames the filters used in a template
// (renamedFilters) to names it has no built-in for, which it then finds among the variables.
func engineOverrides(now time.Time) map[string]jinja.Value {
	return map[string]jinja.Value{
		"bankml_tojson": jinja.NewCallable("tojson", filterToJSON),
		"bankml_trim":   jinja.NewCallable("trim", filterTrim),
		"raise_exception": jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || !args[0].IsString() {
				return jinja.Undefined(), errors.New("raise_exception: expects one string argument")
			}
			return jinja.Undefined(), fmt.Errorf("%w: Jinja Exception: %s", errRaised, args[0].AsString())
		}),
		"strftime_now": jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || !args[0].IsString() {
				return jinja.Undefined(), errors.New("strftime_now: expects one string argument")
			}
			s, err := strftime(args[0].AsString(), now)
			if err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewString(s), nil
		}),
	}
}

// filterToJSON is llama.cpp's tojson (value.cpp tojson and value_to_json_internal): arguments ensure_ascii,
// indent, separators (positional or by name), sort_keys refused; items separated by ", " without indent and ","
// with one, keys by ": "; with indent >= 0 every item on its own line, indented by indent spaces per level;
// strings escape only \" \\ \b \f \n \r \t and other control bytes (as \u00xx), so non-ASCII text stays as it is
// unless ensure_ascii; integers in decimal, floats as C++'s ostream prints a double (%g, 6 significant digits);
// none, undefined and functions as null.
func filterToJSON(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 1 || len(args) > 5 {
		return jinja.Undefined(), fmt.Errorf("tojson: expects 1 to 5 arguments, got %d", len(args))
	}
	arg := func(name string, pos int) jinja.Value {
		if v, ok := kwargs[name]; ok {
			return v
		}
		if pos < len(args) {
			return args[pos]
		}
		return jinja.Undefined()
	}
	indent := -1
	if v := arg("indent", 2); v.IsInt() {
		indent = int(v.AsInt())
	}
	if arg("sort_keys", 4).IsTruthy() {
		return jinja.Undefined(), errors.New("tojson sort_keys=true not implemented")
	}
	ensureASCII := arg("ensure_ascii", 1).IsTruthy()
	itemSep, keySep := ", ", ": "
	if indent >= 0 {
		itemSep = ","
	}
	if v := arg("separators", 3); v.IsList() {
		items := v.AsList().Items
		if len(items) > 0 {
			itemSep = printValue(items[0])
		}
		if len(items) > 1 {
			keySep = printValue(items[1])
		}
	}
	var b strings.Builder
	writeJSON(&b, args[0], 0, indent, itemSep, keySep)
	s := b.String()
	if ensureASCII {
		s = asciiJSON(s)
	}
	return jinja.NewString(s), nil
}

func writeJSON(b *strings.Builder, v jinja.Value, lvl, indent int, itemSep, keySep string) {
	pad := func(n int) {
		if indent > 0 {
			b.WriteString(strings.Repeat(" ", n*indent))
		}
	}
	newline := func() {
		if indent >= 0 {
			b.WriteByte('\n')
		}
	}
	switch {
	case v.IsBool():
		b.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(ostreamDouble(v.AsFloat()))
	case v.IsString():
		grammar.DumpString(b, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		b.WriteByte('[')
		if len(items) > 0 {
			newline()
			for i, it := range items {
				pad(lvl + 1)
				writeJSON(b, it, lvl+1, indent, itemSep, keySep)
				if i < len(items)-1 {
					b.WriteString(itemSep)
				}
				newline()
			}
			pad(lvl)
		}
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		b.WriteByte('{')
		if d.Len() > 0 {
			newline()
			for i, k := range d.Keys {
				pad(lvl + 1)
				grammar.DumpString(b, k)
				b.WriteString(keySep)
				writeJSON(b, d.Data[k], lvl+1, indent, itemSep, keySep)
				if i < d.Len()-1 {
					b.WriteString(itemSep)
				}
				newline()
			}
			pad(lvl)
		}
		b.WriteByte('}')
	default: // none, undefined, callables
		b.WriteString("null")
	}
}

// asciiJSON escapes the non-ASCII characters inside the JSON strings of s as \uXXXX (UTF-16, lower-case hex), and
// a byte that is not valid UTF-8 as \ufffd, as llama.cpp's json_ensure_ascii_preserving_format does.
func asciiJSON(s string) string {
	var b strings.Builder
	in, esc := false, false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case !in:
			b.WriteByte(c)
			in = c == '"'
			i++
		case esc:
			b.WriteByte(c)
			esc = false
			i++
		case c == '\\':
			b.WriteByte(c)
			esc = true
			i++
		case c == '"':
			b.WriteByte(c)
			in = false
			i++
		case c < 0x80:
			b.WriteByte(c)
			i++
		default:
			r, size := decodeRune(s[i:])
			if r < 0 {
				b.WriteString(`\ufffd`)
				i++
				continue
			}
			if r <= 0xFFFF {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+((r>>10)&0x3FF), 0xDC00+(r&0x3FF))
			}
			i += size
		}
	}
	return b.String()
}

// decodeRune decodes one UTF-8 sequence, or gives -1 for an invalid one.
func decodeRune(s string) (rune, int) {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size <= 1 {
		return -1, 1
	}
	return r, size
}

// ostreamDouble prints a double as `std::ostringstream << double` does by default: printf's %g with precision 6.
func ostreamDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return cFormatG(f, 6)
}

// cFormatG is C's %.*g: precision P significant digits (0 counts as 1), exponent form when the exponent X is
// below -4 or at least P, trailing zeros and a trailing point removed, exponent with at least two digits.
func cFormatG(f float64, p int) string {
	if p == 0 {
		p = 1
	}
	e := strconv.FormatFloat(f, 'e', p-1, 64)
	mant, expStr, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(expStr)
	if x < -4 || x >= p {
		mant = trimFraction(mant)
		sign := "+"
		if x < 0 {
			sign, x = "-", -x
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, x)
	}
	return trimFraction(strconv.FormatFloat(f, 'f', p-1-x, 64))
}

func trimFraction(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

// printValue is a value as llama.cpp prints a tojson separator: a string as it is, else its JSON.
func printValue(v jinja.Value) string {
	if v.IsString() {
		return v.AsString()
	}
	var b strings.Builder
	writeJSON(&b, v, 0, -1, ", ", ": ")
	return b.String()
}

// strftime formats t with the C library's strftime in the C locale (what strftime_now calls in llama.cpp, on
// std::localtime of the render's start): the conversions %a %A %b %B %c %C %d %D %e %F %g %G %h %H %I %j %m %M %n %p
// %r %R %S %t %T %u %V %w %x %X %y %Y %z %Z %%. Any other conversion is an error rather than a guess.
func strftime(format string, t time.Time) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", errors.New("strftime_now: format ends with %")
		}
		switch format[i] {
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'c':
			b.WriteString(t.Format("Mon Jan _2 15:04:05 2006"))
		case 'C':
			fmt.Fprintf(&b, "%02d", t.Year()/100)
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'D':
			b.WriteString(t.Format("01/02/06"))
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'g':
			y, _ := t.ISOWeek()
			fmt.Fprintf(&b, "%02d", y%100)
		case 'G':
			y, _ := t.ISOWeek()
			fmt.Fprintf(&b, "%d", y)
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&b, "%02d", h)
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'n':
			b.WriteByte('\n')
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'r':
			b.WriteString(t.Format("03:04:05 PM"))
		case 'R':
			b.WriteString(t.Format("15:04"))
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 't':
			b.WriteByte('\t')
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			fmt.Fprintf(&b, "%d", wd)
		case 'V':
			_, w := t.ISOWeek()
			fmt.Fprintf(&b, "%02d", w)
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday()))
		case 'x':
			b.WriteString(t.Format("01/02/06"))
		case 'X':
			b.WriteString(t.Format("15:04:05"))
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("strftime_now: conversion %%%c is not supported", format[i])
		}
	}
	return b.String(), nil
}

// unicodeSpaces are the white-space characters beyond ASCII that Go's strings.TrimSpace removes and that
// llama.cpp's strip (C isspace, byte by byte) keeps. Before a render every one of them in the variables becomes a
// code point of Supplementary Private Use Area-B (escapeBase+i), which no strip removes, and the output maps them
// back; a request already holding such a code point is refused.
var unicodeSpaces = []rune{0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
	0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}

const escapeBase = 0x10FF00

func escapeSpaces(n *node) error {
	switch n.kind {
	case jString:
		var b strings.Builder
		changed := false
		for _, r := range n.s {
			if r >= escapeBase && r < escapeBase+rune(len(unicodeSpaces)) {
				return fmt.Errorf("%w: the text holds U+%X, a private-use code point bankml reserves", ErrRequest, r)
			}
			for i, sp := range unicodeSpaces {
				if r == sp {
					r = escapeBase + rune(i)
					changed = true
					break
				}
			}
			b.WriteRune(r)
		}
		if changed {
			n.s = b.String()
		}
	case jArray:
		for _, it := range n.items {
			if err := escapeSpaces(it); err != nil {
				return err
			}
		}
	case jObject:
		for _, v := range n.vals {
			if err := escapeSpaces(v); err != nil {
				return err
			}
		}
	}
	return nil
}

func unescapeSpaces(s string) string {
	if !containsEscape(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r >= escapeBase && r < escapeBase+rune(len(unicodeSpaces)) {
			r = unicodeSpaces[r-escapeBase]
		}
		b.WriteRune(r)
	}
	return b.String()
}

func containsEscape(s string) bool {
	for _, r := range s {
		if r >= escapeBase && r < escapeBase+rune(len(unicodeSpaces)) {
			return true
		}
	}
	return false
}

// cIsSpace is C's isspace in the C locale.
func cIsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// filterTrim is llama.cpp's trim filter, an alias of strip: C white space (or the bytes of its argument) removed
// at both ends, byte by byte; a non-string is first printed.
func filterTrim(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 || args[0].IsUndefined() {
		return jinja.NewString(""), nil
	}
	s := printValue(args[0])
	match := cIsSpace
	if len(args) > 1 && !args[1].IsUndefined() {
		chars := printValue(args[1])
		match = func(c byte) bool { return strings.IndexByte(chars, c) >= 0 }
	}
	i, j := 0, len(s)
	for i < j && match(s[i]) {
		i++
	}
	for j > i && match(s[j-1]) {
		j--
	}
	return jinja.NewString(s[i:j]), nil
}

// methodArgs returns, for every call of the string method name in a template source (".name(" outside string
// literals), the number of its top-level arguments.
func methodArgs(src, name string) []int {
	var out []int
	pat := "." + name + "("
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\'', '"':
			if _, next, err := readLiteral(src, i); err == nil {
				i = next - 1
			}
			continue
		}
		if !strings.HasPrefix(src[i:], pat) {
			continue
		}
		j := i + len(pat)
		depth, n, seen := 0, 0, false
	scan:
		for j < len(src) {
			c := src[j]
			switch {
			case c == '\'' || c == '"':
				if _, next, err := readLiteral(src, j); err == nil {
					j, seen = next, true
					continue
				}
			case c == '(' || c == '[' || c == '{':
				depth++
			case (c == ')' || c == ']' || c == '}') && depth > 0:
				depth--
			case c == ')':
				break scan
			case c == ',' && depth == 0:
				n++
			case !isSpace(c):
				seen = true
			}
			j++
		}
		if seen {
			n++
		}
		out = append(out, n)
	}
	return out
}

// engineGaps lists the uses in a template of string methods whose Go-engine behaviour differs from llama.cpp's in
// a way bankml cannot patch from outside the engine: split() without a separator (llama.cpp splits on " ", the Go
// engine on any white space), split or rsplit with a maxsplit argument (ignored by the Go engine), and
// lstrip()/rstrip() without arguments (llama.cpp also strips \v and \f there; the Go engine does not).
// The first two make New refuse the template; the last makes Apply refuse a request holding \v or \f.
func engineGaps(src string) (refuse string, sideStrip bool) {
	for _, n := range methodArgs(src, "split") {
		if n == 0 {
			return "split() without a separator", false
		}
		if n > 1 {
			return "split() with maxsplit", false
		}
	}
	for _, n := range methodArgs(src, "rsplit") {
		if n > 1 || n == 0 {
			return "rsplit()", false
		}
	}
	for _, m := range []string{"lstrip", "rstrip"} {
		for _, n := range methodArgs(src, m) {
			if n == 0 {
				sideStrip = true
			}
		}
	}
	return "", sideStrip
}

// checkStripInputs refuses variables holding \v or \f for a template that calls lstrip() or rstrip() without
// arguments (see engineGaps).
func checkStripInputs(t *Template, ctx *node) error {
	if !t.sideStrip {
		return nil
	}
	var bad bool
	var walk func(n *node)
	walk = func(n *node) {
		switch n.kind {
		case jString:
			bad = bad || strings.ContainsAny(n.s, "\v\f")
		case jArray:
			for _, it := range n.items {
				walk(it)
			}
		case jObject:
			for _, v := range n.vals {
				walk(v)
			}
		}
	}
	walk(ctx)
	if bad {
		return fmt.Errorf("%w: the template calls lstrip() or rstrip() without arguments, which bankml's engine cannot run exactly as llama.cpp on text holding \\v or \\f", ErrTemplate)
	}
	return nil
}
