package serve

import (
	"fmt"
	"strings"
	"testing"
)

// TestJSONAnswerCutByMaxTokensIsItsTextSoFar: a JSON-constrained chat answer that max_tokens cuts has
// finish_reason "length" and, as content, the text generated so far, unfinished JSON and all, streamed or
// not; only the blanks the grammar lets the answer open with are left out (llama-server's parse of the same
// text, which TestConstrainedAnswersEqualReference compares), so an answer cut before its first other
// character has content "".
func TestJSONAnswerCutByMaxTokensIsItsTextSoFar(t *testing.T) {
	ts := newTestServer(t, qwen3Model(t), AdmitOptions{}, Options{})
	schema := `{"type": "json_schema", "json_schema": {"schema": {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 20}, "n": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["answer", "n"], "additionalProperties": false}}}`
	cases := []struct {
		name, rf, sampling string
		n                  int
		blank              bool // cut before anything but blanks
	}{
		{"JSON mode cut inside the object", `{"type": "json_object"}`, `"temperature": 0`, 6, false},
		{"a schema cut inside the object", schema, `"seed": 9`, 14, false},
		{"JSON mode cut before its first brace", `{"type": "json_object"}`, `"temperature": 0`, 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"messages": [{"role": "user", "content": "What is the weather in Paris?"}], "max_tokens": %d, %s, "response_format": %s`, c.n, c.sampling, c.rf)
			st, b := ts.post(t, "/v1/chat/completions", []byte(body+`, "logprobs": true}`))
			if st != 200 {
				t.Fatalf("status %d: %s", st, b)
			}
			got := readChatAnswer(t, b, false)
			text := string(ts.m.Tokenizer.Detokenize(got.ids, false, false))
			want := strings.TrimLeft(text, " \t\n")
			if got.finish != "length" || len(got.ids) != c.n || got.content != want {
				t.Fatalf("finish %q after %d tokens, content %q; want length after %d, content %q (the text %q less its opening blanks)", got.finish, len(got.ids), got.content, c.n, want, text)
			}
			if c.blank != (want == "") || !c.blank && !strings.HasPrefix(want, "{") {
				t.Fatalf("content %q: this case is meant to be cut %s", want, map[bool]string{true: "before its first brace", false: "inside the object"}[c.blank])
			}
			st, b = ts.post(t, "/v1/chat/completions", []byte(body+`, "stream": true}`))
			if s := readChatAnswer(t, b, true); st != 200 || s.finish != "length" || s.content != want {
				t.Fatalf("streamed: status %d, finish %q, content %q; want length, %q", st, s.finish, s.content, want)
			}
		})
	}
}
