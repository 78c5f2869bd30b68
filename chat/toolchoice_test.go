package chat_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/grammar"
	"github.com/bankml/bankml/internal/testdata"
)

// byteTokens is a vocabulary of the 256 bytes and an end-of-generation token, enough to feed a grammar text.
type byteTokens struct{}

func (byteTokens) NVocab() int { return 257 }
func (byteTokens) TokenToPiece(id int32, special bool) []byte {
	if id < 256 {
		return []byte{byte(id)}
	}
	return nil
}
func (byteTokens) IsEOG(id int32) bool                 { return id == 256 }
func (byteTokens) Tokenize(string, bool, bool) []int32 { return nil }
func qwen3Template(t *testing.T) *chat.Template {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testdata.ModelsDir(t), "qwen3", "tokenizer_config.json"))
	if err != nil {
		testdata.Absent(t, "qwen3 tokenizer_config.json: %v", err)
	}
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	return mustNew(t, cfg.ChatTemplate, chat.Vocab{EOS: "<|im_end|>", Control: []string{"<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "</think>"}})
}

// TestRequiredToolChoiceHoldsTheAnswerToACall: with tool_choice "required" (and a named function, bankml's
// required over that function alone) the grammar is not lazy and the answer cannot end before a complete tool
// call; as in llama.cpp's grammar for it (the autoparser's optional content until the call marker, then the
// calls), text without the marker may come before the call. A named choice admits no other function. With
// "auto" the grammar is lazy (it wakes at the marker).
func TestRequiredToolChoiceHoldsTheAnswerToACall(t *testing.T) {
	tmpl := qwen3Template(t)
	const tools = `"tools": [{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}, {"type": "function", "function": {"name": "other", "parameters": {}}}]`
	apply := func(choice string) chat.Result {
		t.Helper()
		in, err := chat.ParseRequest([]byte(`{"messages": [{"role": "user", "content": "x"}], ` + tools + `, "tool_choice": ` + choice + `, "chat_template_kwargs": {"enable_thinking": false}}`))
		if err != nil {
			t.Fatal(err)
		}
		res, err := tmpl.Apply(in)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := apply(`"auto"`); !res.GrammarLazy || res.Grammar == "" {
		t.Fatalf("auto: lazy %v, grammar %d bytes; want a lazy grammar", res.GrammarLazy, len(res.Grammar))
	}
	v := grammar.NewVocab(byteTokens{})
	search := "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"Paris\"}}\n</tool_call>"
	other := "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"
	for _, c := range []struct {
		name, choice, answer string
		accepted, canEnd     bool
	}{
		{"required, nothing yet", `"required"`, "", true, false},
		{"required, text before any call", `"required"`, "Let me look that up. ", true, false},
		{"required, a complete call", `"required"`, search, true, true},
		{"required, text then a complete call", `"required"`, "Let me look that up. " + search, true, true},
		{"required, the other function", `"required"`, other, true, true},
		{"required, a call cut short", `"required"`, search[:30], true, false},
		{"named, a call to it", `{"type": "function", "function": {"name": "search"}}`, search, true, true},
		{"named, a call to another function", `{"type": "function", "function": {"name": "search"}}`, other, false, false},
		{"named, text before any call", `{"type": "function", "function": {"name": "search"}}`, "Sure.", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := apply(c.choice)
			if res.GrammarLazy || res.Grammar == "" {
				t.Fatalf("lazy %v, grammar %d bytes; want a grammar from the first token", res.GrammarLazy, len(res.Grammar))
			}
			g, err := grammar.New(res.Grammar, v, grammar.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.AcceptPiece(0, res.GenerationPrompt); err != nil {
				t.Fatalf("the generation prompt %q: %v", res.GenerationPrompt, err)
			}
			err = g.AcceptPiece(0, c.answer)
			var ae *grammar.AcceptError
			if c.accepted != (err == nil) || err != nil && !errors.As(err, &ae) {
				t.Fatalf("answer %q: %v, want accepted %v", c.answer, err, c.accepted)
			}
			if err == nil && g.CanEnd() != c.canEnd {
				t.Fatalf("answer %q: may end %v, want %v", c.answer, g.CanEnd(), c.canEnd)
			}
		})
	}
}
