package reference

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// chatShimSource is a small C++ program that renders chat prompts with the reference's libllama-common the way
// llama-server v0.5.0 does (see the comment at its top). It is bankml's code; it is compiled at test time against
// headers from a clone of the reference's own source bundle, so its structs match the compiled library's.
//
//go:embed chatshim.cpp.in
var chatShimSource string

// ChatShim is a running chat-template oracle: the compiled shim, reading one JSON request per line and answering
// one JSON object per line. Why a shim: llama-server's path (common_chat_templates_init and
// common_chat_templates_apply in libllama-common.so) takes and returns C++ objects (std::string, std::vector,
// common_json), which purego cannot build; node-llama-cpp's AddonJinjaRenderer reaches llama.cpp's Jinja engine
// but none of the server's preparation of the messages. A ChatShim is safe for concurrent use (calls are
// serialized).
type ChatShim struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	dir  string
	errs *strings.Builder
}

// ChatAnswer is the shim's answer for one request. For a model request: Prompt and GenerationPrompt are
// common_chat_params' prompt and generation_prompt, SupportsThinking is common_chat_templates_support_enable_thinking,
// AddBOS is llama_vocab_get_add_bos, Source is common_chat_templates_source and Caps
// common_chat_templates_get_caps. Error holds the text of an exception (a template that raised, a bad request).
type ChatAnswer struct {
	Prompt           string          `json:"prompt"`
	GenerationPrompt string          `json:"generation_prompt"`
	SupportsThinking bool            `json:"supports_thinking"`
	AddBOS           bool            `json:"add_bos"`
	Source           string          `json:"source"`
	Caps             map[string]bool `json:"caps"`
	Error            string          `json:"error"`
	Parts            []ChatPart      `json:"parts"`

	// For a request: common_chat_params' grammar, grammar_lazy, grammar_triggers, preserved_tokens,
	// additional_stops, parser (the saved PEG arena, JSON), supports_thinking, thinking_start_tag and
	// thinking_end_tags.
	Grammar          string        `json:"grammar"`
	GrammarLazy      bool          `json:"grammar_lazy"`
	Triggers         []ChatTrigger `json:"grammar_triggers"`
	PreservedTokens  []string      `json:"preserved_tokens"`
	AdditionalStops  []string      `json:"additional_stops"`
	Parser           string        `json:"parser"`
	ParamsThinking   bool          `json:"supports_thinking_params"`
	ThinkingStartTag string        `json:"thinking_start_tag"`
	ThinkingEndTags  []string      `json:"thinking_end_tags"`

	// Parses are common_chat_parse's results for each answer of ApplyParse: every byte prefix as a partial
	// answer (len+1 of them), then the whole answer as complete.
	Parses [][]ChatParse `json:"parses"`

	// MessageJSON and TextJSON answer ParseGenerated: the message llama-server's chat parser makes of the
	// generated text (common_chat_msg::to_json_oaicompat) and the raw text, each as JSON dumped with
	// common_json::dump_safe (nlohmann's replace error handler), the bytes llama-server sends.
	MessageJSON string `json:"message_json"`
	TextJSON    string `json:"text_json"`
}

// ChatTrigger is a common_grammar_trigger: its type (0 token, 1 word, 2 pattern, 3 full pattern) and value.
type ChatTrigger struct {
	Type  int    `json:"type"`
	Value string `json:"value"`
}

// ChatParse is one common_chat_parse result, or the text of its exception.
type ChatParse struct {
	Content          string         `json:"content"`
	ReasoningContent string         `json:"reasoning_content"`
	ToolCalls        []ChatToolCall `json:"tool_calls"`
	Error            string         `json:"error"`
}

// ChatToolCall is a parsed tool call.
type ChatToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	ID        string `json:"id"`
}

// ChatPart is one piece of a marked render: text that came from the variables (Input) or from the template.
type ChatPart struct {
	Input bool
	Text  string
}

// UnmarshalJSON reads the shim's [is_input, text] pair.
func (p *ChatPart) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 2 {
		return fmt.Errorf("reference: chat part %s: want [bool, string]", b)
	}
	if err := json.Unmarshal(raw[0], &p.Input); err != nil {
		return err
	}
	return json.Unmarshal(raw[1], &p.Text)
}

// BundlePath is the git bundle of llama.cpp's source that node-llama-cpp ships beside the reference
// (node-llama-cpp/llama/gitRelease.bundle, the exact source of the compiled libraries).
func BundlePath() (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "..", "..", "..", "..", "node-llama-cpp", "llama", "gitRelease.bundle")
	if !isFile(p) {
		return "", fmt.Errorf("reference: no source bundle at %s: %w", p, ErrNotInstalled)
	}
	return filepath.Clean(p), nil
}

// StartChatShim builds the shim unless a build of the same source for the same reference is in the cache folder
// ($TMPDIR/bankml-chatshim-HASH): a sparse clone of the source bundle (common/, include/, ggml/include/, vendor/,
// models/templates/), g++ -std=c++17 against libllama-common.so, libllama and libggml of [Dir] (some 10 s); then
// it starts the program. The error wraps [ErrNotInstalled] when the reference, git or g++ is missing.
func StartChatShim(ctx context.Context) (*ChatShim, error) {
	bins, err := Dir()
	if err != nil {
		return nil, err
	}
	bundle, err := BundlePath()
	if err != nil {
		return nil, err
	}
	for _, tool := range []string{"git", "g++"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("reference: chat shim needs %s: %v: %w", tool, err, ErrNotInstalled)
		}
	}
	// The built shim is kept in a cache folder named by a hash of its source, the libraries' folder and the
	// bundle's identity, so that test binaries of several packages (and later runs) build it once.
	st, err := os.Stat(bundle)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	key := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%d", chatShimSource, bins, bundle, st.Size(), st.ModTime().UnixNano())))
	cache := filepath.Join(os.TempDir(), "bankml-chatshim-"+hex.EncodeToString(key[:8]))
	bin := filepath.Join(cache, "chatshim")
	if !isFile(bin) {
		if err := buildChatShim(ctx, bundle, bins, cache); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bin)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	errs := &strings.Builder{}
	cmd.Stderr = errs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("reference: starting the chat shim: %w", err)
	}
	return &ChatShim{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), dir: cache, errs: errs}, nil
}

// buildChatShim clones the bundle's headers and compiles the shim into a fresh folder, then renames that folder
// to cache (a concurrent build that got there first wins; its result is the same).
func buildChatShim(ctx context.Context, bundle, bins, cache string) error {
	dir, err := os.MkdirTemp(filepath.Dir(cache), filepath.Base(cache)+".tmp-")
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "src")
	if err := sparseClone(ctx, bundle, src, "/common/", "/include/", "/ggml/include/", "/vendor/", "/models/templates/"); err != nil {
		return err
	}
	cpp := filepath.Join(dir, "chatshim.cpp")
	if err := os.WriteFile(cpp, []byte(chatShimSource), 0o644); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	args := []string{"-std=c++17", "-O1", "-o", filepath.Join(dir, "chatshim"), cpp,
		"-I" + filepath.Join(src, "common"), "-I" + filepath.Join(src, "include"),
		"-I" + filepath.Join(src, "ggml", "include"), "-I" + filepath.Join(src, "vendor"),
		"-L" + bins, "-l:libllama-common.so", "-l:" + libLlama, "-l:" + libGGML, "-l:" + libGGMLBase,
		"-Wl,-rpath," + bins}
	if err := runIn(ctx, dir, "g++", args...); err != nil {
		return err
	}
	if err := os.Rename(dir, cache); err != nil && !isFile(filepath.Join(cache, "chatshim")) {
		return fmt.Errorf("reference: %w", err)
	}
	return nil
}

// runIn runs a command in dir, its output quoted in the error.
func runIn(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("reference: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// sparseClone checks out the given folders of the source bundle into dst.
func sparseClone(ctx context.Context, bundle, dst string, folders ...string) error {
	dir := filepath.Dir(dst)
	if err := runIn(ctx, dir, "git", "clone", "-q", "--no-checkout", "--depth", "1", bundle, dst); err != nil {
		return err
	}
	if err := runIn(ctx, dir, "git", append([]string{"-C", dst, "sparse-checkout", "set", "--no-cone"}, folders...)...); err != nil {
		return err
	}
	return runIn(ctx, dir, "git", "-C", dst, "checkout", "-q")
}

// call sends one request and reads its answer.
func (s *ChatShim) call(req any) (ChatAnswer, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return ChatAnswer{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		return ChatAnswer{}, fmt.Errorf("reference: chat shim: %w (stderr: %s)", err, s.errs.String())
	}
	resp, err := s.out.ReadBytes('\n')
	if err != nil {
		return ChatAnswer{}, fmt.Errorf("reference: chat shim: %w (stderr: %s)", err, s.errs.String())
	}
	var a ChatAnswer
	if err := json.Unmarshal(resp, &a); err != nil {
		return ChatAnswer{}, fmt.Errorf("reference: chat shim answer %q: %w", resp, err)
	}
	return a, nil
}

// Apply renders a request body (OpenAI-shaped JSON, as llama-server's /apply-template takes it) with the model's
// template, as llama-server started with default options does; reasoning is llama-server's --reasoning (-1 auto,
// 0 off, 1 on). A nil body only loads the model and reports its template facts.
func (s *ChatShim) Apply(model string, body json.RawMessage, reasoning int) (ChatAnswer, error) {
	req := map[string]any{"model": model, "reasoning": reasoning}
	if body != nil {
		req["body"] = body
	}
	return s.call(req)
}

// ApplyParse is Apply, then common_chat_parse of each answer with the request's parser as llama-server runs it
// (the saved parser loaded back, the generation prompt prepended): every byte prefix as partial, then the whole
// answer as complete (ChatAnswer.Parses).
func (s *ChatShim) ApplyParse(model string, body json.RawMessage, reasoning int, answers []string) (ChatAnswer, error) {
	raw := make([][]int, len(answers))
	for i, a := range answers {
		raw[i] = make([]int, len(a))
		for j := 0; j < len(a); j++ {
			raw[i][j] = int(a[j])
		}
	}
	return s.call(map[string]any{"model": model, "reasoning": reasoning, "body": body, "answers": raw})
}

// ParseGenerated is what llama-server sends, not streamed, for generated (the answer's bytes, valid UTF-8 or
// not) to a chat request body: Apply's answer plus MessageJSON (common_chat_parse of generated with the parser
// params llama-server derives from the template's, its default reasoning format deepseek, then the message's
// to_json_oaicompat, dumped by dump_safe) and TextJSON (the bytes as a JSON string, dumped by dump_safe: the
// "text"/"content" of /v1/completions and /completion).
func (s *ChatShim) ParseGenerated(model string, body json.RawMessage, generated []byte) (ChatAnswer, error) {
	return s.call(map[string]any{"model": model, "reasoning": -1, "body": body, "generated_hex": hex.EncodeToString(generated)})
}

// Render runs a template alone through common_chat_template_direct_apply (no llama-server preparation): the
// variables messages, bos_token, eos_token, enable_thinking, tools when non-nil, add_generation_prompt when true,
// and extra's keys.
func (s *ChatShim) Render(template, bos, eos string, messages, tools json.RawMessage, addGen, enableThinking bool, extra map[string]any) (ChatAnswer, error) {
	req := map[string]any{"template": template, "bos_token": bos, "eos_token": eos,
		"add_generation_prompt": addGen, "enable_thinking": enableThinking}
	if messages != nil {
		req["messages"] = messages
	}
	if tools != nil {
		req["tools"] = tools
	}
	if extra != nil {
		req["extra"] = extra
	}
	return s.call(req)
}

// RenderMarked runs a template on the variables of ctx (a JSON object) with llama.cpp's input marking
// (common/jinja/README.md, "Input Marking"): every string of ctx is marked as input except the variables named in
// unmarked, which count as template text; the answer's Parts hold the output with its origin.
func (s *ChatShim) RenderMarked(template string, ctx json.RawMessage, unmarked []string) (ChatAnswer, error) {
	return s.call(map[string]any{"marked": template, "context": ctx, "unmarked": unmarked})
}

// BundleFile reads a file of the reference's source from the shim's clone (models/templates/*.jinja: the chat
// templates llama.cpp tests with).
func (s *ChatShim) BundleFile(rel string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "src", filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	return b, nil
}

// Close stops the shim (its build stays in the cache folder).
func (s *ChatShim) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.in.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		err = errors.Join(errors.New("reference: chat shim did not stop; killed"), <-done)
	}
	return err
}
