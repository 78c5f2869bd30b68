package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/tokenizer"
)

// releasedTokens are the tokens of an answer that llama-server releases (and gives logprobs for): those
// after which the answer's text does not end inside a UTF-8 sequence (validate_utf8's rule, judged from the
// lead bytes among the last four bytes).
func releasedTokens(tok tokenizer.Tokenizer, ids []int32) []int32 {
	var text []byte
	var out []int32
	for _, id := range ids {
		text = append(text, tok.TokenToPiece(id, false)...)
		pending := false
		for i := 1; i <= 4 && i <= len(text); i++ {
			c := text[len(text)-i]
			if c&0xE0 == 0xC0 && i < 2 || c&0xF0 == 0xE0 && i < 3 || c&0xF8 == 0xF0 && i < 4 {
				pending = true
			}
		}
		if !pending {
			out = append(out, id)
		}
	}
	return out
}

// TestRunChatAndServeGiveTheSameTokens: `bankml run --chat` and `bankml serve`'s /v1/chat/completions,
// given the same conversation turn by turn (the system message, each user message and the answers so far),
// give the same answers: the same prompt and cached token counts, the same answer token count, and the same
// tokens (the ids of serve's logprobs entries, which llama-server gives for every released token), greedy and
// with a seeded draw. (The texts follow from the tokens; where an answer holds invalid UTF-8 the two spell the
// replacement differently: serve's JSON one U+FFFD per byte, run's conversation one per sequence.) Both go through one engine; the conversation is rendered by the model's
// template (the real Qwen3 one) in both.
func TestRunChatAndServeGiveTheSameTokens(t *testing.T) {
	path := chatModel(t)
	m, err := admit.Open(path, admit.Options{Pin: admit.AllowUnpinned, Chat: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	system := "You are a helpful assistant who answers briefly."
	users := []string{"What is the capital of France?", "And of Italy?\\\nAnswer in one word.", "Thanks! Which river runs through it?"}
	sent := []string{"What is the capital of France?", "And of Italy?\nAnswer in one word.", "Thanks! Which river runs through it?"}
	same, total := 0, 0
	for _, c := range []struct {
		name   string
		args   []string
		fields map[string]any
	}{
		{"greedy", []string{"--temp", "0"}, map[string]any{"temperature": 0}},
		{"seeded", []string{"--temp", "0.9", "--seed", "42"}, map[string]any{"temperature": 0.9, "seed": 42}},
	} {
		var o bytes.Buffer
		e := &syncBuffer{}
		var turns []chatTurn
		args := append([]string{"run", path, "--chat", "-t", "2", "-c", "512", "-n", "12", "--system", system}, c.args...)
		code := run(args, strings.NewReader(strings.Join(users, "\n")+"\n"), &o, e, func(cl *cli) {
			cl.Run.onTurn = func(t chatTurn) { turns = append(turns, t) }
		})
		if code != 0 || len(turns) != len(sent) {
			t.Fatalf("%s: run --chat: exit %d, %d turns: %s", c.name, code, len(turns), e.String())
		}

		s, err := serve.New(m, serve.Options{NCtx: 512, Threads: 2, Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		msgs := []map[string]string{{"role": "system", "content": system}}
		for i, u := range sent {
			msgs = append(msgs, map[string]string{"role": "user", "content": u})
			body := map[string]any{"messages": msgs, "max_tokens": 12, "logprobs": true, "top_logprobs": 1}
			for k, v := range c.fields {
				body[k] = v
			}
			b, _ := json.Marshal(body)
			resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var a struct {
				Choices []struct {
					Message  struct{ Content string } `json:"message"`
					Logprobs struct {
						Content []struct {
							ID int32 `json:"id"`
						} `json:"content"`
					} `json:"logprobs"`
				} `json:"choices"`
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
					Details          struct {
						Cached int `json:"cached_tokens"`
					} `json:"prompt_tokens_details"`
				} `json:"usage"`
			}
			err = json.NewDecoder(resp.Body).Decode(&a)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || len(a.Choices) != 1 {
				t.Fatalf("%s: turn %d: %d %v", c.name, i+1, resp.StatusCode, err)
			}
			var ids []int32
			for _, lp := range a.Choices[0].Logprobs.Content {
				ids = append(ids, lp.ID)
			}
			rt := turns[i]
			total++
			// cached counts are not compared: exact reuse keeps what the fresh evaluation computes alike,
			// and how much that is depends on whether the slot settled between turns.
			got := fmt.Sprintf("prompt %d tokens %d released %v", a.Usage.PromptTokens, a.Usage.CompletionTokens, ids)
			want := fmt.Sprintf("prompt %d tokens %d released %v", len(rt.Prompt), len(rt.Tokens), releasedTokens(m.Tokenizer, rt.Tokens))
			if got != want || !slices.Equal(ids, releasedTokens(m.Tokenizer, rt.Tokens)) {
				t.Errorf("%s: turn %d:\nserve   %s\nrun     %s", c.name, i+1, got, want)
			} else {
				same++
			}
			msgs = append(msgs, map[string]string{"role": "assistant", "content": rt.Answer})
		}
		ts.Close()
		s.Close()
	}
	t.Logf("%d of %d turns the same in run --chat and serve (greedy and seeded, 3 turns each)", same, total)
}

// TestRunReversePromptStopsAsServesStopDoes: run's -r/--reverse-prompt PROMPT (llama-cli's name; repeatable)
// are the engine's stop strings exactly as serve's "stop" field is: the text run prints (a plain continuation,
// or a --chat answer) is the content serve answers for the same request with "stop" set to the same strings,
// cut before the first one the generated text holds; one it never holds changes nothing.
func TestRunReversePromptStopsAsServesStopDoes(t *testing.T) {
	path := storiesPath(t)
	m, err := admit.Open(path, admit.Options{Pin: admit.AllowUnpinned, Chat: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := serve.New(m, serve.Options{Threads: 1, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	post := func(route string, body map[string]any) string {
		b, _ := json.Marshal(body)
		resp, err := http.Post(ts.URL+route, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a struct {
			Content string `json:"content"` // /completion
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", route, resp.StatusCode, err)
		}
		if len(a.Choices) > 0 {
			return a.Choices[0].Message.Content
		}
		return a.Content
	}
	const prompt, message = "Once upon a time", "Tell me a story"
	for _, c := range []struct {
		name  string
		chat  bool
		stops []string
	}{
		{"a plain run stopped at a word", false, []string{"Lily"}},
		{"a plain run stopped at the first of two", false, []string{"park", "Lily"}},
		{"a plain run stopped at a string across tokens", false, []string{"red b"}},
		{"a plain run with a string it never meets", false, []string{"zebra"}},
		{"a chat answer stopped at a word", true, []string{"Anna"}},
		{"a chat answer stopped at the first of two", true, []string{"ran", "Okay"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"run", path, "-t", "1", "-n", "40"}
			for _, w := range c.stops {
				args = append(args, "-r", w)
			}
			body := map[string]any{"temperature": 0, "stop": c.stops}
			route := "/completion"
			if c.chat {
				args = append(args, "--chat", "-st", "-p", message)
				body["messages"], body["max_tokens"] = []map[string]string{{"role": "user", "content": message}}, 40
				route = "/v1/chat/completions"
			} else {
				args = append(args, "--no-display-prompt", "-p", prompt)
				body["prompt"], body["n_predict"] = prompt, 40
			}
			code, stdout, stderr := runCLI(args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			want := post(route, body)
			if want != "" && !strings.HasSuffix(want, "\n") || !c.chat {
				want += "\n"
			}
			if stdout != want {
				t.Fatalf("run -r %q printed\n%q\nserve's content with stop %q is\n%q", c.stops, stdout, c.stops, want)
			}
			if c.stops[0] != "zebra" && strings.Contains(stdout, c.stops[len(c.stops)-1]) {
				t.Fatalf("the text holds a stop string: %q", stdout)
			}
		})
	}
}
