package chat_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/internal/reference"
)

// answerFor makes a model answer in the template's own format: the assistant turn the template renders for msg
// after a user turn, less the generation prompt; sometimes cut before its end-of-turn marker, truncated, or with
// extra text, as a model's output can be.
func answerFor(t *testing.T, tmpl *chat.Template, r *rand.Rand, msg chat.Message) (string, bool) {
	t.Helper()
	user := chat.Message{Role: "user", Content: "Hi"}
	full, err := tmpl.Apply(chat.Inputs{Messages: []chat.Message{user, msg}})
	if err != nil {
		return "", false
	}
	head, err := tmpl.Apply(chat.Inputs{Messages: []chat.Message{user}, AddGenerationPrompt: true})
	if err != nil || !strings.HasPrefix(full.Prompt, head.Prompt) {
		return "", false
	}
	ans := full.Prompt[len(head.Prompt):]
	switch r.IntN(6) {
	case 0, 1: // the model stops at its end-of-turn token: cut the marker text after the last visible character
		ans = strings.TrimRight(ans, " \n")
		for _, m := range []string{"<|im_end|>", "<|eot_id|>", "</s>", "<|end|>", "<end_of_turn>", "<|END_OF_TURN_TOKEN|>", tmpl.Vocab().EOS} {
			if m != "" && strings.HasSuffix(ans, m) {
				ans = strings.TrimSuffix(ans, m)
				break
			}
		}
	case 2: // cut anywhere
		if len(ans) > 0 {
			ans = ans[:r.IntN(len(ans))]
		}
	case 3: // trailing text the format does not expect
		ans += pick(r, []string{" trailing words", "\n}", "<tool_call>", "\xff\xfe", "{\"name\""})
	}
	return ans, true
}

// answerMessage draws an assistant message: content, reasoning and tool calls of the request's tools.
func answerMessage(r *rand.Rand, tools []chat.Tool) chat.Message {
	m := chat.Message{Role: "assistant"}
	if r.IntN(3) > 0 {
		m.Content = text(r)
	}
	if r.IntN(3) == 0 {
		m.ReasoningContent = text(r)
	}
	if len(tools) > 0 && r.IntN(3) > 0 {
		for range 1 + r.IntN(2) {
			args, _ := json.Marshal(toolArgs(r))
			var s string
			if err := json.Unmarshal(args, &s); err != nil {
				s = string(args)
			}
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{Name: tools[r.IntN(len(tools))].Name, Arguments: s})
		}
	}
	if m.Content == "" && len(m.ToolCalls) == 0 {
		m.Content = "ok"
	}
	return m
}

// freeAnswers are answers written by hand: partial and malformed JSON, markers in odd places, invalid UTF-8.
var freeAnswers = []string{
	"", " ", "Hello world", "<think>\nhm\n</think>\n\nDone", "<think>unfinished", "</think>only end",
	"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"q\": \"Paris\"}}\n</tool_call>",
	"Let me check.<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"é\\u00e9\\n\", \"n\": 3}}\n</tool_call>",
	"<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"q\": \"1+1\", \"x\": [1.5, -2e3, true, null, {\"k\": \"v\"}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>",
	"<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>", "<tool_call>\n{\"name\": \"get_weather\", \"argu",
	"{\"name\": \"get_weather\", \"parameters\": {\"q\": \"x\"}}", "{\"answer\": \"yes\"}", "```json\n{\"answer\": \"no\"}\n```",
	"[1, 2, 3]", "\"yes\"", "{\"name\": \"Al\", \"age\": 3, \"tags\": [\"a\"]}", "bad \xc3 utf8 \xff end",
	"<think>\n\xe2\x82 cut</think>x", "[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"q\": \"z\"}}]",
	"<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"q\": \"x\"}}", "<function=get_weather>{\"q\": \"a\"}</function>",
}

// TestAnswerParsesMatchReference parses answers with the parser of seeded constrained requests on both sides:
// every byte prefix as a partial answer and the whole answer as complete must give the same content, reasoning
// and tool calls (or both fail), as common_chat_parse in libllama-common gives them.
func TestAnswerParsesMatchReference(t *testing.T) {
	ref := oracle(t)
	nReq, nAns := 24, 8
	if testing.Short() {
		nReq, nAns = 6, 4
	}
	for _, spec := range fixtureSpecs {
		f := loadFixtures(t)[spec.name]
		t.Run(f.name, func(t *testing.T) {
			checkAnswerParses(t, ref, f, f.gen, nReq, nAns, 0x7003)
		})
	}
}

// checkAnswerParses runs the parse oracle on one template: nReq seeded requests, nAns answers each (plus two
// written by hand), every prefix.
func checkAnswerParses(t *testing.T, ref *reference.ChatShim, f *fixture, o genOptions, nReq, nAns int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(len(f.name)), seed))
	parses, answers, failing := 0, 0, 0
	withCalls, withReasoning := 0, 0
	for i := range nReq {
		body := genToolRequest(r, o, i)
		in, err := chat.ParseRequest(body)
		if err != nil {
			continue
		}
		res, err := f.tmpl.Apply(in)
		if err != nil {
			continue
		}
		var texts []string
		for range nAns {
			if a, ok := answerFor(t, f.tmpl, r, answerMessage(r, in.Tools)); ok {
				texts = append(texts, a)
			}
		}
		for range 2 {
			texts = append(texts, freeAnswers[r.IntN(len(freeAnswers))])
		}
		a, err := ref.ApplyParse(f.path, body, -1, texts)
		if err != nil {
			t.Fatal(err)
		}
		if a.Error != "" {
			t.Fatalf("case %d: the reference refused: %s", i, a.Error)
		}
		for k, text := range texts {
			answers++
			final := a.Parses[k][len(a.Parses[k])-1]
			if len(final.ToolCalls) > 0 {
				withCalls++
			}
			if final.ReasoningContent != "" {
				withReasoning++
			}
			for n, want := range a.Parses[k] {
				partial := n < len(text)+1
				prefix := text
				if partial {
					prefix = text[:n]
				}
				got, gerr := res.Parser.Parse(prefix, partial)
				parses++
				if d := parseDiff(want, got, gerr); d != "" {
					failing++
					t.Errorf("case %d answer %q prefix %d (partial %v): %s\nbody %s", i, text, n, partial, d, body)
					break
				}
			}
			if failing > 3 {
				t.Fatal("too many differences")
			}
		}
	}
	t.Logf("%s: %d of %d parses of %d answers (every prefix; %d with tool calls, %d with reasoning) as common_chat_parse",
		f.name, parses-failing, parses, answers, withCalls, withReasoning)
}

// parseDiff compares one parse with the reference's.
func parseDiff(want reference.ChatParse, got chat.Answer, err error) string {
	switch {
	case want.Error != "" && err != nil:
		return ""
	case want.Error != "":
		return fmt.Sprintf("the reference failed (%s), bankml parsed %+v", want.Error, got)
	case err != nil:
		return fmt.Sprintf("bankml failed (%v), the reference parsed %+v", err, want)
	}
	if want.Content != got.Content || want.ReasoningContent != got.ReasoningContent || len(want.ToolCalls) != len(got.ToolCalls) {
		return fmt.Sprintf("ref %+v\nbank %+v", want, got)
	}
	for i, c := range want.ToolCalls {
		g := got.ToolCalls[i]
		if c.Name != g.Name || c.Arguments != g.Arguments || c.ID != g.ID {
			return fmt.Sprintf("tool call %d: ref %+v bank %+v", i, c, g)
		}
	}
	return ""
}
