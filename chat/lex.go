package chat

import (
	"fmt"
	"strings"
)

// lexSource is the text llama.cpp's lexer works on, and the one common_chat_template keeps as its source: CR LF
// and lone CR become LF, and one trailing newline is dropped.
func lexSource(source string) string {
	src := strings.ReplaceAll(source, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	if strings.HasSuffix(source, "\n") {
		src = src[:len(src)-1]
	}
	return src
}

// normalizeSource rewrites a template's source so that github.com/ardanlabs/jinja sees exactly the text and string
// literals that llama.cpp's lexer (common/jinja/lexer.cpp, lexer::tokenize) produces, whitespace control included.
// The two engines differ there: llama.cpp normalizes CR LF and CR to LF, drops one trailing newline of the source,
// applies lstrip_blocks and trim_blocks with hf.js's rules (trim after `%}`, `#}` and `-}}`, but not after a plain
// `}}`; lstrip before `{%` and `{#` only, with a quirk that trims the whole first text when it reaches the source's
// second byte), strips around `{%-`/`-%}` with the characters " \t\r\n", and knows the string escapes \n \t \r \b
// \f \v \\ \' \" (any other escape is an error). So the text between tags is computed here as llama.cpp computes
// it and emitted as a string-literal expression, comments are dropped, and every string literal inside a tag is
// re-encoded with the escapes both engines read alike. What is left for the Go engine to parse has no raw text,
// hence nothing its own whitespace rules could change.
//
// The source must have been through lexSource already.
func normalizeSource(src string) (string, error) {
	var out strings.Builder
	pos := 0
	isTagStart := func(p int) bool {
		return p+1 < len(src) && src[p] == '{' && (src[p+1] == '%' || src[p+1] == '{' || src[p+1] == '#')
	}
	for pos < len(src) {
		// Text up to the next tag.
		start := pos
		for pos < len(src) && !isTagStart(pos) {
			pos++
		}
		end := pos
		rstripPrev, trimNewline := false, false
		if start > 3 {
			c0, c1, c2 := src[start-3], src[start-2], src[start-1]
			rstripPrev = c0 == '-' && (c1 == '%' || c1 == '}' || c1 == '#') && c2 == '}'
			trimNewline = (c1 == '#' || c1 == '%' || c1 == '-') && c2 == '}'
		}
		if pos < len(src) && pos+1 < len(src) && (src[pos+1] == '%' || src[pos+1] == '#') {
			// lstrip_blocks
			cur := end
			for cur > start {
				c := src[cur-1]
				if cur == 1 {
					end = 0
					break
				}
				if c == '\n' {
					end = cur
					break
				}
				if !isSpace(c) {
					break
				}
				cur--
			}
		}
		text := ""
		if end > start {
			text = src[start:end]
		}
		if trimNewline && strings.HasPrefix(text, "\n") {
			text = text[1:]
		}
		if rstripPrev {
			text = strings.TrimLeft(text, " \t\r\n")
		}
		if pos+2 < len(src) && isTagStart(pos) && src[pos+2] == '-' {
			text = strings.TrimRight(text, " \t\r\n")
		}
		if text != "" {
			lit, err := goLiteral(text)
			if err != nil {
				return "", err
			}
			out.WriteString("{{ ")
			out.WriteString(lit)
			out.WriteString(" }}")
		}
		if pos >= len(src) {
			break
		}
		// A tag.
		switch src[pos+1] {
		case '#':
			i := strings.Index(src[pos+2:], "#}")
			if i < 0 {
				return "", fmt.Errorf("missing end of comment tag at byte %d", pos)
			}
			pos += 2 + i + 2
		default:
			closer := "}}"
			if src[pos+1] == '%' {
				closer = "%}"
			}
			tag, next, err := scanTag(src, pos, closer)
			if err != nil {
				return "", err
			}
			out.WriteString(tag)
			pos = next
		}
	}
	return out.String(), nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// renamedFilters maps the filters bankml supplies to the variable names they are given under (engineOverrides).
var renamedFilters = map[string]string{"tojson": "bankml_tojson", "trim": "bankml_trim"}

// scanTag copies the tag that starts at src[pos] ("{{" or "{%") up to and including its closer, re-encoding its
// string literals; inside an expression, "}}" closes only outside braces (llama.cpp's curly_bracket_depth).
func scanTag(src string, pos int, closer string) (string, int, error) {
	var b strings.Builder
	b.WriteString(src[pos : pos+2])
	i := pos + 2
	depth := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			s, next, err := readLiteral(src, i)
			if err != nil {
				return "", 0, err
			}
			lit, err := goLiteral(s)
			if err != nil {
				return "", 0, err
			}
			b.WriteString(lit)
			i = next
			continue
		case c == '|':
			// A filter: llama.cpp's own tojson and trim replace the Go engine's, which looks filters up among its
			// built-ins before the variables; renamed, they resolve to the variables of engineOverrides.
			b.WriteByte(c)
			i++
			j := i
			for j < len(src) && isSpace(src[j]) {
				j++
			}
			k := j
			for k < len(src) && (src[k] == '_' || src[k] >= 'a' && src[k] <= 'z' || src[k] >= 'A' && src[k] <= 'Z' || src[k] >= '0' && src[k] <= '9') {
				k++
			}
			if name, ok := renamedFilters[src[j:k]]; ok {
				b.WriteString(src[i:j])
				b.WriteString(name)
				i = k
			}
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			return "", 0, fmt.Errorf("unexpected token / at byte %d (llama.cpp's engine has no // operator)", i)
		case closer == "}}" && c == '{':
			depth++
		case closer == "}}" && c == '}' && depth > 0:
			depth--
		case strings.HasPrefix(src[i:], closer):
			b.WriteString(closer)
			return b.String(), i + len(closer), nil
		}
		b.WriteByte(c)
		i++
	}
	return "", 0, fmt.Errorf("unclosed tag at byte %d", pos)
}

// readLiteral decodes the string literal that starts at src[i] (its quote) with llama.cpp's escapes.
func readLiteral(src string, i int) (string, int, error) {
	q := src[i]
	var b strings.Builder
	for j := i + 1; j < len(src); j++ {
		c := src[j]
		if c == q {
			return b.String(), j + 1, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		j++
		if j >= len(src) {
			break
		}
		switch src[j] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"':
			b.WriteByte(src[j])
		default:
			return "", 0, fmt.Errorf("unknown escape character \\%c at byte %d", src[j], j)
		}
	}
	return "", 0, fmt.Errorf("unterminated string literal at byte %d", i)
}

// goLiteral encodes s as a single-quoted literal that ardanlabs/jinja decodes back to s: \\, \' and \n escaped,
// every other byte as it is. That engine's template scanner looks for a tag's closer without regard to quotes, so
// a "}}", "%}" or "#}" inside the text is cut in two literals joined with ~, in parentheses.
func goLiteral(s string) (string, error) {
	var b strings.Builder
	split := false
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
		if (c == '}' || c == '%' || c == '#') && i+1 < len(s) && s[i+1] == '}' {
			b.WriteString("' ~ '")
			split = true
		}
	}
	b.WriteByte('\'')
	if split {
		return "(" + b.String() + ")", nil
	}
	return b.String(), nil
}
