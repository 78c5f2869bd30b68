package serve

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAnEmptyMessagesArrayIsRefusedByName: an empty messages array on /v1/chat/completions is a 400 naming the field (OpenAI
// refuses it; llama-server renders the bare generation prompt and generates until the context is full), while
// /api/chat answers it as Ollama's ChatHandler does, a load-only answer with done_reason "load".
func TestAnEmptyMessagesArrayIsRefusedByName(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string // a part of the answer
	}{
		{name: "an empty messages array on the OpenAI chat route is refused with the field named",
			path: "/v1/chat/completions", body: `{"messages": []}`, status: 400,
			want: `"message":"Field 'messages': must hold at least one message, got an empty array"`},
		{name: "an empty messages array is refused on a streamed OpenAI chat request too",
			path: "/v1/chat/completions", body: `{"messages": [], "stream": true}`, status: 400,
			want: `"type":"invalid_request_error"`},
		{name: "an empty messages array on llama-server's chat route alias is refused the same way",
			path: "/chat/completions", body: `{"messages": []}`, status: 400,
			want: `Field 'messages'`},
		{name: "an empty messages list on /api/chat is Ollama's load-only answer",
			path: "/api/chat", body: `{"model": "stories260K", "messages": [], "stream": false}`, status: 200,
			want: `"done_reason":"load"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := ts.post(t, tc.path, []byte(tc.body))
			if st != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s, want %d with %s", st, b, tc.status, tc.want)
			}
		})
	}
}

// TestACompletionStreamCarriesUsageOnItsFinishChunk: a streamed /v1/completions answer carries usage on its finish_reason chunk
// whether or not stream_options.include_usage is set, and never sends a chunk with empty choices, as
// llama-server's to_json_oaicompat (the final result of a text completion, streamed or not) does; only chat
// streams add OpenAI's separate usage chunk.
func TestACompletionStreamCarriesUsageOnItsFinishChunk(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	for _, tc := range []struct {
		name, path, body string
		usageChunk       bool // a last chunk with empty choices and the usage
	}{
		{name: "a streamed completion with include_usage has usage on its finish chunk and no usage chunk",
			path: "/v1/completions", body: `{"prompt": "Once", "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}}`},
		{name: "a streamed completion without include_usage has usage on its finish chunk too",
			path: "/v1/completions", body: `{"prompt": "Once", "max_tokens": 3, "stream": true}`},
		{name: "a streamed chat with include_usage ends with a usage chunk with empty choices",
			path: "/v1/chat/completions", body: `{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}}`,
			usageChunk: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := ts.post(t, tc.path, []byte(tc.body))
			if st != 200 {
				t.Fatalf("%d %s", st, b)
			}
			var chunks []map[string]any
			for _, ev := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
				data, ok := strings.CutPrefix(ev, "data: ")
				if !ok {
					t.Fatalf("event %q", ev)
				}
				if data == "[DONE]" {
					continue
				}
				var c map[string]any
				if err := json.Unmarshal([]byte(data), &c); err != nil {
					t.Fatalf("%v: %s", err, data)
				}
				chunks = append(chunks, c)
			}
			finishAt := -1
			for i, c := range chunks {
				choices, _ := c["choices"].([]any)
				if len(choices) == 0 {
					if !tc.usageChunk || i != len(chunks)-1 || c["usage"] == nil {
						t.Fatalf("chunk %d has empty choices: %s", i, b)
					}
					continue
				}
				if choices[0].(map[string]any)["finish_reason"] != nil {
					finishAt = i
				}
				if _, has := c["usage"]; has != (!tc.usageChunk && choices[0].(map[string]any)["finish_reason"] != nil) {
					t.Fatalf("chunk %d: usage present %v: %s", i, has, b)
				}
			}
			want := len(chunks) - 1
			if tc.usageChunk {
				want--
			}
			if finishAt != want {
				t.Fatalf("finish chunk at %d of %d: %s", finishAt, len(chunks), b)
			}
		})
	}
}
