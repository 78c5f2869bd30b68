package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/sample"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shim != nil {
		shim.Close()
	}
	os.Exit(code)
}

// refChat is the reference's chat oracle (common_chat_templates_apply and common_chat_parse in
// libllama-common), started once per test binary (chatShim).
func refChat(t testing.TB) *reference.ChatShim {
	t.Helper()
	return chatShim(t)
}

// refParse is common_chat_parse of text with the parser llama-server builds for a chat body on the model
// (complete, or partial).
func refParse(t testing.TB, model string, body []byte, text string, partial bool) reference.ChatParse {
	t.Helper()
	a, err := refChat(t).ApplyParse(model, body, -1, []string{text})
	if err != nil {
		t.Fatal(err)
	}
	if a.Error != "" {
		t.Fatalf("reference: %s", a.Error)
	}
	ps := a.Parses[0]
	if partial {
		return ps[len(ps)-2]
	}
	return ps[len(ps)-1]
}

// refReceiptAnswer is the answer a receipt hashes for a parsed chat answer (serve's receiptAnswer).
func refReceiptAnswer(t testing.TB, p reference.ChatParse) []byte {
	t.Helper()
	a := chat.Answer{Content: p.Content, ReasoningContent: p.ReasoningContent}
	for _, c := range p.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, chat.ToolCall{Name: c.Name, Arguments: c.Arguments, ID: c.ID})
	}
	return receiptAnswer(a)
}

// storiesPath is stories260K (a trained llama, SentencePiece, 512 tokens, no chat template: ChatML).
func storiesPath(t testing.TB) string { return testdata.Model(t, "stories260K.gguf") }

// qwen3Model is a tiny synthetic qwen3 model with the real Qwen3 vocabulary and chat template (kept between
// runs by internal/synthcache).
func qwen3Model(t testing.TB) string {
	t.Helper()
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	shape.Tied = true
	return synthcache.File(t, "serve-qwen3", synth.Config{
		Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.Q8_0, Embd: gguf.Q8_0, Vocab: synthcache.Qwen3Vocab(t), Seed: 11,
	})
}

// testServer is a Server behind an httptest server.
type testServer struct {
	*Server
	ts  *httptest.Server
	url string
}

// newTestServer admits the model at path (unpinned unless o says otherwise) and serves it.
func newTestServer(t testing.TB, path string, ao AdmitOptions, o Options) *testServer {
	t.Helper()
	if ao.Manifest == "" {
		ao.Unpinned = true
	}
	m, err := Admit(path, ao)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if o.NCtx == 0 {
		o.NCtx = 512
	}
	o.Version = "test"
	s, err := New(m, o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return &testServer{Server: s, ts: ts, url: ts.URL}
}

// post sends body to path and returns the status and the answer's bytes.
func (ts *testServer) post(t testing.TB, path string, body []byte, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

func (ts *testServer) get(t testing.TB, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

// do sends req and returns the status and the whole answer.
func do(t testing.TB, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openLedger opens a ledger in a fresh folder, closed when the test ends.
func openLedger(t testing.TB) (*ledger.Ledger, string) {
	t.Helper()
	dir := t.TempDir()
	l, _, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, dir
}

// storiesWithRef serves stories260K and loads the reference's copy, with the tokens of "Once upon a time"
// as the reference tokenizes a completion prompt.
func storiesWithRef(t testing.TB) (*testServer, *reference.Model, []int32) {
	t.Helper()
	path := storiesPath(t)
	rm := refModel(t, path)
	ts := newTestServer(t, path, AdmitOptions{}, Options{})
	prompt, err := rm.Tokenize("Once upon a time", true, true)
	if err != nil {
		t.Fatal(err)
	}
	return ts, rm, prompt
}

// refModel loads the reference's copy of a model file (skipped, failed under CI, without the reference).
func refModel(t testing.TB, path string) *reference.Model {
	t.Helper()
	rm, err := reftest.Lib(t).LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	return rm
}

// refAnswer is what the reference generates for a prompt as a llama-server slot does (reftest.Generate on
// a fresh session of nCtx, one thread): at most n tokens, an ending end-of-generation token included.
func refAnswer(t testing.TB, rm *reference.Model, prompt []int32, p sample.Params, n, nCtx int) []int32 {
	t.Helper()
	s, err := rm.NewSession(nCtx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := reftest.Generate(rm, s, reftest.Turn{Prompt: prompt, Sampling: p, NPredict: n})
	if err != nil {
		t.Fatal(err)
	}
	return a.Tokens
}

// refText is the text llama-server sends for tokens: each piece without special tokens' texts.
func refText(t testing.TB, rm *reference.Model, toks []int32) string {
	t.Helper()
	var b []byte
	for _, tok := range toks {
		p, err := rm.TokenToPiece(tok, false)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, p...)
	}
	return string(b)
}
