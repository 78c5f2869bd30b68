package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/sample"
)

// openaiNpm is the official OpenAI client the test installs: a version
// without an engines restriction that excludes this machine's Node 20 (the
// 7.x line asks for Node 22).
const openaiNpm = "openai@6.30.1"

// installOpenAI installs the openai package with its driver script (installNpm).
func installOpenAI(t *testing.T) string { return installNpm(t, openaiNpm, "openai_client.cjs") }

// installNpm installs pkg (name@version) into a temporary folder with npm
// (no package.json, no lock file: npm install --no-save) and copies the
// driver script testdata/script next to it, returning the script's path. No
// npm, or no registry, is testdata.Absent (a failure under CI=1).
func installNpm(t *testing.T, pkg, script string) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		testdata.Absent(t, "npm not installed: %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		testdata.Absent(t, "node not installed: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(npm, "install", "--no-save", "--no-audit", "--no-fund", "--no-package-lock", "--prefix", dir, pkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		testdata.Absent(t, "npm install %s (is the npm registry reachable?): %v\n%s", pkg, err, out)
	}
	src, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, script)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// npmCase is one request the Node script sends.
type npmCase struct {
	Kind         string         `json:"kind"` // "chat" or "completion"
	Stream       bool           `json:"stream"`
	IncludeUsage bool           `json:"include_usage"` // stream_options.include_usage
	CommonLoop   bool           `json:"common_loop"`   // read chunk.choices[0] of every chunk, as the READMEs' loop
	Body         map[string]any `json:"body"`
}

// npmResult is the script's account of one answer.
type npmResult struct {
	Text         string          `json:"text"`
	FinishReason string          `json:"finish_reason"`
	Usage        *npmUsage       `json:"usage"`
	Receipt      json.RawMessage `json:"receipt"`
	Chunks       int             `json:"chunks"`
	Error        string          `json:"error"`
}

type npmUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// openaiParams are llama-server's parameters for an OpenAI body: the
// server's base with the body's temperature, top_p and seed.
func openaiParams(t *testing.T, base sample.Params, body map[string]any) sample.Params {
	t.Helper()
	p := base
	if v, ok := body["temperature"].(float64); ok {
		p.Temp = float32(v)
	}
	if v, ok := body["top_p"].(float64); ok {
		p.TopP = float32(v)
	}
	if v, ok := body["seed"].(float64); ok {
		p.Seed = uint32(int64(v))
	}
	if err := p.ApplyServerLimits(base); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOpenAINpmClientGetsTheReferencesTokens runs the official `openai` npm
// client (chat.completions.create and completions.create, streamed with
// stream_options.include_usage and not) from Node against `bankml serve`
// binaries on stories260K and the synthetic qwen3 model, and checks every
// answer against the reference: the text of the tokens libllama samples
// (internal/reftest.Generate) for the prompt tokens (the chat prompt as the server's
// /apply-template renders it, tokenized by the reference), finish_reason,
// usage, and a receipt whose response_sha256 is that of the text received.
func TestOpenAINpmClientGetsTheReferencesTokens(t *testing.T) {
	script := installOpenAI(t)
	total, same := 0, 0
	for _, mdl := range []struct{ name, path string }{{"stories260K", stories(t)}, {"qwen3-tiny", qwen3Model(t)}} {
		t.Run(mdl.name, func(t *testing.T) {
			o := newOracle(t, mdl.path)
			srv := startServe(t, mdl.path, "-t", fmt.Sprint(refThreads))
			var ps struct {
				Models []struct {
					Name          string `json:"name"`
					ContextLength int    `json:"context_length"`
				} `json:"models"`
			}
			getJSON(t, srv.URL+"/api/ps", &ps)
			o.nCtx = ps.Models[0].ContextLength
			var models struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			getJSON(t, srv.URL+"/v1/models", &models)
			model := models.Data[0].ID
			msgs := []map[string]any{{"role": "user", "content": "Tell me a story."}}
			cases := []npmCase{
				{"chat", false, false, false, map[string]any{"model": model, "messages": msgs, "temperature": 0.0, "max_tokens": 24.0}},
				{"chat", true, true, false, map[string]any{"model": model, "messages": msgs, "temperature": 0.8, "top_p": 0.9, "seed": 11.0, "max_tokens": 24.0}},
				{"chat", true, false, true, map[string]any{"model": model, "messages": msgs, "temperature": 0.8, "top_p": 0.9, "seed": 11.0, "max_tokens": 24.0}},
				{"completion", false, false, false, map[string]any{"model": model, "prompt": "Once upon a time", "temperature": 1.0, "seed": 5.0, "max_tokens": 24.0}},
				{"completion", true, true, false, map[string]any{"model": model, "prompt": "Once upon a time", "temperature": 0.0, "max_tokens": 24.0}},
				{"completion", true, false, true, map[string]any{"model": model, "prompt": "Once upon a time", "temperature": 0.0, "max_tokens": 24.0}},
			}
			spec, _ := json.Marshal(map[string]any{"baseURL": srv.URL + "/v1", "cases": cases})
			cmd := exec.Command("node", script)
			cmd.Stdin = bytes.NewReader(spec)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
			}
			var results []npmResult
			if err := json.Unmarshal(out, &results); err != nil || len(results) != len(cases) {
				t.Fatalf("script output %q: %v", out, err)
			}
			for i, c := range cases {
				total++
				r := results[i]
				name := fmt.Sprintf("%s stream=%v include_usage=%v common_loop=%v", c.Kind, c.Stream, c.IncludeUsage, c.CommonLoop)
				if r.Error != "" {
					t.Errorf("%s: %s", name, r.Error)
					continue
				}
				var prompt []int32
				if c.Kind == "chat" {
					var tmpl struct {
						Prompt string `json:"prompt"`
					}
					postJSON(t, srv.URL+"/apply-template", map[string]any{"messages": msgs}, &tmpl)
					prompt = o.tokenize(t, tmpl.Prompt)
				} else {
					prompt = o.tokenize(t, c.Body["prompt"].(string))
				}
				want := o.generate(t, prompt, openaiParams(t, o.base, c.Body), int(c.Body["max_tokens"].(float64)))
				ok := true
				wantText := jsonText(want.text)
				if c.Kind == "chat" {
					// llama-server answers the chat template's parse of its text (a stream: of what it streamed)
					text := want.text
					if c.Stream {
						text = text[:validUTF8Prefix(text)]
					}
					wantText = o.chatParse(t, map[string]any{"messages": msgs}, text).Content
				}
				if r.Text != wantText || r.FinishReason != want.finish {
					t.Errorf("%s: text %q finish %q; reference %q %q", name, r.Text, r.FinishReason, wantText, want.finish)
					ok = false
				}
				// A chat stream has usage only when asked for (OpenAI's usage chunk); every other answer has it.
				wantUsage := !c.Stream || c.Kind == "completion" || c.IncludeUsage
				switch {
				case !wantUsage && r.Usage != nil:
					t.Errorf("%s: usage %+v without stream_options.include_usage", name, r.Usage)
					ok = false
				case wantUsage && (r.Usage == nil || r.Usage.CompletionTokens != len(want.tokens) || r.Usage.PromptTokens != len(prompt)):
					t.Errorf("%s: usage %+v; reference %d completion, %d prompt tokens", name, r.Usage, len(want.tokens), len(prompt))
					ok = false
				}
				var rc struct {
					ResponseSHA256 string `json:"response_sha256"`
				}
				if err := json.Unmarshal(r.Receipt, &rc); err != nil || rc.ResponseSHA256 != sha256Hex([]byte(r.Text)) {
					t.Errorf("%s: receipt %s does not hash the text received (%s)", name, r.Receipt, sha256Hex([]byte(r.Text)))
					ok = false
				}
				if c.Stream && r.Chunks < 3 {
					t.Errorf("%s: %d chunks", name, r.Chunks)
					ok = false
				}
				if ok {
					same++
				}
			}
		})
	}
	t.Logf("openai npm client (%s): %d of %d answers token-identical to the reference", openaiNpm, same, total)
}

// getJSON GETs url and decodes its 200 answer into v.
func getJSON(t testing.TB, url string, v any) { doJSON(t, http.MethodGet, url, nil, v) }

// postJSON POSTs body as JSON to url and decodes its 200 answer into v.
func postJSON(t testing.TB, url string, body, v any) {
	b, _ := json.Marshal(body)
	doJSON(t, http.MethodPost, url, b, v)
}

func doJSON(t testing.TB, method, url string, body []byte, v any) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	c := http.Client{Timeout: time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s", method, url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
}
