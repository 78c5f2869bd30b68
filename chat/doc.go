// Package chat renders a GGUF model's chat template (tokenizer.chat_template, a Jinja program) into the prompt
// llama-server v0.5.0 renders for the same request, byte for byte, and parses its answers as llama-server does.
//
// # Design record
//
// What. FromGGUF reads the template, the bos/eos texts, add_bos and the capabilities; ParseRequest reads an
// OpenAI body (or a bare array of messages) by llama-server's rules; Template.Apply returns the Prompt, the
// GenerationPrompt and the Segments the engine tokenizes (template text with special-token parsing, request
// text without). For every template llama.cpp does not hand to a specialized handler, the autoparser is ported
// (analyze.go, diffsplit.go, generate.go, parse.go, internal/peg): the grammar, lazy triggers, preserved tokens
// and stops of a constrained request, and the parse of an answer (complete or streamed) into content,
// reasoning_content and tool calls.
//
// Follows. oaicompat_chat_params_parse (tools/server/server-common.cpp) and common_chat_templates_apply with
// use_jinja (common/chat.cpp), the autoparser (chat-diff-analyzer.cpp, chat-auto-parser-generator.cpp,
// chat-peg-parser.cpp, peg-parser.cpp) and common_chat_parse. Jinja runs on github.com/ardanlabs/jinja v1.8.0
// (insertion-ordered keys, Python's JSON separators); where it differs from llama.cpp's engine (common/jinja)
// bankml patches around it, never inside: the source is normalized first (llama.cpp's lexer and trim rules),
// tojson, trim and strip are llama.cpp's. The oracle runs the reference's libllama-common through
// internal/reference's chat shim.
//
// Deliberate differences. A control-token text typed in a message stays text (Segments; the Prompt is
// identical). Capabilities come from probe renders. Template families with specialized handlers (GPT-OSS,
// Qwen3-Coder, Gemma 4, Kimi, ...) are refused by name; constraints llama-server reads loosely are refused
// (fail closed), among them a response format's schema that is not an object (the reference answers
// unconstrained) and a schema with a constraint no value meets (grammar.SchemaDocument.Contradictions), each named
// by its field; a named tool_choice is honoured. Not implemented: --no-jinja. Any failure wraps ErrTemplate.
//
// Determinism. Apply is a pure function of the template, the vocabulary facts and the Inputs (Now included): the
// same request renders the same bytes on every run and machine. The full record, with the Jinja patches and
// what llama.cpp does around the template: docs/design.md, "Package chat".
package chat
