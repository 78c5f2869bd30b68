package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fuzz corpus of the oracle tests: deterministic strings (a fixed PCG seed) drawn from the ranges below. Every
// string is a sequence of pieces, each from one class; classes are chosen with fixed weights. No piece holds a
// 4-byte sequence above U+10FFFF (lead bytes F4 90..F7), on which the reference throws out of llama_tokenize.

// corpusClass is one source of pieces.
type corpusClass struct {
	name string
	gen  func(r *rand.Rand) string
}

// runeIn returns a random code point in [lo, hi].
func runeIn(r *rand.Rand, lo, hi rune) rune { return lo + rune(r.IntN(int(hi-lo+1))) }

// runs returns 1..n code points drawn from the ranges.
func runs(r *rand.Rand, n int, ranges ...[2]rune) string {
	var b strings.Builder
	for range 1 + r.IntN(n) {
		rg := ranges[r.IntN(len(ranges))]
		b.WriteRune(runeIn(r, rg[0], rg[1]))
	}
	return b.String()
}

func pick(r *rand.Rand, xs ...string) string { return xs[r.IntN(len(xs))] }

// templateMarkers are special-token texts of the kept vocabularies and of chat templates.
var templateMarkers = []string{
	"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<s>", "</s>", "<unk>", "<|endoftext|>", "<|eot_id|>",
	"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|fim_prefix|>", "<|fim_middle|>",
	"<|fim_suffix|>", "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>", "<tool_call>", "</tool_call>",
	"<|vision_start|>", "<|user|>", "<|assistant|>", "<|end|>", "<|system|>", "[CLS]", "[SEP]", "[MASK]", "[PAD]",
	"[UNK]", ">>TITLE<<", ">>ABSTRACT<<", "<fim_prefix>", "<fim_middle>", "<|padding|>", "<｜begin▁of▁sentence｜>",
	"<|im_start", "im_end|>", "<|", "|>", "<th", "ink>", "<s", "s>", "</", "▁", "<0x0A>", "Ġ", "Ċ",
}

var corpusClasses = []corpusClass{
	{"latin-words", func(r *rand.Rand) string {
		return pick(r, "the", "The", "THE", "Hello", "world", "tokenizer", "unbelievable", "a", "I", "Once", "upon",
			"time", "über", "naïve", "café", "Größe", "ß", "ſ", "ǅ", "Ø", "façade", "coöperate", "Zürich", "ñandú")
	}},
	{"latin-runs", func(r *rand.Rand) string {
		return runs(r, 12, [2]rune{'a', 'z'}, [2]rune{'A', 'Z'}, [2]rune{0xC0, 0x24F})
	}},
	{"contractions", func(r *rand.Rand) string {
		return pick(r, "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "'VE", "’s", "I'm", "don't",
			"they've", "we'll", "y'all", "'", "''", "'x", "'ll've")
	}},
	{"cyrillic-greek", func(r *rand.Rand) string { return runs(r, 10, [2]rune{0x400, 0x4FF}, [2]rune{0x370, 0x3FF}) }},
	{"cjk", func(r *rand.Rand) string {
		return runs(r, 8, [2]rune{0x4E00, 0x9FFF}, [2]rune{0x3400, 0x4DBF}, [2]rune{0x20000, 0x2A6DF},
			[2]rune{0x3040, 0x30FF}, [2]rune{0xAC00, 0xD7A3}, [2]rune{0xF900, 0xFAFF}, [2]rune{0x3000, 0x303F})
	}},
	{"arabic", func(r *rand.Rand) string { return runs(r, 10, [2]rune{0x600, 0x6FF}, [2]rune{0xFB50, 0xFDFF}) }},
	{"hebrew", func(r *rand.Rand) string { return runs(r, 10, [2]rune{0x591, 0x5F4}) }},
	{"devanagari", func(r *rand.Rand) string {
		return pick(r, "हिन्दी", "नमस्ते", "क्षत्रिय", "०१२३", "") + runs(r, 8, [2]rune{0x900, 0x97F})
	}},
	{"thai", func(r *rand.Rand) string {
		return pick(r, "ภาษาไทย", "สวัสดี", "๑๒๓") + runs(r, 8, [2]rune{0xE01, 0xE5B})
	}},
	{"emoji", func(r *rand.Rand) string {
		base := []string{"👍", "👋", "🧑", "👩", "👨", "🦙", "🚀", "😁", "✅", "❤", "☕", "🫠", "🐈", "🏳", "1", "#"}
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteString(base[r.IntN(len(base))])
			switch r.IntN(6) {
			case 0:
				b.WriteRune(runeIn(r, 0x1F3FB, 0x1F3FF)) // skin tone
			case 1:
				b.WriteString("\u200d" + base[r.IntN(len(base))]) // ZWJ
			case 2:
				b.WriteString("\ufe0f") // VS16
			case 3:
				b.WriteString("\u20e3") // keycap
			}
		}
		if r.IntN(4) == 0 {
			b.WriteString(pick(r, "👨‍👩‍👧‍👦", "🏳️‍🌈", "😶‍🌫️", "👩🏾‍💻", "🧑‍🤝‍🧑", "🇫🇷", "🇯🇵", "1️⃣", "🐈‍⬛"))
		}
		return b.String()
	}},
	{"combining", func(r *rand.Rand) string {
		return pick(r, "e", "a", "", " ", "n", "ก", "क") + runs(r, 4, [2]rune{0x300, 0x36F}, [2]rune{0x1AB0, 0x1AFF},
			[2]rune{0x20D0, 0x20FF}, [2]rune{0xFE20, 0xFE2F})
	}},
	{"math-alnum", func(r *rand.Rand) string { return runs(r, 8, [2]rune{0x1D400, 0x1D7FF}) }},
	{"whitespace", func(r *rand.Rand) string {
		ws := []rune{' ', ' ', ' ', '\t', '\n', '\v', '\f', '\r', 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
			0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0x180E,
			0x200B, 0xFEFF}
		var b strings.Builder
		for range 1 + r.IntN(5) {
			b.WriteRune(ws[r.IntN(len(ws))])
		}
		return b.String()
	}},
	{"newlines", func(r *rand.Rand) string {
		return pick(r, "\r\n", "\n", "\r", "\n\n", "\r\n\r\n", " \n", "\n ", "\t\n", " \r\n ")
	}},
	{"digits", func(r *rand.Rand) string {
		return runs(r, 12, [2]rune{'0', '9'}, [2]rune{'0', '9'}, [2]rune{0x660, 0x669}, [2]rune{0x966, 0x96F},
			[2]rune{0xE50, 0xE59}, [2]rune{0xFF10, 0xFF19}, [2]rune{0x9E6, 0x9EF}, [2]rune{0x1D7CE, 0x1D7FF},
			[2]rune{0x2160, 0x2188}, [2]rune{0xB2, 0xB3})
	}},
	{"ascii-digits", func(r *rand.Rand) string { return runs(r, 14, [2]rune{'0', '9'}) }},
	{"punct-symbols", func(r *rand.Rand) string {
		return runs(r, 5, [2]rune{'!', '/'}, [2]rune{':', '@'}, [2]rune{'[', '`'}, [2]rune{'{', '~'},
			[2]rune{0xA1, 0xBF}, [2]rune{0x2010, 0x205E}, [2]rune{0x20A0, 0x20C0}, [2]rune{0x2190, 0x21FF},
			[2]rune{0xFF01, 0xFF0F}, [2]rune{0x3001, 0x3003})
	}},
	{"markers", func(r *rand.Rand) string { return templateMarkers[r.IntN(len(templateMarkers))] }},
	{"fullwidth-hangul", func(r *rand.Rand) string { return runs(r, 6, [2]rune{0xFF21, 0xFF5A}, [2]rune{0x1100, 0x11FF}) }},
	{"controls-format", func(r *rand.Rand) string {
		return runs(r, 3, [2]rune{1, 8}, [2]rune{0x0E, 0x1F}, [2]rune{0x7F, 0x9F}, [2]rune{0xAD, 0xAD},
			[2]rune{0x200C, 0x200F}, [2]rune{0x2060, 0x2064}, [2]rune{0xE000, 0xE010}, [2]rune{0xFFF9, 0xFFFD},
			[2]rune{0xE0001, 0xE007F}, [2]rune{0x10FFF0, 0x10FFFF}, [2]rune{0x0378, 0x0379})
	}},
	{"invalid-utf8", func(r *rand.Rand) string {
		return pick(r, "\xff", "\xfe", "\xe4\xbd", "\x80", "\xc3", "\xf0\x9f\x98", "\xed\xa0\x80", "\xc0\xaf", "\xe0\x80\x80",
			"\xf8\x88\x80\x80\x80", "\xc3(", "\xf0\x90\x80")
	}},
	{"long-runs", func(r *rand.Rand) string {
		return strings.Repeat(pick(r, " ", "a", "1", "\n", "ab", "。", "\t", "_", "-", "🦙", "é"), 20+r.IntN(60))
	}},
	{"code", func(r *rand.Rand) string {
		return pick(r, "func main() {", "\tif x := f(); x != nil {", "    return 0;", "#include <stdio.h>",
			"x = [1, 2, 3]", "def f(a, b):", "a->b", "i++", "/* c */", "<div class=\"x\">", "$var", "a::b", "===")
	}},
}

// corpusString returns one random string of 1 to 12 pieces.
func corpusString(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(12) {
		b.WriteString(corpusClasses[r.IntN(len(corpusClasses))].gen(r))
		if r.IntN(3) == 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// fuzzCorpus returns n deterministic strings (seed fixed), after a few fixed edge cases.
func fuzzCorpus(n int) []string {
	texts := []string{"", " ", "  ", "\n", "\r\n", "\t", "a", " a", "<s>", "<|im_start|>user\nhi<|im_end|>\n",
		"<think>\n\n</think>\n\n", " <think> ", "\xff\xfe", "🦙", "👨‍👩‍👧‍👦", "▁", "1234567", "  \n  \n\n ",
		"Hello   world", "a\u0301", "'s's", "\u3000\u3000"}
	r := rand.New(rand.NewPCG(0x6c6c616d612e6370, 5))
	for len(texts) < n {
		texts = append(texts, corpusString(r))
	}
	return texts[:n]
}

// TestFuzzCorpusCoversItsRanges guards the generator: 2,000 strings, every class present, no code point the
// reference cannot write back.
func TestFuzzCorpusCoversItsRanges(t *testing.T) {
	texts := fuzzCorpus(2000)
	all := strings.Join(texts, "\x00")
	for _, want := range []string{"\u200d", "\U0001F3FB", "\r\n", "\u3000", "<|im_start|>", "<think>", "<s>", "\u0301",
		"\U0001D7CE", "\u0966", "\u0e50", "\u0660", "\xff"} {
		if !strings.Contains(all, want) {
			t.Errorf("corpus never contains %q", want)
		}
	}
	seen := map[string]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		seen[corpusClasses[r.IntN(len(corpusClasses))].name] = true
	}
	if len(corpusClasses) < 15 || len(seen) != len(corpusClasses) {
		t.Errorf("%d classes, %d drawn", len(corpusClasses), len(seen))
	}
	for i, s := range texts {
		for j := 0; j < len(s); {
			c, n := utf8.DecodeRuneInString(s[j:])
			if c == utf8.RuneError && n == 1 && j+3 < len(s) && s[j] >= 0xF4 && s[j] <= 0xF7 && (s[j] > 0xF4 || s[j+1] >= 0x90) {
				t.Fatalf("text %d holds a code point above U+10FFFF", i)
			}
			j += n
		}
	}
	t.Logf("%d strings from %d classes, %d bytes", len(texts), len(corpusClasses), len(all))
}
