package clients

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/serve"
)

// refThreads is the thread count of the reference sessions and of the
// servers under test (-t 1), so that split-KV attention has the same shape.
const refThreads = 1

// oracle is a model as the reference sees it, with what the server starts
// every request from.
type oracle struct {
	path string
	ref  *reference.Model
	base sample.Params // sample.DefaultParams with the model's general.sampling.* (the server's base)
	nCtx int           // the server's slot context, 0 before a server reports it
}

func newOracle(t testing.TB, path string) *oracle {
	t.Helper()
	rm, err := reftest.Lib(t).LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base := sample.DefaultParams()
	sample.ApplyModelDefaults(&base, f)
	return &oracle{path: path, ref: rm, base: base}
}

// tokenize is llama-server's tokenization of a prompt text (add_special,
// parse_special), by the reference.
func (o *oracle) tokenize(t testing.TB, text string) []int32 {
	t.Helper()
	toks, err := o.ref.Tokenize(text, true, true)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

// answer is what llama-server answers: the tokens, their text (pieces
// without special tokens' text, as llama-server streams them) and the
// finish reason.
type answer struct {
	tokens []int32
	text   string
	finish string
}

// generate runs the reference on prompt with p for at most n tokens, as a
// fresh llama-server slot runs it (reftest.Generate: the server's context,
// no stop strings).
func (o *oracle) generate(t testing.TB, prompt []int32, p sample.Params, n int) answer {
	t.Helper()
	return o.generateStop(t, prompt, p, n, nil)
}

// generateStop is generate with stop strings.
func (o *oracle) generateStop(t testing.TB, prompt []int32, p sample.Params, n int, stop []string) answer {
	t.Helper()
	s, err := o.ref.NewSession(o.nCtx, refThreads)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := reftest.Generate(o.ref, s, reftest.Turn{Prompt: prompt, Sampling: p, NPredict: n, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	return answer{tokens: a.Tokens, text: a.Text, finish: a.Finish}
}

// testServer is serve.Server over a model on an httptest server.
type testServer struct {
	URL string
	srv *serve.Server
	m   *serve.Model
}

// startTestServer admits path (unpinned) and serves it in-process with -t 1.
func startTestServer(t testing.TB, path string, o serve.Options) *testServer {
	t.Helper()
	m, err := serve.Admit(path, serve.AdmitOptions{Unpinned: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	o.Threads = refThreads
	s, err := serve.New(m, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &testServer{URL: hs.URL, srv: s, m: m}
}

// stories is stories260K.
func stories(t testing.TB) string { return testdata.Model(t, "stories260K.gguf") }

// qwen3Model is a synthetic qwen3 model of synth's "tiny" shape (F16
// weights) with the real Qwen3 vocabulary and chat template, from the
// oracle tests' cache (internal/synthcache).
func qwen3Model(t testing.TB) string {
	t.Helper()
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	return synthcache.File(t, "serve-qwen3-tiny-F16", synth.Config{Arch: synth.ArchQwen3, Shape: shape,
		Weight: gguf.F16, Embd: gguf.F16, Output: gguf.F16, Vocab: synthcache.Qwen3Vocab(t), Seed: 21})
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// jsonText is the text a JSON client decodes from s as a JSON string
// encoder writes it: each byte of an invalid UTF-8 sequence becomes U+FFFD
// (encoding/json's rule; the reference's pieces may split a character
// across tokens that never complete it).
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

var (
	chatShimOnce sync.Once
	chatShim     *reference.ChatShim
	chatShimErr  error
)

// chatParse is what llama-server answers for a chat request's generated text: common_chat_parse (in
// libllama-common, through the chat shim) with the parser the model's template makes for body (an OpenAI chat
// body), the text complete.
func (o *oracle) chatParse(t testing.TB, body map[string]any, text string) reference.ChatParse {
	t.Helper()
	chatShimOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		chatShim, chatShimErr = reference.StartChatShim(ctx)
	})
	if chatShimErr != nil {
		if errors.Is(chatShimErr, reference.ErrNotInstalled) {
			testdata.Absent(t, "chat oracle: %v", chatShimErr)
		}
		t.Fatal(chatShimErr)
	}
	b, _ := json.Marshal(body)
	a, err := chatShim.ApplyParse(o.path, b, -1, []string{text})
	if err != nil {
		t.Fatal(err)
	}
	if a.Error != "" {
		t.Fatalf("reference: %s", a.Error)
	}
	return a.Parses[0][len(a.Parses[0])-1]
}

// hasTemplate reports whether the model file has a chat template (Ollama's /api/generate renders the prompt
// with it, and bankml parses the answer with its parser).
func (o *oracle) hasTemplate(t testing.TB) bool {
	t.Helper()
	f, err := gguf.Open(o.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, _ := f.GetString("tokenizer.chat_template")
	return src != ""
}

// validUTF8Prefix is the length of s without a trailing incomplete UTF-8 sequence (what a stream releases).
func validUTF8Prefix(s string) int {
	n := len(s)
	for i := 1; i <= 4 && i <= n; i++ {
		c := s[n-i]
		if (c&0xE0 == 0xC0 && i < 2) || (c&0xF0 == 0xE0 && i < 3) || (c&0xF8 == 0xF0 && i < 4) {
			return n - i
		}
	}
	return n
}
