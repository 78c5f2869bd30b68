package clients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/ledger"
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

// ollamaClient serves path in-process with o and returns an Ollama client
// of it.
func ollamaClient(t *testing.T, path string, o serve.Options) (*testServer, *api.Client) {
	t.Helper()
	ts := startTestServer(t, path, o)
	u, _ := url.Parse(ts.URL)
	return ts, api.NewClient(u, http.DefaultClient)
}

// ollamaServer serves path in-process and returns its oracle (with the
// server's slot context, read from /api/ps), the server, an Ollama client
// of it and its /api/ps.
func ollamaServer(t *testing.T, path string) (*oracle, *testServer, *api.Client, *api.ProcessResponse) {
	t.Helper()
	o := newOracle(t, path)
	ts, client := ollamaClient(t, path, serve.Options{})
	ps, err := client.ListRunning(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o.nCtx = ps.Models[0].ContextLength
	return o, ts, client, ps
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
// tokens and sampling parameters (internal/reftest.Generate), eval_count their number,
// done_reason stop on an end-of-generation token else length,
// prompt_eval_count the prompt's tokens. The prompt the server rendered is
// taken from Ollama's _debug_render_only and tokenized by the reference.
func TestOllamaGoClientGetsTheReferencesTokens(t *testing.T) {
	models := []struct{ name, path string }{{"stories260K", stories(t)}, {"qwen3-tiny", qwen3Model(t)}}
	total, same := 0, 0
	for _, mdl := range models {
		t.Run(mdl.name, func(t *testing.T) {
			o, _, client, ps := ollamaServer(t, mdl.path)
			ctx := context.Background()
			name := ps.Models[0].Name
			for _, c := range ollamaCases() {
				total++
				t.Run(c.name, func(t *testing.T) {
					rendered, text, final := runOllama(t, ctx, client, name, c)
					prompt := o.tokenize(t, rendered)
					want := o.generate(t, prompt, ollamaParams(t, o.base, c.opts), c.numPredict())
					ok := true
					wantText := jsonText(want.text)
					if c.chat || o.hasTemplate(t) {
						// the chat template's parser makes the answer: content as common_chat_parse gives it
						msgs := []map[string]any{{"role": "user", "content": c.prompt}}
						if c.system != "" {
							msgs = append([]map[string]any{{"role": "system", "content": c.system}}, msgs...)
						}
						wantText = o.chatParse(t, map[string]any{"messages": msgs}, want.text).Content
					}
					if text != wantText {
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
	// call sends the request (with _debug_render_only or not) and gives fn
	// every response line.
	var call func(debug bool, fn func(line ollamaLine)) error
	if c.chat {
		msgs := []api.Message{{Role: "user", Content: c.prompt}}
		if c.system != "" {
			msgs = append([]api.Message{{Role: "system", Content: c.system}}, msgs...)
		}
		req := &api.ChatRequest{Model: model, Messages: msgs, Options: c.opts, Stream: &stream}
		call = func(debug bool, fn func(ollamaLine)) error {
			req.DebugRenderOnly = debug
			return client.Chat(ctx, req, func(r api.ChatResponse) error {
				fn(ollamaLine{r.DebugInfo, r.Message.Content, finalAnswer{r.Metrics, r.Done, r.DoneReason}})
				return nil
			})
		}
	} else {
		req := &api.GenerateRequest{Model: model, Prompt: c.prompt, System: c.system, Options: c.opts, Stream: &stream}
		call = func(debug bool, fn func(ollamaLine)) error {
			req.DebugRenderOnly = debug
			return client.Generate(ctx, req, func(r api.GenerateResponse) error {
				fn(ollamaLine{r.DebugInfo, r.Response, finalAnswer{r.Metrics, r.Done, r.DoneReason}})
				return nil
			})
		}
	}
	var rendered string
	if err := call(true, func(l ollamaLine) { rendered = l.debug.RenderedTemplate }); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var fin finalAnswer
	n := 0
	if err := call(false, func(l ollamaLine) {
		n++
		b.WriteString(l.text)
		if l.fin.Done {
			fin = l.fin
		}
	}); err != nil {
		t.Fatal(err)
	}
	if stream && n < 2 || !stream && n != 1 {
		t.Errorf("stream %v: %d responses", stream, n)
	}
	return rendered, b.String(), fin
}

// ollamaLine is one response of Chat or Generate.
type ollamaLine struct {
	debug *api.DebugInfo
	text  string
	fin   finalAnswer
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

// TestOllamaListingsAndRefusals: the listing routes answer in Ollama's
// shapes (read by Ollama's client), and what bankml refuses is an error the
// client reports with its status and a message naming the field or option.
func TestOllamaListingsAndRefusals(t *testing.T) {
	path := stories(t)
	ts, client := ollamaClient(t, path, serve.Options{})
	ctx := context.Background()
	if err := client.Heartbeat(ctx); err != nil {
		t.Errorf("HEAD /: %v", err)
	}
	if v, err := client.Version(ctx); err != nil || v != serve.OllamaVersion {
		t.Errorf("version %q, %v; want %q", v, err, serve.OllamaVersion)
	}
	resp, err := http.Get(ts.URL + "/")
	if err == nil {
		b := new(bytes.Buffer)
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		if b.String() != "Ollama is running" {
			t.Errorf("GET /: %q", b)
		}
	}
	for _, p := range []string{"/", "/api/version", "/api/tags"} {
		resp, err := http.Head(ts.URL + p)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("HEAD %s: %v %v", p, resp, err)
		} else {
			resp.Body.Close()
		}
	}
	list, err := client.List(ctx)
	if err != nil || len(list.Models) != 1 {
		t.Fatalf("tags: %+v, %v", list, err)
	}
	tag := list.Models[0]
	if tag.Digest != ts.m.SHA256 || tag.Size != ts.m.Identity.Size || tag.Details.Format != "gguf" || tag.Details.Family != "llama" || tag.Name != ts.m.Name+":latest" {
		t.Errorf("tags: %+v", tag)
	}
	show, err := client.Show(ctx, &api.ShowRequest{Model: tag.Name})
	if err != nil {
		t.Fatal(err)
	}
	if show.ModelInfo["general.architecture"] != "llama" || len(show.Tensors) != len(ts.m.File.Tensors) || show.ModelInfo["tokenizer.ggml.tokens"] != nil {
		t.Errorf("show: architecture %v, %d tensors, tokens %v", show.ModelInfo["general.architecture"], len(show.Tensors), show.ModelInfo["tokenizer.ggml.tokens"] != nil)
	}
	verbose, err := client.Show(ctx, &api.ShowRequest{Model: tag.Name, Verbose: true})
	if err != nil || verbose.ModelInfo["tokenizer.ggml.tokens"] == nil {
		t.Errorf("show verbose: tokens missing (%v)", err)
	}
	ps, err := client.ListRunning(ctx)
	if err != nil || len(ps.Models) != 1 || ps.Models[0].ContextLength <= 0 || ps.Models[0].ExpiresAt.Before(time.Now().AddDate(100, 0, 0)) {
		t.Errorf("ps: %+v, %v", ps, err)
	}

	for _, c := range []struct {
		name   string
		req    api.GenerateRequest
		status int
		names  string // a word the message must hold
	}{
		{"unknown model", api.GenerateRequest{Model: "llama3", Prompt: "x"}, 404, "llama3"},
		{"no model", api.GenerateRequest{Prompt: "x"}, 400, "model"},
		{"top_k type", api.GenerateRequest{Model: tag.Name, Prompt: "x", Options: map[string]any{"top_k": "x"}}, 400, `option "top_k" must be of type integer`},
		{"format neither \"json\" nor a schema", api.GenerateRequest{Model: tag.Name, Prompt: "x", Format: json.RawMessage(`"xml"`)}, 400, "invalid format: \"\\\"xml\\\"\"; expected \"json\" or a valid JSON Schema object"},
		{"suffix", api.GenerateRequest{Model: tag.Name, Prompt: "x", Suffix: "y"}, 400, "suffix"},
		{"images", api.GenerateRequest{Model: tag.Name, Prompt: "x", Images: []api.ImageData{{1}}}, 400, "images"},
		{"unload", api.GenerateRequest{Model: tag.Name, KeepAlive: &api.Duration{}}, 400, "keep_alive"},
		{"too long", api.GenerateRequest{Model: tag.Name, Prompt: strings.Repeat("once upon a time ", ps.Models[0].ContextLength/4+1)}, 400, "context"},
	} {
		err := client.Generate(ctx, &c.req, func(api.GenerateResponse) error { return nil })
		var se api.StatusError
		if !errors.As(err, &se) || se.StatusCode != c.status || !strings.Contains(se.ErrorMessage, c.names) {
			t.Errorf("%s: %v; want status %d naming %q", c.name, err, c.status, c.names)
		}
	}
	// What Ollama accepts without applying it here, or ignores (with a warning) as no option of its: answered.
	for _, opts := range []map[string]any{
		{"num_thread": 4, "num_batch": 512, "num_ctx": 64, "use_mmap": true},
		{"mirostat": 2, "temprature": 0.5},
	} {
		opts["num_predict"] = 1
		if err := client.Generate(ctx, &api.GenerateRequest{Model: tag.Name, Prompt: "x", Options: opts},
			func(api.GenerateResponse) error { return nil }); err != nil {
			t.Errorf("options %v: %v", opts, err)
		}
	}
	err = client.Chat(ctx, &api.ChatRequest{Model: tag.Name, Messages: []api.Message{{Role: "user", Content: "x"}},
		Tools: api.Tools{{Type: "function"}}}, func(api.ChatResponse) error { return nil })
	if se := (api.StatusError{}); !errors.As(err, &se) || se.StatusCode != 400 || !strings.Contains(se.ErrorMessage, "tools") {
		t.Errorf("tools: %v", err)
	}
	// A request without a prompt "loads" the model, as Ollama answers it.
	var load api.GenerateResponse
	if err := client.Generate(ctx, &api.GenerateRequest{Model: tag.Name}, func(r api.GenerateResponse) error { load = r; return nil }); err != nil || !load.Done || load.DoneReason != "load" {
		t.Errorf("load: %+v, %v", load, err)
	}
	for _, body := range []string{`{"model":`, `[1,2]`, ``} {
		resp, err := http.Post(ts.URL+"/api/generate", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 400 || e.Error == "" {
			t.Errorf("body %q: %d %q", body, resp.StatusCode, e.Error)
		}
	}
}

// TestOllamaStopAndNumCtxCutAsTheReference: options.stop cuts the answer
// before the stop string (done_reason stop, eval_count the tokens up to the
// one completing it), and a num_ctx below the server's context ends the
// answer when prompt and answer fill it (done_reason length), both on the
// reference's tokens.
func TestOllamaStopAndNumCtxCutAsTheReference(t *testing.T) {
	o, ts, client, _ := ollamaServer(t, stories(t))
	ctx := context.Background()
	const promptText = "Once upon a time"
	prompt := o.tokenize(t, promptText)
	greedy := ollamaParams(t, o.base, map[string]any{"temperature": 0.0})
	full := o.generate(t, prompt, greedy, 48)

	// A stop string: the reference's sixth piece, trimmed (a word of its
	// answer).
	piece, err := o.ref.TokenToPiece(full.tokens[5], false)
	if err != nil {
		t.Fatal(err)
	}
	stop := strings.TrimSpace(string(piece))
	cut := o.generateStop(t, prompt, greedy, 48, []string{stop})
	if cut.finish != "stop" || len(cut.tokens) >= len(full.tokens) {
		t.Fatalf("the reference does not stop at %q: %+v", stop, cut)
	}
	for _, stream := range []bool{false, true} {
		c := ollamaCase{prompt: promptText, stream: stream, opts: map[string]any{"temperature": 0.0, "num_predict": 48.0, "stop": []any{stop}}}
		_, text, fin := runOllama(t, ctx, client, ts.m.Name, c)
		if text != cut.text || fin.DoneReason != cut.finish || fin.EvalCount != len(cut.tokens) {
			t.Errorf("stop %q stream %v: %q %q eval_count %d; reference %q %q %d", stop, stream, text, fin.DoneReason, fin.EvalCount, cut.text, cut.finish, len(cut.tokens))
		}
	}

	// num_ctx: room for 10 tokens after the prompt.
	numCtx := len(prompt) + 10
	c := ollamaCase{prompt: promptText, opts: map[string]any{"temperature": 0.0, "num_predict": 48.0, "num_ctx": float64(numCtx)}}
	_, text, fin := runOllama(t, ctx, client, ts.m.Name, c)
	want := o.generate(t, prompt, greedy, 10)
	if text != want.text || fin.DoneReason != "length" || fin.EvalCount != 10 {
		t.Errorf("num_ctx %d: %q %q eval_count %d; reference %q length 10", numCtx, text, fin.DoneReason, fin.EvalCount, want.text)
	}
}

// TestOllamaBodyLimitAndDisconnect: a body over the server's limit is a 413
// in Ollama's error shape; a client that goes away after the first streamed
// line cancels its generation (num_predict unlimited, so only a
// cancellation ends it before the context is full), nothing is recorded,
// and the slot answers the next request.
func TestOllamaBodyLimitAndDisconnect(t *testing.T) {
	path := stories(t)
	l, _, err := ledger.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ts, client := ollamaClient(t, path, serve.Options{MaxBodyBytes: 4096, Ledger: l, Parallel: 1})
	resp, err := http.Post(ts.URL+"/api/generate", "application/json", strings.NewReader(`{"model":"`+ts.m.Name+`","prompt":"`+strings.Repeat("a", 5000)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error == "" {
		t.Errorf("body over the limit: %d %q", resp.StatusCode, e.Error)
	}

	ctx, cancel := context.WithCancel(context.Background())
	lines := 0
	err = client.Generate(ctx, &api.GenerateRequest{Model: ts.m.Name, Prompt: "Once upon a time", Options: map[string]any{"num_predict": -1}},
		func(api.GenerateResponse) error {
			lines++
			cancel()
			return nil
		})
	// (Ollama's client ends its read loop without reporting the cancelled
	// read, after the lines it had buffered: err is nil or context.Canceled.)
	if err != nil && !errors.Is(err, context.Canceled) || lines == 0 {
		t.Fatalf("cancelled stream: %v after %d lines", err, lines)
	}
	// The next request waits for the one slot: it is answered once the
	// cancelled generation has let go of it.
	stream := false
	var next api.GenerateResponse
	if err := client.Generate(context.Background(), &api.GenerateRequest{Model: ts.m.Name, Prompt: "Lily", Stream: &stream,
		Options: map[string]any{"num_predict": 4}}, func(r api.GenerateResponse) error { next = r; return nil }); err != nil || !next.Done {
		t.Fatalf("next request: %+v, %v", next, err)
	}
	if h := l.Head(); h.Size != 1 {
		t.Errorf("ledger has %d entries; want 1 (the cancelled answer is not recorded)", h.Size)
	}
}

// TestOllamaThinkIsEnableThinking: Ollama's think true/false renders the
// prompt as llama-server's chat_template_kwargs enable_thinking does (the
// server's /apply-template with the same messages); a string level is
// refused.
func TestOllamaThinkIsEnableThinking(t *testing.T) {
	path := qwen3Model(t)
	ts, client := ollamaClient(t, path, serve.Options{})
	ctx := context.Background()
	msgs := []api.Message{{Role: "user", Content: "Hi"}}
	prompts := map[bool]string{}
	for _, think := range []bool{true, false} {
		var rendered string
		err := client.Chat(ctx, &api.ChatRequest{Model: ts.m.Name, Messages: msgs, Think: &api.ThinkValue{Value: think}, DebugRenderOnly: true},
			func(r api.ChatResponse) error { rendered = r.DebugInfo.RenderedTemplate; return nil })
		if err != nil {
			t.Fatal(err)
		}
		var tmpl struct {
			Prompt string `json:"prompt"`
		}
		postJSON(t, ts.URL+"/apply-template", map[string]any{"messages": []map[string]string{{"role": "user", "content": "Hi"}},
			"chat_template_kwargs": map[string]bool{"enable_thinking": think}}, &tmpl)
		if rendered != tmpl.Prompt {
			t.Errorf("think %v: %q; /apply-template %q", think, rendered, tmpl.Prompt)
		}
		prompts[think] = rendered
	}
	if prompts[true] == prompts[false] {
		t.Errorf("think true and false render the same prompt %q", prompts[true])
	}
	err := client.Chat(ctx, &api.ChatRequest{Model: ts.m.Name, Messages: msgs, Think: &api.ThinkValue{Value: "high"}},
		func(api.ChatResponse) error { return nil })
	if se := (api.StatusError{}); !errors.As(err, &se) || se.StatusCode != 400 || !strings.Contains(se.ErrorMessage, "think") {
		t.Errorf("think \"high\": %v", err)
	}
}

// TestOllamaRefusesAnswersFromAChangedModelFile: after the model file is
// touched, /api/generate answers 503 in Ollama's shape and generates nothing.
func TestOllamaRefusesAnswersFromAChangedModelFile(t *testing.T) {
	src, err := os.ReadFile(stories(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "stories260K.gguf")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ts, client := ollamaClient(t, path, serve.Options{})
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	err = client.Generate(context.Background(), &api.GenerateRequest{Model: ts.m.Name, Prompt: "Once"}, func(api.GenerateResponse) error {
		t.Error("an answer from a changed model file")
		return nil
	})
	if se := (api.StatusError{}); !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable || !strings.Contains(se.ErrorMessage, "modified") {
		t.Errorf("changed model file: %v; want 503 naming the change", err)
	}
}
