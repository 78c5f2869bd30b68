package sample

import (
	"errors"
	"strings"
	"testing"

	"github.com/bankml/bankml/grammar"
)

// letters is a made-up vocabulary: a token per piece, the last one ends
// generation.
type letters []string

func (l letters) NVocab() int                          { return len(l) }
func (l letters) TokenToPiece(id int32, _ bool) []byte { return []byte(l[id]) }
func (l letters) IsEOG(id int32) bool                  { return int(id) == len(l)-1 }
func (l letters) Tokenize(text string, _, _ bool) []int32 {
	var out []int32
	for _, c := range text {
		for i, p := range l {
			if p == string(c) {
				out = append(out, int32(i))
			}
		}
	}
	return out
}

var abc = letters{"a", "b", "c", "{", "}", "</s>"}

func grammarModel() Model {
	return Model{NVocab: len(abc), Grammar: grammar.NewVocab(abc)}
}

func TestNewRefusesAGrammarThatDoesNotParse(t *testing.T) {
	p := DefaultParams()
	p.Grammar = "root ::= foo\n"
	_, err := New(p, grammarModel())
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "grammar" || !errors.Is(err, ErrInvalid) ||
		pe.Reason != "failed to parse grammar: Undefined rule identifier 'foo'" {
		t.Fatalf("New: %v", err)
	}
	p.Grammar = `root ::= "a"`
	if _, err := New(p, Model{NVocab: len(abc)}); !errors.As(err, &pe) || pe.Param != "grammar" {
		t.Fatalf("New without a grammar vocabulary: %v", err)
	}
}

func TestPromptTokensDoNotReachTheGrammar(t *testing.T) {
	p := DefaultParams()
	p.Temp = 0
	p.Grammar = "root ::= \"{\" [abc]* \"}\"\n"
	c, err := New(p, grammarModel())
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []int32{0, 1, 2} { // prompt "abc": the grammar has not started
		c.Accept(tok)
	}
	logits := []float32{5, 4, 3, 1, 0, 9} // "</s>" most likely, then "a"
	tok, err := c.Sample(logits)
	if err != nil || tok != 3 {
		t.Fatalf("Sample: %d, %v; want \"{\" (3): the grammar starts at the first generated token", tok, err)
	}
	c.Accept(tok)
	if tok, err = c.Sample(logits); err != nil || tok != 0 {
		t.Fatalf("Sample: %d, %v; want \"a\" (0)", tok, err)
	}
}

func TestGenerationPromptFeedsOnlyOutputFormatGrammars(t *testing.T) {
	p := DefaultParams()
	p.Temp = 0
	p.Grammar = "root ::= \"{\" \"a\" \"}\"\n"
	p.GenerationPrompt = "{"
	logits := []float32{0, 0, 0, 5, 1, 0}
	for _, tc := range []struct {
		typ  GrammarType
		want int32
	}{{GrammarUser, 3}, {GrammarOutputFormat, 0}, {GrammarToolCalls, 0}} {
		p.GrammarType = tc.typ
		c, err := New(p, grammarModel())
		if err != nil {
			t.Fatal(err)
		}
		c.Reset()
		if tok, err := c.Sample(logits); err != nil || tok != tc.want {
			t.Errorf("type %d: token %d, %v; want %d", tc.typ, tok, err, tc.want)
		}
	}
	p.GrammarType, p.GenerationPrompt = GrammarOutputFormat, "b"
	if _, err := New(p, grammarModel()); err == nil || !strings.Contains(err.Error(), "generation_prompt") {
		t.Fatalf("a generation prompt the grammar refuses: %v", err)
	}
}

func TestLazyTriggersByType(t *testing.T) {
	p := DefaultParams()
	p.Temp = 0
	p.Grammar = "root ::= \"b\" \"c\"\n"
	p.GrammarLazy = true
	logits := []float32{1, 5, 0, 0, 0, 0} // "b" most likely
	for _, tc := range []struct {
		name    string
		trigger GrammarTrigger
	}{
		{"token", GrammarTrigger{Type: TriggerToken, Token: 1}},
		{"word", GrammarTrigger{Type: TriggerWord, Value: "b"}},
		{"pattern", GrammarTrigger{Type: TriggerPattern, Value: "(b)"}},
		{"full pattern", GrammarTrigger{Type: TriggerPatternFull, Value: "a*(b)"}},
	} {
		p.GrammarTriggers = []GrammarTrigger{tc.trigger}
		c, err := New(p, grammarModel())
		if err != nil {
			t.Fatal(err)
		}
		c.Reset()
		for _, want := range []int32{1, 2} { // "b" triggers, then the grammar forces "c"
			tok, err := c.Sample(logits)
			if err != nil || tok != want {
				t.Fatalf("%s: token %d, %v; want %d", tc.name, tok, err, want)
			}
			c.Accept(tok)
		}
		if c.Grammar().Awaiting() {
			t.Errorf("%s: still awaiting", tc.name)
		}
	}
}
