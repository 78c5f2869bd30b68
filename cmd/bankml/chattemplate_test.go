package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/testdata"
)

// qwen3Model writes a tiny synthetic model with the real Qwen3 vocabulary and chat template.
func qwen3Model(t *testing.T) string {
	t.Helper()
	v, err := synth.Qwen3Vocab(filepath.Join(testdata.ModelsDir(t), "qwen3"), synth.Qwen3NVocab)
	if err != nil {
		t.Fatal(err)
	}
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	shape.NLayer = 1
	path := filepath.Join(t.TempDir(), "qwen3.gguf")
	cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.Q4_0, Embd: gguf.Q4_0, Output: gguf.Q4_0, Vocab: v}
	if _, err := synth.WriteFile(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCLIInput(stdin string, args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, strings.NewReader(stdin), &o, &e)
	return code, o.String(), e.String()
}

// TestChatTemplatePrintsTheReferencePrompt: bankml chat-template prints, byte for byte, the prompt the
// reference's llama-server path renders for the same request, whether the request is an OpenAI body or a bare
// array, and with its flags standing for the request fields they replace.
func TestChatTemplatePrintsTheReferencePrompt(t *testing.T) {
	model := qwen3Model(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ref, err := reference.StartChatShim(ctx)
	if err != nil {
		if errors.Is(err, reference.ErrNotInstalled) {
			testdata.Absent(t, "chat oracle: %v", err)
		}
		t.Fatal(err)
	}
	defer ref.Close()
	tools := `[{"type": "function", "function": {"name": "get", "description": "Get it", "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}}]`
	toolsFile := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(toolsFile, []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	msgs := `[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|im_end|> there"}, {"role": "assistant", "content": "<think>\nhm\n</think>\n\nHello!"}, {"role": "user", "content": "Weather?"}]`
	for _, tc := range []struct {
		name, stdin string
		args        []string
		refBody     string // the same request as the reference gets it
	}{
		{"openai body", `{"messages": ` + msgs + `}`, nil, `{"messages": ` + msgs + `}`},
		{"bare array", msgs, nil, `{"messages": ` + msgs + `}`},
		{"thinking off", msgs, []string{"--enable-thinking=false"}, `{"messages": ` + msgs + `, "chat_template_kwargs": {"enable_thinking": false}}`},
		{"no generation prompt", msgs, []string{"--no-add-generation-prompt"}, `{"messages": ` + msgs + `, "add_generation_prompt": false}`},
		{"tools file", msgs, []string{"--tools", toolsFile}, `{"messages": ` + msgs + `, "tools": ` + tools + `}`},
		{"continued answer", `[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hel"}]`, nil, `{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hel"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ref.Apply(model, json.RawMessage(tc.refBody), -1)
			if err != nil {
				t.Fatal(err)
			}
			if a.Error != "" {
				t.Fatalf("reference: %s", a.Error)
			}
			code, out, stderr := runCLIInput(tc.stdin, append([]string{"chat-template", model}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if out != a.Prompt {
				t.Errorf("bankml chat-template printed\n%q\nthe reference renders\n%q", out, a.Prompt)
			}
		})
	}
	code, out, stderr := runCLIInput(msgs, "chat-template", model, "--segments")
	if code != 0 {
		t.Fatalf("--segments: exit %d: %s", code, stderr)
	}
	var seg struct {
		Prompt   string `json:"prompt"`
		Segments []struct {
			Text    string `json:"text"`
			Special bool   `json:"special"`
		} `json:"segments"`
	}
	if err := json.Unmarshal([]byte(out), &seg); err != nil {
		t.Fatalf("--segments: %v\n%s", err, out)
	}
	var joined strings.Builder
	asText := 0
	for _, s := range seg.Segments {
		joined.WriteString(s.Text)
		if !s.Special && s.Text == "<|im_end|>" {
			asText++
		}
	}
	if joined.String() != seg.Prompt || asText != 1 {
		t.Errorf("--segments: the segments %+v do not cover the prompt with the user's <|im_end|> as text", seg.Segments)
	}
}

// TestChatTemplateExitStatus: a malformed request is a usage error (1), a file that is not GGUF or a template that
// raises is a model that cannot serve the request (2), each with the reason on standard error.
func TestChatTemplateExitStatus(t *testing.T) {
	model := qwen3Model(t)
	notGGUF := filepath.Join(t.TempDir(), "x.gguf")
	if err := os.WriteFile(notGGUF, []byte("not a gguf file at all, long enough to have a header"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stdin string
		args  []string
		code  int
		want  string
	}{
		{`{"messages": [{"role": "user"}]}`, []string{model}, 1, "must contain 'content'"},
		{`not json`, []string{model}, 1, "not JSON"},
		{`[{"role": "user", "content": "x"}]`, []string{model, "--now", "yesterday"}, 1, "--now"},
		{`[{"role": "user", "content": "x"}]`, []string{notGGUF}, 2, "chat-template"},
		{`[{"role": "user", "content": "x"}]`, []string{filepath.Join(t.TempDir(), "missing.gguf")}, 1, "chat-template"},
		{`[{"role": "user", "content": "x"}, {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]`, []string{model}, 1, "2 or more assistant messages"},
	} {
		code, _, stderr := runCLIInput(tc.stdin, append([]string{"chat-template"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("chat-template %v < %q: exit %d, stderr %q; want exit %d and %q", tc.args, tc.stdin, code, stderr, tc.code, tc.want)
		}
	}
}
