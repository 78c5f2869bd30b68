package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/sample"
)

var (
	tempOnce sync.Once
	tempDir  string

	qwen3Once sync.Once
	qwen3Path string
	qwen3Err  error
)

// sharedTemp is a folder shared by the tests of this binary (removed by TestMain).
func sharedTemp() string {
	tempOnce.Do(func() {
		if d, err := os.MkdirTemp("", "bankml-serve-test-"); err == nil {
			tempDir = d
		}
	})
	return tempDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tempDir != "" {
		os.RemoveAll(tempDir)
	}
	os.Exit(code)
}

// storiesPath is stories260K (a trained llama, SentencePiece, 512 tokens, no chat template: ChatML).
func storiesPath(t testing.TB) string { return testdata.Model(t, "stories260K.gguf") }

// qwen3Model writes (once per test binary) a tiny synthetic qwen3 model with the real Qwen3 vocabulary and
// chat template.
func qwen3Model(t testing.TB) string {
	t.Helper()
	dir := filepath.Dir(testdata.Model(t, "qwen3/tokenizer.json.gz"))
	qwen3Once.Do(func() {
		v, err := synth.Qwen3Vocab(dir, synth.Qwen3NVocab)
		if err != nil {
			qwen3Err = err
			return
		}
		shape, err := synth.Preset("tiny")
		if err != nil {
			qwen3Err = err
			return
		}
		shape.Tied = true
		out := filepath.Join(sharedTemp(), "serve-qwen3.gguf")
		cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.Q8_0, Embd: gguf.Q8_0, Vocab: v, Seed: 11}
		if _, err := synth.WriteFile(out, cfg); err != nil {
			qwen3Err = err
			return
		}
		qwen3Path = out
	})
	if qwen3Err != nil {
		t.Fatal(qwen3Err)
	}
	return qwen3Path
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

func (ts *testServer) get(t testing.TB, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(ts.url + path)
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

// refModel loads the reference's copy of a model file.
func refModel(t testing.TB, path string) *reference.Model {
	t.Helper()
	lib, err := reference.Load()
	if errors.Is(err, reference.ErrNotInstalled) {
		testdata.Absent(t, "skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	rm, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	return rm
}

// refAnswer is what the reference generates for a prompt as a llama-server slot does: the prompt decoded in
// one batch in a fresh context of nCtx, a sampler chain built as common_sampler_init builds it (logit
// biases with the model's suppress tokens, every stage of p.Samplers, no-op ones included, then the
// seeded draw), the prompt accepted into it (init_sampler), then sample, accept, stop at an
// end-of-generation token (kept, as llama-server counts it) or after n tokens.
func refAnswer(t testing.TB, rm *reference.Model, prompt []int32, p sample.Params, n, nCtx int) []int32 {
	t.Helper()
	suppress, err := rm.SuppressTokens()
	if err != nil {
		t.Fatal(err)
	}
	c, err := rm.NewSamplerChain()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	var bias []reference.LogitBias
	for _, b := range p.LogitBias {
		bias = append(bias, reference.LogitBias{Token: b.Token, Bias: b.Bias})
	}
	for _, s := range suppress {
		bias = append(bias, reference.LogitBias{Token: s, Bias: float32(math.Inf(-1))})
	}
	if len(bias) > 0 {
		c.AddLogitBias(bias)
	}
	mk := int(p.MinKeep)
	for _, st := range p.Samplers {
		switch st {
		case sample.Penalties:
			c.AddPenalties(p.PenaltyLastN, p.PenaltyRepeat, p.PenaltyFreq, p.PenaltyPresent)
		case sample.Dry:
			c.AddDry(p.DryMultiplier, p.DryBase, p.DryAllowedLength, p.DryPenaltyLastN, p.DrySequenceBreakers)
		case sample.TopNSigma:
			c.AddTopNSigma(p.TopNSigma)
		case sample.TopK:
			c.AddTopK(p.TopK)
		case sample.TypicalP:
			c.AddTypical(p.TypicalP, mk)
		case sample.TopP:
			c.AddTopP(p.TopP, mk)
		case sample.MinP:
			c.AddMinP(p.MinP, mk)
		case sample.XTC:
			c.AddXTC(p.XTCProbability, p.XTCThreshold, mk, p.Seed)
		case sample.Temperature:
			c.AddTempExt(p.Temp, p.DynatempRange, p.DynatempExponent)
		default:
			t.Fatalf("no reference stage for %v", st)
		}
	}
	c.AddDist(p.Seed)
	for _, tok := range prompt {
		c.Accept(tok)
	}
	sess, err := rm.NewSession(nCtx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	logits, err := sess.Decode(prompt)
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for len(out) < n {
		a, err := c.Apply(logits)
		if err != nil {
			t.Fatal(err)
		}
		tok := a.Cands[a.Selected].ID
		c.Accept(tok)
		out = append(out, tok)
		eog, err := rm.IsEOG(tok)
		if err != nil {
			t.Fatal(err)
		}
		if eog || len(out) == n {
			break
		}
		if logits, err = sess.Decode([]int32{tok}); err != nil {
			t.Fatal(err)
		}
	}
	return out
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
