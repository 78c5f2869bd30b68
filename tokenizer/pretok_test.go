package tokenizer

import (
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
