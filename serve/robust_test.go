package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/ledger"
)

// errorBody is llama-server's error object.
type errorBody struct {
	Error struct {
		Code          int    `json:"code"`
		Message       string `json:"message"`
		Type          string `json:"type"`
		NPromptTokens *int   `json:"n_prompt_tokens"`
		NCtx          *int   `json:"n_ctx"`
	} `json:"error"`
}

func parseError(t testing.TB, b []byte) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("not an error body: %v: %s", err, b)
	}
	return e
}

// TestRefusals checks every refusal's status, error type and message, and that refused requests leave no
// ledger entry.
func TestRefusals(t *testing.T) {
	l, _ := openLedger(t)
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{NCtx: 256, MaxBodyBytes: 4096, Ledger: l})
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	long := strings.Repeat("Once upon a time ", 100)
	cases := []struct {
		name, path, body string
		status           int
		typ, msg         string
	}{
		{"malformed JSON", "/v1/chat/completions", `{"messages": [}`, 400, TypeInvalidRequest, "invalid JSON at byte 15"},
		{"truncated JSON", "/v1/completions", `{"prompt": "x"`, 400, TypeInvalidRequest, "ends before the value is complete"},
		{"trailing data", "/v1/completions", `{"prompt": "x"} {}`, 400, TypeInvalidRequest, "data after the top-level value"},
		{"empty body", "/v1/completions", ``, 400, TypeInvalidRequest, "empty"},
		{"wrong type", "/v1/completions", `{"prompt": "x", "max_tokens": "ten"}`, 400, TypeInvalidRequest, "Field 'max_tokens': expected an integer, got string"},
		{"wrong type, sampling", "/v1/completions", `{"prompt": "x", "top_k": "40"}`, 400, TypeInvalidRequest, "Field 'top_k': expected an integer, got string"},
		{"wrong type, nested", "/v1/chat/completions", `{` + msgs + `, "stream_options": {"include_usage": 1}}`, 400, TypeInvalidRequest, "Field 'stream_options.include_usage': expected a boolean, got number"},
		{"fraction past an integer's range", "/completion", `{"prompt": "x", "n_predict": 1e19}`, 400, TypeInvalidRequest, "Field 'n_predict': number 1e19 is out of range for an integer"},
		{"float out of range", "/v1/completions", `{"prompt": "x", "temperature": 1e400}`, 400, TypeInvalidRequest, "Field 'temperature': number 1e400 is out of range for a 32-bit float"},
		{"integer out of range", "/v1/completions", `{"prompt": "x", "top_k": 3000000000}`, 400, TypeInvalidRequest, "Field 'top_k': number 3000000000 is out of range for an integer in [-2147483648, 2147483647]"},
		{"token id past the vocabulary", "/completion", `{"prompt": [1, 99999]}`, 400, TypeInvalidRequest, "prompt[1]: token id 99999 outside the vocabulary [0, 512)"},
		{"token id past the vocabulary, OpenAI", "/v1/completions", `{"prompt": ["Once", 99999]}`, 400, TypeInvalidRequest, "prompt[1]: token id 99999 outside the vocabulary"},
		{"token id past the vocabulary, tokenize", "/tokenize", `{"content": [99999]}`, 400, TypeInvalidRequest, "content[0]: token id 99999 outside the vocabulary"},
		{"logit_bias past float32", "/completion", `{"prompt": "x", "logit_bias": [[5, 1e39]]}`, 400, TypeInvalidRequest, "Field 'logit_bias': number 1e39 is out of range for a 32-bit float"},
		{"logit_bias past float64", "/v1/completions", `{"prompt": "x", "logit_bias": {"5": -1e400}}`, 400, TypeInvalidRequest, "Field 'logit_bias': number -1e400 is out of range for a 32-bit float"},
		{"n 2", "/v1/chat/completions", `{` + msgs + `, "n": 2}`, 400, TypeInvalidRequest, "n = 1 only"},
		{"tools on a template without tool calls", "/v1/chat/completions", `{` + msgs + `, "tools": [{"type": "function", "function": {"name": "f"}}]}`, 400, TypeInvalidRequest, "chat template renders no tool calls"},
		{"unknown tool_choice", "/v1/chat/completions", `{` + msgs + `, "tool_choice": "any"}`, 400, TypeInvalidRequest, "Invalid tool_choice: any"},
		{"json_schema response without its schema", "/v1/chat/completions", `{` + msgs + `, "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}`, 400, TypeInvalidRequest, "response_format.json_schema.schema: required"},
		{"unknown response_format", "/v1/chat/completions", `{` + msgs + `, "response_format": {"type": "xml"}}`, 400, TypeInvalidRequest, `response_format type must be one of "text" or "json_object", but got: xml`},
		{"invalid pattern", "/v1/chat/completions", `{` + msgs + `, "response_format": {"type": "json_object", "schema": {"type": "string", "pattern": "^[a-$"}}}`, 400, TypeInvalidRequest, "Invalid pattern ^[a-$"},
		{"pattern the converter cannot express", "/v1/chat/completions", `{` + msgs + `, "json_schema": {"type": "string", "pattern": "a+"}}`, 400, TypeInvalidRequest, "bankml refuses a schema it cannot enforce"},
		{"required name the grammar never generates", "/v1/chat/completions", `{` + msgs + `, "json_schema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}}`, 400, TypeInvalidRequest, `required property "b" is not in properties and additionalProperties allows no other, so the grammar never generates it (bankml refuses a schema it cannot enforce`},
		{"allOf of integer bounds the converter drops", "/completion", `{"prompt": "x", "json_schema": {"allOf": [{"type": "integer", "minimum": 1}, {"maximum": 10}]}}`, 400, TypeInvalidRequest, "allOf: a component of type integer is dropped"},
		{"unknown schema type", "/completion", `{"prompt": "x", "json_schema": {"type": "strin"}}`, 400, TypeInvalidRequest, `"json_schema": JSON schema conversion failed:`},
		{"response_format schema a string", "/v1/chat/completions", `{` + msgs + `, "response_format": {"type": "json_schema", "json_schema": {"schema": "x"}}}`, 400, TypeInvalidRequest, "\"response_format.json_schema.schema\": JSON schema conversion failed:\nJSON schema error at #: schema must be an object"},
		{"response_format schema a number", "/v1/chat/completions", `{` + msgs + `, "response_format": {"type": "json_schema", "json_schema": {"schema": 42}}}`, 400, TypeInvalidRequest, "schema must be an object"},
		{"response_format schema an array", "/v1/chat/completions", `{` + msgs + `, "response_format": {"type": "json_schema", "json_schema": {"schema": [1]}}}`, 400, TypeInvalidRequest, "schema must be an object"},
		{"response_format schema a boolean", "/v1/chat/completions", `{` + msgs + `, "response_format": {"type": "json_object", "schema": true}}`, 400, TypeInvalidRequest, "\"response_format.schema\": JSON schema conversion failed:\nJSON schema error at #: schema must be an object"},
		{"json_schema a string on chat", "/v1/chat/completions", `{` + msgs + `, "json_schema": "x"}`, 400, TypeInvalidRequest, "\"json_schema\": JSON schema conversion failed:\nJSON schema error at #: schema must be an object"},
		{"integer minimum above maximum", "/v1/chat/completions", `{` + msgs + `, "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "integer", "minimum": 5, "maximum": 1}}}}`, 400, TypeInvalidRequest, "\"response_format.json_schema.schema\": JSON schema error at #: no integer meets minimum 5 and maximum 1: no value can satisfy this schema"},
		{"exclusive bounds with no integer between", "/v1/chat/completions", `{` + msgs + `, "json_schema": {"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2}}}}`, 400, TypeInvalidRequest, "\"json_schema\": JSON schema error at #/properties/n: no integer meets exclusiveMinimum 1 and exclusiveMaximum 2"},
		{"minLength above maxLength", "/v1/chat/completions", `{` + msgs + `, "response_format": {"type": "json_object", "schema": {"type": "string", "minLength": 5, "maxLength": 1}}}`, 400, TypeInvalidRequest, "\"response_format.schema\": JSON schema error at #: minLength 5 is greater than maxLength 1"},
		{"minItems above maxItems", "/v1/chat/completions", `{` + msgs + `, "json_schema": {"type": "array", "minItems": 3, "maxItems": 1}}`, 400, TypeInvalidRequest, "JSON schema error at #: minItems 3 is greater than maxItems 1"},
		{"integer minimum above maximum on /completion", "/completion", `{"prompt": "x", "json_schema": {"type": "integer", "minimum": 5, "maximum": 1}}`, 400, TypeInvalidRequest, "\"json_schema\": JSON schema error at #: no integer meets minimum 5 and maximum 1"},
		{"minLength above maxLength on /v1/completions", "/v1/completions", `{"prompt": "x", "json_schema": {"type": "string", "minLength": 5, "maxLength": 1}}`, 400, TypeInvalidRequest, "minLength 5 is greater than maxLength 1"},
		{"grammar with json_schema", "/v1/chat/completions", `{` + msgs + `, "grammar": "root ::= \"a\"", "json_schema": {}}`, 400, TypeInvalidRequest, "Cannot use both json_schema and grammar"},
		{"grammar with response_format", "/v1/chat/completions", `{` + msgs + `, "grammar": "root ::= \"a\"", "response_format": {"type": "json_object"}}`, 400, TypeInvalidRequest, "Cannot use both response_format and grammar"},
		{"grammar and json_schema on /completion", "/completion", `{"prompt": "x", "grammar": "root ::= \"a\"", "json_schema": {}}`, 400, TypeInvalidRequest, "a grammar and a json_schema given together"},
		{"lazy grammar without triggers", "/completion", `{"prompt": "x", "grammar": "root ::= \"a\"", "grammar_lazy": true}`, 400, TypeInvalidRequest, "no triggers set for lazy grammar"},
		{"lazy grammar on chat", "/v1/chat/completions", `{` + msgs + `, "grammar": "root ::= \"a\"", "grammar_lazy": true}`, 400, TypeInvalidRequest, "not read on /v1/chat/completions"},
		{"response_format on /v1/completions", "/v1/completions", `{"prompt": "x", "response_format": {"type": "json_object"}}`, 400, TypeInvalidRequest, "read on /v1/chat/completions only"},
		{"tools on /completion", "/completion", `{"prompt": "x", "tools": [{"type": "function", "function": {"name": "f"}}]}`, 400, TypeInvalidRequest, "read on /v1/chat/completions only"},
		{"trigger of an unknown type", "/completion", `{"prompt": "x", "grammar": "root ::= \"a\"", "grammar_lazy": true, "grammar_triggers": [{"type": 7, "value": "a"}]}`, 400, TypeInvalidRequest, "unknown type 7"},
		{"mirostat", "/v1/chat/completions", `{` + msgs + `, "mirostat": 2}`, 400, TypeInvalidRequest, "Field 'mirostat'"},
		{"grammar that does not parse", "/v1/completions", `{"prompt": "x", "grammar": "root ::= foo"}`, 400, TypeInvalidRequest, "Field 'grammar': failed to parse grammar: Undefined rule identifier 'foo'"},
		{"repeat_last_n", "/v1/completions", `{"prompt": "x", "repeat_last_n": -2}`, 400, TypeInvalidRequest, "Field 'repeat_last_n'"},
		{"top_logprobs alone", "/v1/chat/completions", `{` + msgs + `, "top_logprobs": 3}`, 400, TypeInvalidRequest, "top_logprobs requires logprobs"},
		{"no messages", "/v1/chat/completions", `{}`, 400, TypeInvalidRequest, "'messages' is required"},
		{"no prompt", "/v1/completions", `{}`, 400, TypeInvalidRequest, `"prompt" is required`},
		{"echo", "/v1/completions", `{"prompt": "x", "echo": true}`, 400, TypeInvalidRequest, "Only no echo"},
		{"several prompts", "/v1/completions", `{"prompt": ["a", "b"]}`, 400, TypeInvalidRequest, "several prompts"},
		{"max_tokens -2", "/v1/completions", `{"prompt": "x", "max_tokens": -2}`, 400, TypeInvalidRequest, "Field 'max_tokens'"},
		{"samplers", "/v1/completions", `{"prompt": "x", "samplers": 5}`, 400, TypeInvalidRequest, "Field 'samplers': expected an array of sampler names"},
		{"context", "/v1/completions", `{"prompt": "` + long + `"}`, 400, TypeExceedContext, "exceeds the available context size (256 tokens)"},
		{"too large", "/v1/completions", `{"prompt": "` + strings.Repeat("a", 5000) + `"}`, 413, TypeInvalidRequest, "larger than 4096 bytes"},
		{"unknown route", "/v1/images/generations", `{}`, 404, TypeNotFound, "File Not Found"},
	}
	for _, c := range cases {
		st, b := ts.post(t, c.path, []byte(c.body))
		e := parseError(t, b)
		if st != c.status || e.Error.Code != c.status || e.Error.Type != c.typ || !strings.Contains(e.Error.Message, c.msg) {
			t.Errorf("%s: %d %s, want %d %s containing %q", c.name, st, b, c.status, c.typ, c.msg)
		}
		if c.typ == TypeExceedContext && (e.Error.NPromptTokens == nil || *e.Error.NPromptTokens <= 256 || e.Error.NCtx == nil || *e.Error.NCtx != 256) {
			t.Errorf("%s: n_prompt_tokens/n_ctx missing or wrong: %s", c.name, b)
		}
	}
	if h := l.Head(); h.Size != 0 {
		t.Errorf("refused requests were recorded: %+v", h)
	}
}

// TestLogitBiasAccepted checks the logit_bias entries llama-server's parse_bias takes or skips without an
// error (server-schema.cpp:442–470): a number in float range, false, a string bias (skipped), an id outside
// the vocabulary (skipped), a pair of another length (skipped).
func TestLogitBiasAccepted(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	for _, lb := range []string{`[[5, 3.4e38]]`, `[[5, false]]`, `[[5, "1e39"]]`, `[[99999, 1]]`, `[[5, 1, 2]]`, `{"5": -2.5, "Once": false}`, `{"5": "1e39"}`} {
		if st, b := ts.post(t, "/completion", []byte(`{"prompt": "x", "n_predict": 1, "logit_bias": `+lb+`}`)); st != 200 {
			t.Errorf("logit_bias %s: %d %s", lb, st, b)
		}
	}
}

// TestAPIKey checks --api-key as llama-server enforces it: /health is public, every other route needs
// "Authorization: Bearer KEY" (or X-Api-Key), else 401 with llama-server's body.
func TestAPIKey(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{APIKey: "s3cret"})
	if st, _ := ts.get(t, "/health"); st != 200 {
		t.Errorf("/health without a key: %d", st)
	}
	body := []byte(`{"prompt": "Once", "max_tokens": 2}`)
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cretX"}} {
		st, b := ts.post(t, "/v1/completions", body, h...)
		if st != 401 || string(b) != `{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}` {
			t.Errorf("%v: %d %s", h, st, b)
		}
	}
	for _, h := range [][]string{{"Authorization", "Bearer s3cret"}, {"X-Api-Key", "s3cret"}} {
		if st, b := ts.post(t, "/v1/completions", body, h...); st != 200 {
			t.Errorf("%v: %d %s", h, st, b)
		}
	}
	if st, _ := ts.get(t, "/v1/models"); st != 401 {
		t.Errorf("/v1/models without a key: %d (llama-server exempts only /health)", st)
	}
}

// streamUntilFirst starts a long streamed completion and returns once its first chunk arrived, with a
// cancel that disconnects the client and a channel closed when the client has read everything it got.
func streamUntilFirst(t *testing.T, url string) (cancel func(), done <-chan string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"prompt": "Once upon a time", "max_tokens": 400, "ignore_eos": true, "stream": true, "temperature": 0}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string)
	go func() {
		rest, _ := io.ReadAll(br)
		resp.Body.Close()
		ch <- string(rest)
	}()
	return cancel, ch
}

// TestQueueFullAndDisconnect checks the bounded queue (one slot, no waiting room: a second request is
// refused with 429) and that a client that disconnects stops its generation and frees the slot, unrecorded.
func TestQueueFullAndDisconnect(t *testing.T) {
	l, dir := openLedger(t)
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Parallel: 1, QueueSize: -1, Ledger: l})
	cancel, done := streamUntilFirst(t, ts.url)
	st, b := ts.post(t, "/v1/completions", []byte(`{"prompt": "Once", "max_tokens": 2}`))
	e := parseError(t, b)
	if st != 429 || e.Error.Code != 429 || !strings.Contains(e.Error.Message, "busy") {
		t.Errorf("second request with the slot busy and no queue: %d %s", st, b)
	}
	cancel()
	<-done
	deadline := time.Now().Add(10 * time.Second)
	for ts.eng.Slots()[0].Busy && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	si := ts.eng.Slots()[0]
	if si.Busy {
		t.Fatal("the slot is still busy after the client went away")
	}
	if si.NPast >= 5+400 {
		t.Errorf("the generation ran to its end (%d tokens in the slot) after the client went away", si.NPast)
	}
	if h := l.Head(); h.Size != 0 {
		t.Errorf("a cancelled answer was recorded: %+v", h)
	}
	if st, b := ts.post(t, "/v1/completions", []byte(`{"prompt": "Once", "max_tokens": 2}`)); st != 200 {
		t.Errorf("after the disconnect: %d %s", st, b)
	}
	if _, err := ledger.Verify(dir); err != nil {
		t.Error(err)
	}
}

// TestGracefulShutdown runs Serve on a listener and cancels it while an answer streams: Serve lets the
// grace period pass, cancels the answer (the client sees its stream end without [DONE]), returns nil, and
// the ledger verifies with the answers that completed.
func TestGracefulShutdown(t *testing.T) {
	l, dir := openLedger(t)
	m := admitModel(t, storiesPath(t), AdmitOptions{})
	s, err := New(m, Options{NCtx: 512, Ledger: l, Grace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "Once", "max_tokens": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, done := streamUntilFirst(t, url)
	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after its context was cancelled")
	}
	if rest := <-done; strings.Contains(rest, "[DONE]") {
		t.Errorf("the answer in flight was not cancelled: it ended with [DONE]")
	}
	rep, err := ledger.Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Size != 1 || rep.TornBytes != 0 {
		t.Errorf("ledger after shutdown: %+v, want the one completed answer and no torn line", rep)
	}
}

// TestTheMessagesFieldIsCheckedAsLlamaServerChecksIt: oaicompat_chat_params_parse (tools/server/
// server-common.cpp) refuses a body without "messages" ("'messages' is required") or with one that is not an
// array ("Expected 'messages' to be an array"), 400 invalid_request_error with exactly that message.
// llama-server takes an empty array (the template renders the generation prompt alone, and the answer runs to
// the end of the context; test_compat_anthropic.py's test_anthropic_empty_messages goes through the same
// parse): bankml's /v1/chat/completions refuses it as OpenAI does (TestAnEmptyMessagesArrayIsRefusedByName), and
// /apply-template, which generates nothing, renders it.
func TestTheMessagesFieldIsCheckedAsLlamaServerChecksIt(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	for _, tc := range []struct {
		name, path, body string
		status           int
		msg              string // the error's message, exactly; "" for an answer
	}{
		{"a body without messages", "/v1/chat/completions", `{"max_tokens": 1}`, 400, "'messages' is required"},
		{"messages that are an object", "/v1/chat/completions", `{"messages": {}, "max_tokens": 1}`, 400, "Expected 'messages' to be an array"},
		{"messages that are a string", "/apply-template", `{"messages": "hi"}`, 400, "Expected 'messages' to be an array"},
		{"a message without content", "/v1/chat/completions", `{"messages": [{"role": "user"}], "max_tokens": 1}`, 400, "message 0: All non-assistant messages must contain 'content'"}, // bankml names the message
		{"an empty list of messages rendered", "/apply-template", `{"messages": []}`, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := ts.post(t, tc.path, []byte(tc.body))
			if st != tc.status {
				t.Fatalf("%d %s, want %d", st, b, tc.status)
			}
			if tc.msg == "" {
				return
			}
			if e := parseError(t, b); e.Error.Type != TypeInvalidRequest || e.Error.Message != tc.msg {
				t.Fatalf("error %s, want %s %q", b, TypeInvalidRequest, tc.msg)
			}
		})
	}
}

// TestOllamaQueueFullIsOllamasBusyAnswer: with every slot busy and no room in the queue, the Ollama routes
// answer as Ollama's scheduler does past OLLAMA_MAX_QUEUE (ErrMaxQueue through handleScheduleError,
// server/routes.go): 503 {"error": "server busy, please try again.  maximum pending requests exceeded"},
// streamed or not; llama-server's and OpenAI's routes keep bankml's 429.
func TestOllamaQueueFullIsOllamasBusyAnswer(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Parallel: 1, QueueSize: -1})
	cancel, done := streamUntilFirst(t, ts.url)
	defer func() { cancel(); <-done }()
	const ollamaBusy = `{"error":"server busy, please try again.  maximum pending requests exceeded"}`
	cases := []struct {
		name, path, body string
		status           int
		want             string // the whole body, or "" to check only the status
	}{
		{"an Ollama generate gets Ollama's 503", "/api/generate", `{"model": "stories260K", "prompt": "Once", "stream": false}`, 503, ollamaBusy},
		{"a streamed Ollama generate gets Ollama's 503", "/api/generate", `{"model": "stories260K", "prompt": "Once"}`, 503, ollamaBusy},
		{"an Ollama chat gets Ollama's 503", "/api/chat", `{"model": "stories260K", "messages": [{"role": "user", "content": "Hi"}], "stream": false}`, 503, ollamaBusy},
		{"an OpenAI completion keeps the 429", "/v1/completions", `{"prompt": "Once", "max_tokens": 2}`, 429, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b := ts.post(t, c.path, []byte(c.body))
			if st != c.status || (c.want != "" && string(b) != c.want) {
				t.Errorf("%s %s: %d %s; want %d %s", c.path, c.body, st, b, c.status, c.want)
			}
		})
	}
}
