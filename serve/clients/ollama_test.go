package clients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/serve"
)

// ollamaParams are the sampling parameters an Ollama request with opts
// means (docs/serve.md): Ollama's defaults (api.DefaultOptions) for the
// options it names, read by Ollama's own parser, over the server's base.
func ollamaParams(t *testing.T, base sample.Params, opts map[string]any) sample.Params {
	t.Helper()
	o := api.DefaultOptions()
	if err := o.FromMap(opts); err != nil {
		t.Fatal(err)
	}
	p := base
	p.Temp, p.TopK, p.TopP, p.MinP, p.TypicalP = o.Temperature, int32(o.TopK), o.TopP, o.MinP, o.TypicalP
	p.PenaltyLastN, p.PenaltyRepeat, p.PenaltyPresent, p.PenaltyFreq = int32(o.RepeatLastN), o.RepeatPenalty, o.PresencePenalty, o.FrequencyPenalty
	p.Seed = uint32(o.Seed)
	if err := p.ApplyServerLimits(base); err != nil {
		t.Fatal(err)
	}
	return p
}

// ollamaCase is one request of the Ollama client test.
type ollamaCase struct {
	name   string
	chat   bool
	prompt string // the user's message (chat) or the prompt (generate)
	system string
	stream bool
	opts   map[string]any // num_predict is required: the reference's budget
}

func (c ollamaCase) numPredict() int { return int(c.opts["num_predict"].(float64)) }

func ollamaCases() []ollamaCase {
	greedy := func(n int) map[string]any { return map[string]any{"temperature": 0.0, "num_predict": float64(n)} }
	sampled := map[string]any{"temperature": 0.9, "top_k": 20.0, "top_p": 0.8, "seed": 42.0, "num_predict": 24.0}
	defaults := map[string]any{"seed": 7.0, "num_predict": 24.0} // Ollama's defaults: repeat_penalty 1.1, top_p 0.9, ...
	penalties := map[string]any{"temperature": 0.7, "min_p": 0.05, "typical_p": 0.9, "repeat_penalty": 1.3,
		"repeat_last_n": 16.0, "presence_penalty": 0.4, "frequency_penalty": 0.2, "seed": 3.0, "num_predict": 24.0}
	return []ollamaCase{
		{name: "generate/greedy", prompt: "Once upon a time", opts: greedy(32)},
		{name: "generate/greedy/stream", prompt: "Once upon a time", stream: true, opts: greedy(32)},
		{name: "generate/sampled", prompt: "The little dog", opts: sampled},
		{name: "generate/sampled/stream", prompt: "The little dog", stream: true, opts: sampled},
		{name: "generate/defaults/stream", prompt: "Lily wanted", stream: true, opts: defaults},
		{name: "generate/penalties", prompt: "Tom had a ball", opts: penalties},
		{name: "chat/greedy", chat: true, prompt: "Tell me a story.", opts: greedy(24)},
		{name: "chat/sampled/stream", chat: true, prompt: "Tell me a story.", system: "You are kind.", stream: true, opts: sampled},
	}
}

// TestOllamaGoClientGetsTheReferencesTokens drives serve.Server with
// Ollama's Go client (github.com/ollama/ollama/api v0.17.4: Client.Generate
// and Client.Chat, streamed and not) on stories260K and on a synthetic qwen3
// model with the real Qwen3 vocabulary, and checks every answer against the
// reference: the text of the tokens libllama samples for the same prompt
// tokens and sampling parameters (internal/refgen), eval_count their number,
// done_reason stop on an end-of-generation token else length,
// prompt_eval_count the prompt's tokens. The prompt the server rendered is
// taken from Ollama's _debug_render_only and tokenized by the reference.
func TestOllamaGoClientGetsTheReferencesTokens(t *testing.T) {
	models := []struct{ name, path string }{{"stories260K", stories(t)}, {"qwen3-tiny", qwen3Model(t)}}
	total, same := 0, 0
	for _, mdl := range models {
		t.Run(mdl.name, func(t *testing.T) {
			o := newOracle(t, mdl.path)
			ts := startTestServer(t, mdl.path, serve.Options{})
			u, _ := url.Parse(ts.URL)
			client := api.NewClient(u, http.DefaultClient)
			ctx := context.Background()
			ps, err := client.ListRunning(ctx)
			if err != nil {
				t.Fatal(err)
			}
			o.nCtx = ps.Models[0].ContextLength
			name := ps.Models[0].Name
			for _, c := range ollamaCases() {
				total++
				t.Run(c.name, func(t *testing.T) {
					rendered, text, final := runOllama(t, ctx, client, name, c)
					prompt := o.tokenize(t, rendered)
					want := o.generate(t, prompt, ollamaParams(t, o.base, c.opts), c.numPredict())
					ok := true
					if wantText := jsonText(want.text); text != wantText {
						t.Errorf("text %q, reference %q", text, wantText)
						ok = false
					}
					if final.EvalCount != len(want.tokens) || final.DoneReason != want.finish || final.PromptEvalCount != len(prompt) {
						t.Errorf("eval_count %d done_reason %q prompt_eval_count %d; reference %d tokens %v, %q, prompt %d tokens",
							final.EvalCount, final.DoneReason, final.PromptEvalCount, len(want.tokens), want.tokens, want.finish, len(prompt))
						ok = false
					}
					if !final.Done || final.TotalDuration <= 0 || final.LoadDuration <= 0 || final.EvalDuration <= 0 {
						t.Errorf("final answer: done %v, durations total %v load %v eval %v", final.Done, final.TotalDuration, final.LoadDuration, final.EvalDuration)
						ok = false
					}
					if ok {
						same++
					}
				})
			}
		})
	}
	t.Logf("Ollama Go client: %d of %d answers token-identical to the reference", same, total)
}

// runOllama sends c with the client: first with _debug_render_only to get
// the rendered prompt, then for real. It returns the prompt, the answer's
// text (the concatenated stream) and the final response's metrics.
func runOllama(t *testing.T, ctx context.Context, client *api.Client, model string, c ollamaCase) (string, string, finalAnswer) {
	t.Helper()
	stream := c.stream
	var rendered string
	var b strings.Builder
	var fin finalAnswer
	n := 0
	if c.chat {
		msgs := []api.Message{{Role: "user", Content: c.prompt}}
		if c.system != "" {
			msgs = append([]api.Message{{Role: "system", Content: c.system}}, msgs...)
		}
		req := &api.ChatRequest{Model: model, Messages: msgs, Options: c.opts, Stream: &stream, DebugRenderOnly: true}
		if err := client.Chat(ctx, req, func(r api.ChatResponse) error {
			rendered = r.DebugInfo.RenderedTemplate
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		req.DebugRenderOnly = false
		if err := client.Chat(ctx, req, func(r api.ChatResponse) error {
			n++
			b.WriteString(r.Message.Content)
			if r.Done {
				fin = finalAnswer{r.Metrics, r.Done, r.DoneReason}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	} else {
		req := &api.GenerateRequest{Model: model, Prompt: c.prompt, System: c.system, Options: c.opts, Stream: &stream, DebugRenderOnly: true}
		if err := client.Generate(ctx, req, func(r api.GenerateResponse) error {
			rendered = r.DebugInfo.RenderedTemplate
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		req.DebugRenderOnly = false
		if err := client.Generate(ctx, req, func(r api.GenerateResponse) error {
			n++
			b.WriteString(r.Response)
			if r.Done {
				fin = finalAnswer{r.Metrics, r.Done, r.DoneReason}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if stream && n < 2 || !stream && n != 1 {
		t.Errorf("stream %v: %d responses", stream, n)
	}
	return rendered, b.String(), fin
}

type finalAnswer struct {
	api.Metrics
	Done       bool
	DoneReason string
}

// TestOllamaStreamEndsWithTheReceipt reads a streamed /api/generate as
// NDJSON: every line a JSON object, application/x-ndjson, only the last one
// done with bankml_receipt, whose hashes are those of the exact request body
// and of the text the client received; a non-streamed answer carries it at
// the top level.
func TestOllamaStreamEndsWithTheReceipt(t *testing.T) {
	ts := startTestServer(t, stories(t), serve.Options{})
	for _, stream := range []bool{true, false} {
		body := []byte(`{"model":"` + ts.m.Name + `","prompt":"Once upon a time","options":{"temperature":0,"num_predict":16},"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`)
		resp, err := http.Post(ts.URL+"/api/generate", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		ct := resp.Header.Get("Content-Type")
		if stream && ct != "application/x-ndjson" || !stream && !strings.HasPrefix(ct, "application/json") {
			t.Errorf("stream %v: Content-Type %q", stream, ct)
		}
		var lines []map[string]json.RawMessage
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("line %q: %v", sc.Bytes(), err)
			}
			lines = append(lines, m)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(lines) == 0 {
			t.Fatalf("stream %v: status %d, %d lines", stream, resp.StatusCode, len(lines))
		}
		var text strings.Builder
		for i, l := range lines {
			var piece string
			json.Unmarshal(l["response"], &piece)
			text.WriteString(piece)
			last := i == len(lines)-1
			if _, has := l["bankml_receipt"]; has != last || (string(l["done"]) == "true") != last {
				t.Errorf("stream %v: line %d of %d: done %s, receipt %v", stream, i, len(lines), l["done"], has)
			}
		}
		var rc serve.Receipt
		if err := json.Unmarshal(lines[len(lines)-1]["bankml_receipt"], &rc); err != nil {
			t.Fatal(err)
		}
		if rc.RequestSHA256 != sha256Hex(body) || rc.ResponseSHA256 != sha256Hex([]byte(text.String())) || rc.Pinned || rc.Signed {
			t.Errorf("stream %v: receipt %+v; want request %s response %s, pinned false", stream, rc, sha256Hex(body), sha256Hex([]byte(text.String())))
		}
		if stream && len(lines) < 3 {
			t.Errorf("stream: only %d lines", len(lines))
		}
	}
}
