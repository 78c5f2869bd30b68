package tokenizer

import (
	"fmt"
	"strings"

	"github.com/bankml/bankml/tokenizer/internal/stdregex"
	"github.com/bankml/bankml/tokenizer/internal/ucd"
)

// This file is llama.cpp's unicode_regex_split (src/unicode.cpp): the text is decoded to code points, then every
// regular expression of the pre-tokenizer in turn cuts each piece left by the previous ones, either with its
// hand-written splitter (pretok_custom.go) or with std::regex (package stdregex) on one of two renderings of the
// text: the "collapsed" one, one char per code point, when the expression names a Unicode class (\p{N}, \p{L},
// \p{P}, \p{M}, \p{S}, \p{Lu}, ...), and the wide one (std::wregex) otherwise; the pieces are then written back
// as UTF-8 and byte-encoded.

// customSplitters are the expressions unicode_regex_split_custom recognises by text.
var customSplitters = map[string]func(*span){
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)":                                                                                              splitGPT2,
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+":                                       splitLlama3,
	"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+":          splitLlama3,
	"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+":               splitQwen2,
	"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": splitQwen35,
	"\\p{Han}+":                  splitKimiK2,
	"\\p{AFMoE_digits}":          splitAFMoE,
	"[^\\n]+|[\\n]+":             splitNewlines,
	"\\d{1,3}(?=(?:\\d{3})*\\b)": splitAFMoE,
}

func splitLlama3(s *span) { splitLlama3Like(s, 3, false) }
func splitQwen2(s *span)  { splitLlama3Like(s, 1, false) }
func splitQwen35(s *span) { splitLlama3Like(s, 1, true) }

// ucatNames are the \p{...} names unicode_regex_split collapses (k_ucat_enum), with their category.
var ucatNames = []struct {
	name string
	cat  ucd.Flags
}{
	{`\p{N}`, ucd.Number}, {`\p{L}`, ucd.Letter}, {`\p{P}`, ucd.Punctuation}, {`\p{M}`, ucd.AccentMark},
	{`\p{S}`, ucd.Symbol}, {`\p{Lu}`, ucd.Letter}, {`\p{Ll}`, ucd.Letter}, {`\p{Lt}`, ucd.Letter},
	{`\p{Lm}`, ucd.Letter}, {`\p{Lo}`, ucd.Letter},
}

// ucatChar is k_ucat_cpt: the char that stands for a code point of a category in the collapsed text; ucatASCII
// is k_ucat_map: the ASCII members of the category, spelled as inside a bracket expression.
var (
	ucatChar = map[ucd.Flags]byte{ucd.Number: 0xD1, ucd.Letter: 0xD2, ucd.Punctuation: 0xD3, ucd.AccentMark: 0xD4,
		ucd.Symbol: 0xD5}
	ucatASCII = map[ucd.Flags]string{
		ucd.Number:      "0-9",
		ucd.Letter:      "A-Za-z",
		ucd.Punctuation: "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}",
		ucd.AccentMark:  "",
		ucd.Symbol:      "\\$\\+<->^`\\|\\~",
	}
)

// usesUcat reports whether expr names one of the collapsed categories (a plain substring test, as llama.cpp's).
func usesUcat(expr string) bool {
	for _, u := range ucatNames {
		if strings.Contains(expr, u.name) {
			return true
		}
	}
	return false
}

// collapseExpr rewrites expr for the collapsed text as unicode_regex_split does: every known \p{X} becomes its
// collapsed char followed by the category's ASCII members, wrapped in brackets unless already inside a bracket
// expression (tracked as llama.cpp tracks it: a '[' or ']' not preceded by a backslash).
func collapseExpr(expr string) (string, error) {
	for _, r := range expr {
		if r >= 128 {
			return "", fmt.Errorf("tokenizer: regex %q includes both unicode categories and non-ASCII characters, which llama.cpp refuses", expr)
		}
	}
	var b strings.Builder
	inside := false
	for i := 0; i < len(expr); i++ {
		if expr[i] == '[' && (i == 0 || expr[i-1] != '\\') {
			b.WriteByte('[')
			inside = true
			continue
		}
		if inside && expr[i] == ']' && expr[i-1] != '\\' {
			b.WriteByte(']')
			inside = false
			continue
		}
		if expr[i] == '\\' && i+3 < len(expr) && expr[i+1] == 'p' && expr[i+2] == '{' {
			if j := strings.IndexByte(expr[i+3:], '}'); j >= 0 && i+3+j <= i+10 {
				closing := i + 3 + j
				pat := expr[i : closing+1]
				found := false
				for _, u := range ucatNames {
					if u.name == pat {
						if !inside {
							b.WriteByte('[')
						}
						b.WriteByte(ucatChar[u.cat])
						b.WriteString(ucatASCII[u.cat])
						if !inside {
							b.WriteByte(']')
						}
						found = true
						break
					}
				}
				if found {
					i = closing
					continue
				}
			}
		}
		b.WriteByte(expr[i])
	}
	return b.String(), nil
}

// splitStep is one regular expression of a pre-tokenizer.
type splitStep struct {
	expr   string
	custom func(*span)
	re     *stdregex.Regexp
	narrow bool // on the collapsed text
}

// preTokenizer is one llama_vocab_pre_type's list of regular expressions, compiled.
type preTokenizer struct {
	kind     string
	steps    []splitStep
	collapse bool // some step runs on the collapsed text
}

func newPreTokenizer(kind string) (*preTokenizer, error) {
	exprs, ok := preRegexes[kind]
	if !ok {
		return nil, fmt.Errorf("tokenizer: pre-tokenizer type %s not implemented", kind)
	}
	return compilePreTokenizer(kind, exprs)
}

// compilePreTokenizer compiles a list of regular expressions as unicode_regex_split would run them.
func compilePreTokenizer(kind string, exprs []string) (*preTokenizer, error) {
	p := &preTokenizer{kind: kind}
	for _, e := range exprs {
		st := splitStep{expr: e}
		if f, ok := customSplitters[e]; ok {
			st.custom = f
		} else if usesUcat(e) {
			c, err := collapseExpr(e)
			if err != nil {
				return nil, err
			}
			re, err := stdregex.Compile(stdregex.Chars(c, stdregex.Narrow), stdregex.Narrow)
			if err != nil {
				return nil, fmt.Errorf("tokenizer: pre-tokenizer %s: regex %q: %w", kind, e, err)
			}
			st.re, st.narrow = re, true
			p.collapse = true
		} else {
			re, err := stdregex.Compile(stdregex.Chars(e, stdregex.Wide), stdregex.Wide)
			if err != nil {
				return nil, fmt.Errorf("tokenizer: pre-tokenizer %s: regex %q: %w", kind, e, err)
			}
			st.re = re
		}
		p.steps = append(p.steps, st)
	}
	return p, nil
}

// splitBuf holds the per-call buffers of split.
type splitBuf struct {
	cpts      []uint32
	narrow    []int32
	wide      []int32
	offs, tmp []int
	word      []byte
}

// decodeCpts is unicode_cpts_from_utf8, with one deliberate difference: a 4-byte sequence whose value lies above
// U+10FFFF (lead bytes F4 90 to F7), which the reference decodes and then throws on when it writes the piece back
// (std::invalid_argument escaping llama_tokenize), becomes U+FFFD.
func decodeCpts(text string, dst []uint32) []uint32 {
	dst = ucd.DecodeUTF8(text, dst[:0])
	for i, c := range dst {
		if c > 0x10FFFF {
			dst[i] = ucd.Replacement
		}
	}
	return dst
}

// split cuts text into words as unicode_regex_split(text, regex_exprs, byteEncode) does and calls emit with each
// word (byte-encoded when byteEncode), in order; the word's bytes are valid until emit returns.
func (p *preTokenizer) split(text string, b *splitBuf, byteEncode bool, emit func(word []byte)) {
	b.cpts = decodeCpts(text, b.cpts)
	cpts := b.cpts
	tab := ucd.Table()
	if p.collapse {
		b.narrow = b.narrow[:0]
		for _, c := range cpts {
			if c < 128 {
				b.narrow = append(b.narrow, int32(c))
				continue
			}
			f := tab[c]
			ch := byte(0xD0)
			if f&ucd.Whitespace != 0 {
				ch = 0x0B
			} else if u, ok := ucatChar[f.Category()]; ok {
				ch = u
			}
			b.narrow = append(b.narrow, int32(int8(ch)))
		}
	}
	b.wide = b.wide[:0]
	for _, c := range cpts {
		if c > 0x7F && tab[c]&ucd.Whitespace != 0 {
			c = 0x0B
		}
		b.wide = append(b.wide, int32(c))
	}
	b.offs = append(b.offs[:0], len(cpts))
	for _, st := range p.steps {
		b.tmp = b.tmp[:0]
		start := 0
		for _, n := range b.offs {
			switch {
			case st.custom != nil:
				s := span{cpts: cpts, tab: tab, ini: start, end: start + n, prevEnd: start, out: b.tmp}
				st.custom(&s)
				b.tmp = s.out
			case st.narrow:
				b.tmp = st.re.Split(b.narrow, start, n, b.tmp)
			default:
				b.tmp = st.re.Split(b.wide, start, n, b.tmp)
			}
			start += n
		}
		b.offs, b.tmp = b.tmp, b.offs
	}
	start := 0
	for _, n := range b.offs {
		b.word = b.word[:0]
		for _, c := range cpts[start : start+n] {
			var u8 [4]byte
			enc, _ := ucd.AppendUTF8(u8[:0], c)
			if !byteEncode {
				b.word = append(b.word, enc...)
				continue
			}
			for _, x := range enc {
				b.word = append(b.word, byteToUnicode[x]...)
			}
		}
		start += n
		emit(b.word)
	}
}

// byteToUnicode is unicode_byte_to_utf8's map (GPT-2's bytes_to_unicode): printable Latin-1 bytes stand for
// themselves, the other bytes for U+0100 upwards in byte order. unicodeToByte is its inverse
// (unicode_utf8_to_byte).
var byteToUnicode, unicodeToByte = func() ([256]string, map[string]byte) {
	var fwd [256]string
	rev := make(map[string]byte, 256)
	n := 0
	for c := range 256 {
		if (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF) {
			fwd[c] = string(rune(c))
		} else {
			fwd[c] = string(rune(256 + n))
			n++
		}
		rev[fwd[c]] = byte(c)
	}
	return fwd, rev
}()
