package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/internal/fsutil"
)

// chatTemplateCmd renders a conversation with a model's chat template (package chat), as llama-server's
// /apply-template does.
type chatTemplateCmd struct {
	Model               string `arg:"" name:"FILE" help:"The GGUF file whose tokenizer.chat_template renders the prompt." type:"path"`
	AddGenerationPrompt *bool  `name:"add-generation-prompt" negatable:"" help:"End with the opening of the assistant's turn (default: the request's add_generation_prompt, else true)."`
	EnableThinking      string `name:"enable-thinking" enum:",true,false" default:"" help:"The template's enable_thinking: true or false (default: the request's chat_template_kwargs, else whether the template supports thinking, as llama-server)."`
	Tools               string `name:"tools" help:"JSON file with an array of OpenAI tools, replacing the request's." type:"path"`
	Now                 string `name:"now" help:"Time for strftime_now, datetime and date_string, RFC 3339 (default: now, local time)."`
	Segments            bool   `name:"segments" help:"Print one JSON object with the prompt and its segments (template text to tokenize with special tokens, request text to tokenize without)."`
}

// Run reads the request from standard input and prints the prompt exactly (no newline added). Exit status: 0; 1
// for unreadable input or a malformed request; 2 when the model cannot be read or its template cannot render the
// conversation (it raised, or is not supported).
func (c *chatTemplateCmd) Run(stdin io.Reader, stdout io.Writer) error {
	body, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("chat-template: reading the request: %w", err)
	}
	in, err := chat.ParseRequest(body)
	if err != nil {
		return fmt.Errorf("chat-template: %w", err)
	}
	if c.AddGenerationPrompt != nil {
		in.AddGenerationPrompt = *c.AddGenerationPrompt
		if in.AddGenerationPrompt {
			in.Continue = chat.ContinueNone
		}
	}
	switch c.EnableThinking {
	case "true":
		in.EnableThinking = new(true)
	case "false":
		in.EnableThinking = new(false)
	}
	if c.Tools != "" {
		tb, err := readSmallFile(c.Tools)
		if err != nil {
			return fmt.Errorf("chat-template: %w", err)
		}
		reqTools, err := chat.ParseRequest(fmt.Appendf(nil, `{"messages": [], "tools": %s}`, tb))
		if err != nil {
			return fmt.Errorf("chat-template: --tools %s: %w", c.Tools, err)
		}
		in.Tools = reqTools.Tools
	}
	if c.Now != "" {
		if in.Now, err = time.Parse(time.RFC3339, c.Now); err != nil {
			return fmt.Errorf("chat-template: --now: %w", err)
		}
	}
	f, err := openGGUF("chat-template", c.Model)
	if err != nil {
		return err
	}
	defer f.Close()
	tmpl, err := chat.FromGGUF(f)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("chat-template: %s: %w", c.Model, err)}
	}
	res, err := tmpl.Apply(in)
	if err != nil {
		if errors.Is(err, chat.ErrRequest) {
			return fmt.Errorf("chat-template: %w", err)
		}
		return &exitError{code: 2, err: fmt.Errorf("chat-template: %s: %w", c.Model, err)}
	}
	if !c.Segments {
		_, err = io.WriteString(stdout, res.Prompt)
		return err
	}
	type segment struct {
		Text    string `json:"text"`
		Special bool   `json:"special"`
	}
	out := struct {
		Prompt           string    `json:"prompt"`
		GenerationPrompt string    `json:"generation_prompt"`
		Segments         []segment `json:"segments"`
	}{Prompt: res.Prompt, GenerationPrompt: res.GenerationPrompt, Segments: []segment{}}
	for _, s := range res.Segments {
		out.Segments = append(out.Segments, segment(s))
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// readSmallFile reads a regular file of at most 16 MiB.
func readSmallFile(path string) ([]byte, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 16<<20+1))
	if err != nil {
		return nil, err
	}
	if len(b) > 16<<20 {
		return nil, fmt.Errorf("%s: larger than 16 MiB", path)
	}
	return b, nil
}
