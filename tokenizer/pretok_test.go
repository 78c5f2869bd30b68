package tokenizer

import (
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

// TestPreTokenizerSplitsMatchReference cuts the fuzz corpus with every implemented pre-tokenizer and compares the
// byte-encoded words with the reference's own unicode_regex_split given the same expressions (its hand-written
// splitters for the expressions it recognises, std::regex / std::wregex for the others).
func TestPreTokenizerSplitsMatchReference(t *testing.T) {
	lib := loadReference(t)
	u, err := lib.Unicode()
	if err != nil {
		t.Fatal(err)
	}
	// llama_tokenize never splits an empty fragment; on "" the reference falls back from its hand-written splitter
	// to std::regex, which throws on \p{AFMoE_digits} and \p{Han}.
	texts := fuzzCorpus(251)[1:]
	kinds := make([]string, 0, len(preRegexes))
	for k := range preRegexes {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	total, totalSame := 0, 0
	var buf splitBuf
	for _, kind := range kinds {
		p, err := newPreTokenizer(kind)
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		same := 0
		for _, text := range texts {
			want := u.RegexSplit(text, preRegexes[kind], true)
			var got []string
			p.split(text, &buf, true, func(w []byte) { got = append(got, string(w)) })
			if !slices.Equal(got, want) {
				t.Errorf("%s %q:\n got %q\nwant %q", kind, text, got, want)
				continue
			}
			same++
		}
		total += len(texts)
		totalSame += same
		t.Logf("%-18s unicode_regex_split: %d of %d identical", kind, same, len(texts))
	}
	t.Logf("all pre-tokenizers: %d of %d identical", totalSame, total)
}

// TestStdRegexMatchesReferenceOnHandPickedExpressions runs expressions that unicode_regex_split hands to
// std::regex (on the collapsed text when they name \p{...}) or std::wregex, chosen for the places where engines
// differ: greedy and lazy quantifiers, counted repetitions, alternation order with backtracking, lookaheads,
// anchors, word boundaries, empty matches, bracket-expression edge cases, and the hand-written splitters'
// expressions wrapped in a group so that the reference runs them through std::regex instead.
func TestStdRegexMatchesReferenceOnHandPickedExpressions(t *testing.T) {
	lib := loadReference(t)
	u, err := lib.Unicode()
	if err != nil {
		t.Fatal(err)
	}
	wrap := func(e string) string { return "(?:" + e + ")" }
	exprs := [][]string{
		{"a+?b", "x*"}, {"\\s+$"}, {"^\\s+"}, {"\\b\\w+\\b"}, {"\\B."}, {"(?=a)"}, {"(?!a)."},
		{"\\d{2,3}?"}, {"\\d{2,}"}, {"(a|ab)(c|bcd)"}, {"[\\s\\S]"}, {"[^\\d\\s]+"}, {"[a\\-z]+"}, {"[-.]+|[a-]"},
		{"[]a]"}, {"(?:ab|a)*c"}, {"\\x41+|\\u00e9"}, {"\\t|\\n|\\r|\\v|\\f"}, {".+"}, {"[\\p{L}\\p{M}]+|\\p{N}"},
		{"\\p{Lu}\\p{Ll}*"}, {"[^\\p{P}\\p{S}\\s]+"}, {"(\\p{N}{3})+(?!\\p{N})"}, {"\\s*"},
		{wrap("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)")},
		{wrap("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")},
		{wrap("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")},
		{wrap("[^\\n]+|[\\n]+")},
	}
	texts := append([]string{"aab ab b", "x  \t\n", "  lead", "word, x_y 12", "aaa", "abcd abc",
		"1234567 12", "a-z.--", "]a]", "ababc", "A\u00e9", "\t\n\r\v\f", "ÉtéÀ niño", "don't 'S"}, fuzzCorpus(121)[1:]...)
	same, n := 0, 0
	var buf splitBuf
	for _, ex := range exprs {
		p, err := compilePreTokenizer("test", ex)
		if err != nil {
			t.Errorf("%q: %v", ex, err)
			continue
		}
		for _, text := range texts {
			for _, enc := range []bool{false, true} {
				n++
				want := u.RegexSplit(text, ex, enc)
				var got []string
				p.split(text, &buf, enc, func(w []byte) { got = append(got, string(w)) })
				if !slices.Equal(got, want) {
					if n-same <= 10 {
						t.Errorf("%q on %q (byte_encode %v):\n got %q\nwant %q", ex, text, enc, got, want)
					}
					continue
				}
				same++
			}
		}
	}
	t.Logf("hand-picked std::regex expressions: %d of %d splits identical", same, n)
}

// TestCodePointsAboveUnicodeReadAsReplacement: a 4-byte sequence above U+10FFFF, on which the reference's BPE and
// WPM tokenizers end the process (std::invalid_argument "invalid codepoint"), tokenizes as U+FFFD in bankml (a
// deliberate difference, see the package doc) instead of panicking.
func TestCodePointsAboveUnicodeReadAsReplacement(t *testing.T) {
	for _, name := range []string{"ggml-vocab-gpt-2.gguf", "ggml-vocab-bert-bge.gguf"} {
		tok := loadAnyTokenizer(t, filepath.Join(modelsDir(t), "vocab", name))
		for _, bad := range []string{"\xf5\x80\x80\x80", "\xf4\x90\x80\x80", "\xf7\xbf\xbf\xbf"} {
			got := tok.Tokenize("a"+bad+"b", true, true)
			if want := tok.Tokenize("a\ufffdb", true, true); !slices.Equal(got, want) {
				t.Errorf("%s: %q gives %v, want %v (as U+FFFD)", name, bad, got, want)
			}
		}
	}
}
