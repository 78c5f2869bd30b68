package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bankml/bankml/sample"
)

// TestGoOpenAIClient talks to the server with github.com/sashabaranov/go-openai, streaming and not, chat and
// completions, and checks the text, counts and finish reason against the reference's greedy answer.
func TestGoOpenAIClient(t *testing.T) {
	path := storiesPath(t)
	rm := refModel(t, path)
	ts := newTestServer(t, path, AdmitOptions{}, Options{APIKey: "k"})
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = ts.url + "/v1"
	c := openai.NewClientWithConfig(cfg)
	ctx := context.Background()
	// go-openai leaves out a zero temperature (omitempty) and cannot send top_k, so the requests use
	// llama-server's default chain (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05) with seed 1, which the
	// reference's chain reproduces.
	p := sample.DefaultParams()
	p.Seed = 1
	seed := 1
	const n = 20

	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Tell me a story."}}
	_, at := ts.post(t, "/apply-template", []byte(`{"messages":[{"role":"user","content":"Tell me a story."}]}`), "Authorization", "Bearer k")
	var tmpl struct{ Prompt string }
	if err := json.Unmarshal(at, &tmpl); err != nil {
		t.Fatal(err)
	}
	chatPrompt, err := rm.Tokenize(tmpl.Prompt, true, true)
	if err != nil {
		t.Fatal(err)
	}
	want := refAnswer(t, rm, chatPrompt, p, n, 512)
	wantText := refText(t, rm, want)
	wantFinish := "length"
	if eog, _ := rm.IsEOG(want[len(want)-1]); eog {
		wantFinish = "stop"
	}
	res, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "stories260K.gguf", Messages: msgs, MaxCompletionTokens: n, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 1 || res.Choices[0].Message.Content != wantText || string(res.Choices[0].FinishReason) != wantFinish ||
		res.Usage.CompletionTokens != len(want) || res.Usage.PromptTokens != len(chatPrompt) {
		t.Errorf("chat: %+v, reference %q (%d tokens)", res, wantText, len(want))
	}
	st, err := c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model: "stories260K.gguf", Messages: msgs, MaxCompletionTokens: n, Seed: &seed, Stream: true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	var text, finish string
	var usage *openai.Usage
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range r.Choices {
			text += ch.Delta.Content
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
		if r.Usage != nil {
			usage = r.Usage
		}
	}
	st.Close()
	if text != wantText || finish != wantFinish || usage == nil || usage.CompletionTokens != len(want) {
		t.Errorf("chat stream: %q finish %q usage %+v, reference %q", text, finish, usage, wantText)
	}
	// The common loop reads r.Choices[0] of every chunk (it panics on a chunk with empty choices): without
	// stream_options.include_usage no such chunk may come, the receipt's included.
	st, err = c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model: "stories260K.gguf", Messages: msgs, MaxCompletionTokens: n, Seed: &seed, Stream: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	text, finish = "", ""
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Choices) == 0 {
			t.Fatalf("chat stream without include_usage: a chunk with empty choices: %+v", r)
		}
		text += r.Choices[0].Delta.Content
		if r.Choices[0].FinishReason != "" {
			finish = string(r.Choices[0].FinishReason)
		}
	}
	st.Close()
	if text != wantText || finish != wantFinish {
		t.Errorf("chat stream, common loop: %q finish %q, reference %q %q", text, finish, wantText, wantFinish)
	}

	prompt, err := rm.Tokenize("Once upon a time", true, true)
	if err != nil {
		t.Fatal(err)
	}
	want = refAnswer(t, rm, prompt, p, n, 512)
	wantText = refText(t, rm, want)
	cr, err := c.CreateCompletion(ctx, openai.CompletionRequest{Model: "stories260K.gguf", Prompt: "Once upon a time", MaxTokens: n, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if len(cr.Choices) != 1 || cr.Choices[0].Text != wantText || cr.Usage.CompletionTokens != len(want) {
		t.Errorf("completion: %+v, reference %q (%d tokens)", cr, wantText, len(want))
	}
	cs, err := c.CreateCompletionStream(ctx, openai.CompletionRequest{Model: "stories260K.gguf", Prompt: "Once upon a time", MaxTokens: n, Seed: &seed, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	text = ""
	for {
		r, err := cs.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Choices) == 0 {
			t.Fatalf("completion stream: a chunk with empty choices: %+v", r)
		}
		text += r.Choices[0].Text
	}
	cs.Close()
	if text != wantText {
		t.Errorf("completion stream: %q, reference %q", text, wantText)
	}

	models, err := c.ListModels(ctx)
	if err != nil || len(models.Models) != 1 || models.Models[0].ID != "stories260K.gguf" {
		t.Errorf("models: %+v %v", models, err)
	}
}
