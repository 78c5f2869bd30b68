package grammar

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// These are regression tests on a small made-up vocabulary; the oracles
// against the reference are in the *_oracle_test.go files.

// fakeTokens is a vocabulary of given pieces; the last one ends generation,
// and Tokenize finds a piece written whole.
type fakeTokens []string

func (f fakeTokens) NVocab() int                             { return len(f) }
func (f fakeTokens) TokenToPiece(id int32, _ bool) []byte    { return []byte(f[id]) }
func (f fakeTokens) IsEOG(id int32) bool                     { return int(id) == len(f)-1 }
func (f fakeTokens) Tokenize(text string, _, _ bool) []int32 { return tokenizeFake(f, text) }

func tokenizeFake(f fakeTokens, text string) []int32 {
	for i, p := range f {
		if p == text {
			return []int32{int32(i)}
		}
	}
	return nil
}

var fake = fakeTokens{"a", "b", "ab", "ba", "aab", "{", "}", "\"", " ", "é", "\xc3", "\xa9", "日", "\xe6\x97", "\xa5",
	"\x00x", "", "<think>", "x\"y", "\x80", "</s>"}

func TestRepetitionWithTheMaximumBelowTheMinimumIsRefused(t *testing.T) {
	_, err := Parse("root ::= \"a\"{3,1}\n", nil)
	var pe *ParseError
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "maximum is below the minimum") {
		t.Fatalf("Parse: %v", err)
	}
}

func TestEmptyTextIsRefused(t *testing.T) {
	_, err := New("", NewVocab(fake), Options{})
	var ie *InitError
	if !errors.As(err, &ie) || ie.Msg != "failed to parse grammar" {
		t.Fatalf("New: %v", err)
	}
}

func TestEndOfGenerationOnlyWhereTheGrammarCanEnd(t *testing.T) {
	v := NewVocab(fake)
	g, err := New("root ::= \"a\" \"b\"?\n", v, Options{})
	if err != nil {
		t.Fatal(err)
	}
	eog := int32(len(fake) - 1)
	if g.Allows(eog) || g.Mask().Allowed(eog) || g.CanEnd() {
		t.Fatal("end of generation allowed before \"a\"")
	}
	if err := g.Accept(eog); err == nil {
		t.Fatal("Accept took an end-of-generation token where the grammar cannot end")
	}
	if err := g.Accept(0); err != nil {
		t.Fatal(err)
	}
	if !g.Allows(eog) || !g.Mask().Allowed(eog) || !g.CanEnd() {
		t.Fatal("end of generation refused after \"a\"")
	}
	if err := g.Accept(eog); err != nil {
		t.Fatal(err)
	}
}

func TestAcceptRefusesATokenNoStackTakes(t *testing.T) {
	g, err := New("root ::= \"a\"+\n", NewVocab(fake), Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = g.Accept(1) // "b"
	var ae *AcceptError
	if !errors.As(err, &ae) || ae.Msg != "Unexpected empty grammar stack after accepting piece: b (1)" {
		t.Fatalf("Accept: %v", err)
	}
	if err := g.Accept(0); err != nil {
		t.Fatalf("the grammar changed after the refused token: %v", err)
	}
}

func TestLazyGrammarConstrainsNothingUntilItsTrigger(t *testing.T) {
	g, err := New("root ::= \"{\" [a-z]* \"}\"\n", NewVocab(fake), Options{Lazy: true, TriggerPatterns: []string{`[\s\S]*?(\{)[\s\S]*`}})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Mask().All() || !g.Allows(1) {
		t.Fatal("a lazy grammar constrains before its trigger")
	}
	for _, tok := range []int32{0, 8, 5} { // "a", " ", "{"
		if err := g.Accept(tok); err != nil {
			t.Fatal(err)
		}
	}
	if g.Awaiting() {
		t.Fatal("still awaiting after \"{\"")
	}
	if g.Allows(7) || !g.Allows(0) || !g.Allows(6) {
		t.Fatal("after the trigger the grammar should allow letters and \"}\" only")
	}
}

// TestMaskAgreesWithAllows walks random paths through grammars over the fake
// vocabulary (pieces ending in partial UTF-8 sequences, NUL bytes, invalid
// bytes, a token terminal) and checks the whole-vocabulary mask against the
// one-token check at every step.
func TestMaskAgreesWithAllows(t *testing.T) {
	v := NewVocab(fake)
	grammars := []string{
		"root ::= ( [a-b] | \"é\" | \"日\" | \"{\" [^}]* \"}\" )*\n",
		"root ::= [^\\x00-\\x7f]+ | \"a\" <think> \"b\"*\n",
		"root ::= ( !<think> )* \n",
		"root ::= \"\\\"\" [^\"]* \"\\\"\" \" \"?\n",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	checks := 0
	for _, text := range grammars {
		for range 20 {
			g, err := New(text, v, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for step := range 12 {
				m := g.Mask()
				var allowed []int32
				for id := range int32(len(fake)) {
					if m.Allowed(id) != g.Allows(id) {
						t.Fatalf("%q step %d token %d %q: mask %v, Allows %v", text, step, id, fake[id], m.Allowed(id), g.Allows(id))
					}
					checks++
					if m.Allowed(id) && !fake.IsEOG(id) {
						allowed = append(allowed, id)
					}
				}
				if len(allowed) == 0 {
					break
				}
				if err := g.Accept(allowed[rng.IntN(len(allowed))]); err != nil {
					break // the reference's apply and accept disagree on some pieces: accept may refuse
				}
			}
		}
	}
	t.Logf("%d tokens checked", checks)
}

func TestRegexEscape(t *testing.T) {
	if got := RegexEscape(`a.b*c(d)[e]{f}|g^h$i\j+k?`); got != `a\.b\*c\(d\)\[e\]\{f\}\|g\^h\$i\\j\+k\?` {
		t.Fatalf("RegexEscape: %s", got)
	}
}

func TestFromJSONSchemaNamesTheProblem(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type": "kaboom"}`, "JSON schema conversion failed:\nJSON schema error at #: unrecognized type kaboom"},
		{`{"type": "string", "pattern": "^(a$"}`, "JSON schema conversion failed:\nInvalid pattern ^(a$: unbalanced parentheses"},
		{`{"$ref": "#/$defs/x"}`, "JSON schema conversion failed:\nJSON schema error at #: cannot resolve $ref #/$defs/x, $defs not found"},
	} {
		_, err := FromJSONSchema([]byte(tc.schema), true)
		var se *SchemaError
		if !errors.As(err, &se) || se.Msg != tc.want {
			t.Errorf("%s: %v, want %q", tc.schema, err, tc.want)
		}
	}
	if _, err := FromJSONSchema([]byte(`{"type": `), true); err == nil {
		t.Error("invalid JSON converted")
	}
}

func TestBuildSharesNamesAsTheConverter(t *testing.T) {
	doc, err := ParseSchema([]byte(`{"type": "object", "properties": {"x": {"type": "integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	g, err := Build(func(b *Builder) {
		names = append(names, b.AddSchema("args", doc.Root), b.AddRule("root", "args"), b.AddRule("root", "args args"))
	}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"args", "root", "root0"}) || !strings.Contains(g, "root0 ::= args args\n") {
		t.Fatalf("names %v, grammar:\n%s", names, g)
	}
}

// TestGrammarsShareTheirAutomatonSafely runs grammars made from one text
// over one Vocab in parallel (their automaton is shared): each sees the
// masks a lone grammar sees (run with -race).
func TestGrammarsShareTheirAutomatonSafely(t *testing.T) {
	text := "root ::= ( [a-b] | \"é\" | \"日\" | \"{\" [^}]* \"}\" )* \" \"\n"
	walk := func(v *Vocab, seed uint64) []int {
		g, err := New(text, v, Options{})
		if err != nil {
			t.Error(err)
			return nil
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		var counts []int
		for range 30 {
			m := g.Mask()
			counts = append(counts, m.Count())
			var allowed []int32
			for id := range int32(len(fake)) {
				if m.Allowed(id) && !fake.IsEOG(id) {
					allowed = append(allowed, id)
				}
			}
			if len(allowed) == 0 || g.Accept(allowed[rng.IntN(len(allowed))]) != nil {
				break
			}
		}
		return counts
	}
	shared := NewVocab(fake)
	results := make([][]int, 8)
	done := make(chan int)
	for i := range results {
		go func() {
			results[i] = walk(shared, uint64(i))
			done <- i
		}()
	}
	for range results {
		<-done
	}
	for i, got := range results {
		if want := walk(NewVocab(fake), uint64(i)); !slices.Equal(got, want) {
			t.Errorf("walk %d: mask sizes %v, alone %v", i, got, want)
		}
	}
}
