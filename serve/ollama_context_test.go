package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestGeneratesFinalAnswerCarriesOllamasContext: /api/generate's final answer (not streamed, or the last line of a stream)
// carries Ollama's context, the rendered prompt and the generated text tokenized again without BOS and with
// special tokens parsed (GenerateHandler's r.Tokenize(prompt+answer)), unless raw. A request's own context:
// TestGenerateHonoursARequestsContextAsOllama.
func TestGeneratesFinalAnswerCarriesOllamasContext(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	type line struct {
		Done     bool   `json:"done"`
		Response string `json:"response"`
		Context  []int  `json:"context"`
	}
	final := func(t *testing.T, b []byte) (line, string) {
		t.Helper()
		var last line
		var text strings.Builder
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%v: %s", err, sc.Bytes())
			}
			if !l.Done && l.Context != nil {
				t.Fatalf("a line before the last carries context: %s", sc.Bytes())
			}
			text.WriteString(l.Response)
			last = l
		}
		if !last.Done {
			t.Fatalf("no final line: %s", b)
		}
		return last, text.String()
	}
	for _, tc := range []struct {
		name, body string
		status     int
		raw        bool   // no context in the answer
		errPart    string // a refusal's message part
	}{
		{name: "a non-streamed answer carries the context of prompt and answer",
			body: `{"model": "stories260K", "prompt": "Once upon a time", "stream": false, "options": {"num_predict": 6, "temperature": 0}}`, status: 200},
		{name: "the last line of a streamed answer carries the context",
			body: `{"model": "stories260K", "prompt": "Once upon a time", "options": {"num_predict": 6, "temperature": 0}}`, status: 200},
		{name: "a raw answer carries no context, as Ollama's",
			body: `{"model": "stories260K", "prompt": "Once upon a time", "raw": true, "stream": false, "options": {"num_predict": 6, "temperature": 0}}`, status: 200, raw: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := ts.post(t, "/api/generate", []byte(tc.body))
			if st != tc.status {
				t.Fatalf("%d %s, want %d", st, b, tc.status)
			}
			if tc.errPart != "" {
				if !strings.Contains(string(b), tc.errPart) {
					t.Fatalf("%s, want %q", b, tc.errPart)
				}
				return
			}
			last, text := final(t, b)
			if tc.raw {
				if last.Context != nil {
					t.Fatalf("raw answer with context %v", last.Context)
				}
				return
			}
			// stories260K has no chat template: the rendered prompt is the prompt itself.
			want := ts.m.Tokenizer.Tokenize("Once upon a time"+text, false, true)
			got := make([]int32, len(last.Context))
			for i, v := range last.Context {
				got[i] = int32(v)
			}
			if len(got) == 0 || !slices.Equal(got, want) {
				t.Fatalf("context %v, want %v (prompt and answer %q)", got, want, text)
			}
		})
	}
}
