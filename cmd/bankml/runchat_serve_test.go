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
