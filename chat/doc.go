// Package chat renders a GGUF model's chat template (tokenizer.chat_template, a Jinja program) into the prompt
// llama-server v0.5.0 renders for the same request: its /apply-template and /v1/chat/completions both go through
// oaicompat_chat_params_parse (tools/server/server-common.cpp) to common_chat_templates_apply with use_jinja on
// (common/chat.cpp, libllama-common.so), which is the path followed here, byte for byte.
//
// # Use
//
//	f, _ := gguf.Open(path)
//	tmpl, err := chat.FromGGUF(f)          // the template, bos/eos texts, add_bos, capabilities
//	in, err := chat.ParseRequest(body)     // an OpenAI body or a bare array of messages, llama-server's rules
//	res, err := tmpl.Apply(in)             // res.Prompt, res.GenerationPrompt, res.Segments
//
// The engine tokenizes res.Segments, not res.Prompt: Special segments (template text) with special-token
// parsing, the others (request text holding the text of a control token) without, so that "<|im_end|>" typed by
// a user stays text. llama-server itself tokenizes the whole prompt with parse_special, so there a marker inside
// a message becomes that token; the segments are bankml's deliberate difference, and Prompt stays identical.
//
// # Design record
//
// Engine. github.com/ardanlabs/jinja v1.8.0 (the newest that builds with Go 1.26), chosen over
// github.com/nikolalohinski/gonja/v2 v2.9.1 after rendering the oracle's templates with both: it keeps object
// keys in insertion order (llama.cpp's common_json does, and tojson prints them in that order; gonja sorts Go map
// keys), formats JSON with Python's separators, has chat templates as its purpose (trim_blocks and lstrip_blocks
// on, namespace, loop, slicing, raise_exception, strftime_now), a public value API with callables, and no
// dependencies. Where it differs from llama.cpp's engine (common/jinja) bankml patches around it, never inside it:
//   - the source is rewritten before compiling (normalizeSource): llama.cpp's lexer normalizes CR LF and CR,
//     drops one trailing newline, applies hf.js's trim_blocks/lstrip_blocks rules (including trimming after
//     "-}}" but not "}}", and its quirk of trimming the whole first text when lstrip reaches the source's second
//     byte) and the "-" whitespace controls; the text between tags is computed that way and handed to the Go
//     engine as string literals, so its own whitespace rules have nothing to act on; string literals are
//     re-encoded (llama.cpp knows \r \b \f \v; a "}}" inside a literal would end the Go engine's tag);
//   - tojson is llama.cpp's (value_to_json_internal): floats as C++'s ostream prints them (%g, 6 digits), its
//     indent layout, separators, ensure_ascii, its string escapes; trim is its byte-wise C isspace strip; both
//     are reached by renaming the filters in the source, since the Go engine looks filters up before variables;
//   - strip() without arguments: the Go engine removes Unicode white space, llama.cpp only C isspace bytes, so
//     the variables' non-ASCII spaces travel as private-use code points through the render;
//   - raise_exception's message, strftime_now on the injectable Inputs.Now; "//" refused as llama.cpp's parser
//     refuses it; split() without a separator, split/rsplit with maxsplit refused (the Go engine differs and
//     cannot be patched from outside), lstrip()/rstrip() without arguments refused on text holding \v or \f.
//
// What llama.cpp does around the template (each checked by the oracle): messages become common_chat_msg JSON
// (role, content or parts or "", then reasoning_content, name, tool_call_id only when non-empty, so an empty
// reasoning_content is dropped; tool calls as {type, function {name, arguments as a JSON string}, id}, an
// object given as arguments kept as its compact nlohmann dump); typed content is joined with "\n" for a
// template that reads only strings; "developer" becomes "system"; a first system message is merged into the next
// one (with "\n") for a template that ignores it; tool-call arguments are parsed back into objects for a
// template that reads them so; tools are reshaped to {type: "function", function: {name, description (default
// ""), parameters}}; the variables are messages, bos_token, eos_token (the vocabulary's tokens as text),
// enable_thinking (always defined; llama-server's default is whether the template supports thinking), tools
// (only when there are some), datetime ("%b %d %Y") and date_string ("%d %b %Y") of the local time, the
// chat_template_kwargs (JSON-parsed; llama-server adds preserve_reasoning=true, which also sets
// preserve_thinking, clear_thinking, truncate_history_thinking and drop_thinking), and add_generation_prompt
// only when true; the output loses a leading BOS text when the tokenizer adds BOS (llama_vocab_get_add_bos; a
// plain string prefix test, once, in every render) and a trailing EOS text when it adds EOS; a final assistant
// message is continued (llama-server's --prefill-assistant): the conversation before it is rendered without a
// generation prompt, then the generation prompt (the difference the flag makes), the template's thinking start
// marker and the message's reasoning, the end marker and its content; a model without a template gets ChatML
// whatever its family (the per-family built-ins of llama_chat_apply_template serve only --no-jinja).
//
// Constraints and the answer's parse (analyze.go, diffsplit.go, generate.go, parse.go, grammar_backend.go,
// internal/peg). A port of llama.cpp's autoparser as common_chat_templates_apply runs it for every template it
// does not hand to a specialized handler: the differential analysis (chat-diff-analyzer.cpp: renders of the
// template with and without reasoning, content, tool calls, a second call, arguments, ids, compared to find the
// reasoning markers, the tool-call section and per-call markers, the name and argument layout, the JSON or tagged
// argument format; its workarounds for known templates), the PEG parser it generates from that analysis
// (chat-auto-parser-generator.cpp, chat-peg-parser.cpp, peg-parser.cpp: a parser arena whose rule ids, numbered in
// the order C++ creates them, name the grammar's until-N rules, so construction follows GCC's right-to-left
// evaluation of overloaded-operator operands: peg.Builder.Cat/Alt take thunks for that), the GBNF grammar built
// from the arena (tool arguments through package grammar's json_schema_to_grammar builder), the lazy triggers,
// preserved tokens and additional stops, and common_chat_parse: the same parser run on an answer, complete or
// partial (streaming), mapped to content, reasoning_content and tool calls (names, the arguments' JSON text as
// far as it goes, ids). Request fields are read as oaicompat_chat_params_parse
// reads them (request.go parseConstraints). The oracle runs common_chat_templates_apply and common_chat_parse in
// the reference's libllama-common (internal/reference's chat shim) and compares prompts, grammars, triggers,
// preserved tokens, stops, thinking tags and the parse of every byte prefix of recorded answers.
//
// Deliberate differences. Capabilities (Caps) are found by probe renders that look at the output, where
// llama.cpp tracks which values the probes read; thinking markers and tool support come from the analysis
// (SupportsThinking, ThinkingMarkers, SupportsTools); they agree on the oracle's templates and are compared with
// the reference's for each. The template families llama.cpp hands to specialized handlers (GPT-OSS, Qwen3-Coder,
// Gemma 4, Kimi, Ministral, Functionary v3.2, DeepSeek V3.2/V4, ...; common_chat_try_specialized_template) are
// refused by name rather than rendered or parsed differently. Where llama-server reads a constraint loosely,
// bankml refuses the request (fail closed): a field of the wrong type (json_value's default), a grammar with a
// response_format (dropped there), tools for a template whose analysis found no tool-call format (rendered and
// answered as text there), a response_format json_schema without its schema (any object there), a schema part
// the converter cannot express (a warning there); a named tool_choice is honoured (the prompt shows every tool,
// the grammar and parser only the named one, required) where llama-server reads it as auto. Jinja engine
// differences the bundle oracle meets (counted there as gaps, not passed): a test "x in undefined" that raises in
// the Go engine (Command-R7B) and undefined.items() (Seed-OSS) fail renders llama.cpp completes; == on objects
// compares deeply in the Go engine, while llama.cpp's finds an object with a list or object member (typed
// content, tool calls) equal to nothing, so Mistral Small 3.2's "message == user_messages[-1]" places its tools
// differently for such messages.
// The --no-jinja path (llama_chat_apply_template) is not implemented. Any template that does not parse, raises
// or fails gives an error wrapping ErrTemplate; nothing falls back silently.
//
// Determinism. Apply is a pure function of the template, the vocabulary facts and the Inputs (Now included): the
// same request renders the same bytes on every run and machine.
package chat
