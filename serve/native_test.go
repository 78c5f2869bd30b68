package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/sample"
)

// nativeAnswer is the part of a /completion answer (or of a stream's events) the tests read.
type nativeAnswer struct {
	Content            string               `json:"content"`
	Tokens             []int32              `json:"tokens"`
	IDSlot             *int                 `json:"id_slot"`
	Stop               bool                 `json:"stop"`
	Model              string               `json:"model"`
	TokensPredicted    int                  `json:"tokens_predicted"`
	TokensEvaluated    int                  `json:"tokens_evaluated"`
	GenerationSettings map[string]any       `json:"generation_settings"`
	Prompt             *string              `json:"prompt"`
	HasNewLine         bool                 `json:"has_new_line"`
	Truncated          bool                 `json:"truncated"`
	StopType           string               `json:"stop_type"`
	StoppingWord       string               `json:"stopping_word"`
	TokensCached       int                  `json:"tokens_cached"`
	Timings            map[string]any       `json:"timings"`
	Probs              []struct{ ID int32 } `json:"completion_probabilities"`
	Receipt            *Receipt             `json:"bankml_receipt"`
}

// parseNativeStream reads a streamed /completion answer: "data: JSON" events, the last one the final
// object (stop true) with the receipt, and no [DONE]. It returns the partial chunks and the final object.
func parseNativeStream(t testing.TB, b []byte) ([]nativeAnswer, nativeAnswer) {
	t.Helper()
	var chunks []nativeAnswer
	for _, ev := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || data == "[DONE]" {
			t.Fatalf("event %q in %s", ev, b)
		}
		var c nativeAnswer
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		chunks = append(chunks, c)
	}
	if len(chunks) == 0 || !chunks[len(chunks)-1].Stop {
		t.Fatalf("the stream does not end with the final object: %s", b)
	}
	for _, c := range chunks[:len(chunks)-1] {
		if c.Stop || c.Receipt != nil || len(c.Tokens) != 1 {
			t.Fatalf("a partial chunk %+v", c)
		}
	}
	return chunks[:len(chunks)-1], chunks[len(chunks)-1]
}

// TestNativeCompletionEqualsReference sends every oracle case to llama-server's own POST /completion on
// stories260K, streamed and not, and checks the generated token ids (return_tokens, or the partial chunks'
// tokens), the content, tokens_predicted and tokens_evaluated, stop_type and the prompt field (the prompt
// detokenized by the reference's llama_detokenize with special tokens' texts) against the reference, and
// the receipt's hashes. tokens_cached is llama-server's slot.prompt.n_tokens() (the prompt and every
// generated token but the last), as its code counts it.
func TestNativeCompletionEqualsReference(t *testing.T) {
	ts, rm, _ := storiesWithRef(t)
	const text = "Once upon a time, there was"
	prompt, err := rm.Tokenize(text, true, true)
	if err != nil {
		t.Fatal(err)
	}
	wantPrompt, err := rm.Detokenize(prompt, false, true)
	if err != nil {
		t.Fatal(err)
	}
	total, passed := 0, 0
	for _, oc := range oracleCases() {
		p := sample.DefaultParams()
		oc.params(&p)
		want := refAnswer(t, rm, prompt, p, oc.n, 512)
		_, wantText := llamaServerTexts(t, storiesPath(t), []byte(refText(t, rm, want)))
		wantStop := "limit"
		if eog, _ := rm.IsEOG(want[len(want)-1]); eog {
			wantStop = "eos"
		}
		for _, route := range []string{"/completion", "/completions"} {
			for _, stream := range []bool{false, true} {
				total++
				name := fmt.Sprintf("%s %s stream=%v", oc.name, route, stream)
				req := map[string]any{"prompt": text, "n_predict": oc.n, "stream": stream, "return_tokens": true}
				for k, v := range oc.fields {
					req[k] = v
				}
				body := mustJSON(t, req)
				st, b := ts.post(t, route, body)
				if st != 200 {
					t.Errorf("%s: %d %s", name, st, b)
					continue
				}
				var a nativeAnswer
				var got []int32
				var content string
				if stream {
					var chunks []nativeAnswer
					chunks, a = parseNativeStream(t, b)
					for i, c := range chunks {
						got = append(got, c.Tokens...)
						content += c.Content
						if c.TokensPredicted != i+1 || c.TokensEvaluated != len(prompt) {
							t.Errorf("%s: chunk %d counts %d/%d", name, i, c.TokensPredicted, c.TokensEvaluated)
						}
					}
					if a.Content != "" || len(a.Tokens) != 0 {
						t.Errorf("%s: the final object repeats content %q / tokens %v", name, a.Content, a.Tokens)
					}
				} else {
					if err := json.Unmarshal(b, &a); err != nil {
						t.Fatalf("%s: %v: %s", name, err, b)
					}
					got, content = a.Tokens, a.Content
				}
				ok := true
				check := func(what string, g, w any) {
					if fmt.Sprint(g) != fmt.Sprint(w) {
						t.Errorf("%s: %s %v, reference %v", name, what, g, w)
						ok = false
					}
				}
				check("tokens", got, want)
				check("content", content, wantText)
				check("tokens_predicted", a.TokensPredicted, len(want))
				check("tokens_evaluated", a.TokensEvaluated, len(prompt))
				check("stop_type", a.StopType, wantStop)
				if a.Prompt == nil || *a.Prompt != string(wantPrompt) {
					t.Errorf("%s: prompt %v, reference %q", name, a.Prompt, wantPrompt)
					ok = false
				}
				check("tokens_cached", a.TokensCached, len(prompt)+len(want)-1)
				rc := a.Receipt
				if rc == nil || rc.RequestSHA256 != sha(body) || rc.ResponseSHA256 != sha([]byte(content)) || rc.CompletionTokens != len(want) || rc.PromptTokens != len(prompt) {
					t.Errorf("%s: receipt %+v", name, rc)
					ok = false
				}
				if ok && slices.Equal(got, want) {
					passed++
				}
			}
		}
	}
	t.Logf("/completion answers equal to the reference: %d of %d", passed, total)
	fmt.Printf("serve oracle: /completion %d of %d answers equal to the reference (tokens, content, counts, stop_type, prompt, receipt)\n", passed, total)
}

// TestNativeCompletionFields checks /completion's own fields and answer shape against /v1/completions'
// answer for the same request (the oracle covers that path): the same text and tokens, a stop string
// (stop_type word, stopping_word, the text cut before it), has_new_line, return_tokens off (tokens []),
// n_probs (completion_probabilities, the stop word's tokens trimmed), response_fields, mixed prompts,
// generation_settings, and the refusals.
func TestNativeCompletionFields(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	post := func(path string, req map[string]any) map[string]any {
		t.Helper()
		st, b := ts.post(t, path, mustJSON(t, req))
		if st != 200 {
			t.Fatalf("%s %v: %d %s", path, req, st, b)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	base := map[string]any{"prompt": "Once upon a time", "temperature": 0, "n_predict": 40}
	oai := post("/v1/completions", base)
	oaiText := oai["choices"].([]any)[0].(map[string]any)["text"].(string)
	nat := post("/completion", base)
	if nat["content"] != oaiText || fmt.Sprint(nat["tokens"]) != "[]" || nat["stop_type"] != "limit" || nat["stop"] != true {
		t.Errorf("/completion %v; /v1/completions text %q", nat, oaiText)
	}
	if hasNL := strings.Contains(oaiText, "\n"); nat["has_new_line"] != hasNL {
		t.Errorf("has_new_line %v for %q", nat["has_new_line"], oaiText)
	}
	gs := nat["generation_settings"].(map[string]any)
	if gs["temperature"] != 0.0 || gs["n_predict"] != 40.0 || gs["max_tokens"] != 40.0 || fmt.Sprint(gs["stop"]) != "[]" || gs["stream"] != false {
		t.Errorf("generation_settings %v", gs)
	}

	// A stop string taken from the greedy answer: cut before it, stop_type word, the probabilities of its
	// tokens trimmed, as /v1/completions' logprobs are.
	words := strings.Fields(oaiText)
	if len(words) < 4 {
		t.Fatalf("answer too short: %q", oaiText)
	}
	stopReq := map[string]any{"prompt": "Once upon a time", "temperature": 0, "n_predict": 40, "stop": []string{words[3]}, "n_probs": 2}
	oai = post("/v1/completions", stopReq)
	ch := oai["choices"].([]any)[0].(map[string]any)
	nat = post("/completions", stopReq)
	probs, _ := nat["completion_probabilities"].([]any)
	oaiProbs := ch["logprobs"].(map[string]any)["content"].([]any)
	if nat["content"] != ch["text"] || nat["stop_type"] != "word" || nat["stopping_word"] != words[3] || len(probs) != len(oaiProbs) || len(probs) == 0 {
		t.Errorf("stop word: /completion content %q stop_type %v stopping_word %v, %d probs; /v1/completions %q, %d logprobs",
			nat["content"], nat["stop_type"], nat["stopping_word"], len(probs), ch["text"], len(oaiProbs))
	}
	if gs := nat["generation_settings"].(map[string]any); fmt.Sprint(gs["stop"]) != fmt.Sprint([]string{words[3]}) || gs["n_probs"] != 2.0 {
		t.Errorf("generation_settings stop %v n_probs %v", gs["stop"], gs["n_probs"])
	}

	// response_fields: only the named paths, nested ones under their path; the receipt stays.
	rf := post("/completion", map[string]any{"prompt": "Once", "n_predict": 3, "response_fields": []string{"content", "generation_settings/n_predict", "nope"}})
	if _, ok := rf["bankml_receipt"]; len(rf) != 3 || rf["generation_settings/n_predict"] != 3.0 || rf["content"] == nil || !ok {
		t.Errorf("response_fields: %v", rf)
	}

	// A mixed prompt (text, then token ids) and the ids alone are the same prompt as the text.
	st, b := ts.post(t, "/tokenize", []byte(`{"content": "Once upon a time", "add_special": true}`))
	var tk struct{ Tokens []int32 }
	if st != 200 || json.Unmarshal(b, &tk) != nil || len(tk.Tokens) < 3 {
		t.Fatalf("/tokenize %d %s", st, b)
	}
	plain := post("/completion", map[string]any{"prompt": "Once upon a time", "temperature": 0, "n_predict": 8, "return_tokens": true})
	for _, pr := range []any{tk.Tokens, []any{"Once upon a", tk.Tokens[len(tk.Tokens)-1]}} {
		got := post("/completion", map[string]any{"prompt": pr, "temperature": 0, "n_predict": 8, "return_tokens": true})
		if got["prompt"] != plain["prompt"] || fmt.Sprint(got["tokens"]) != fmt.Sprint(plain["tokens"]) {
			t.Errorf("prompt %v: %q %v; text prompt %q %v", pr, got["prompt"], got["tokens"], plain["prompt"], plain["tokens"])
		}
	}

	for _, c := range []struct{ body, msg string }{
		{`{"n_predict": 2}`, `"prompt" is required`},
		{`{"prompt": ["a", "b"]}`, "several prompts"},
		{`{"prompt": "x", "timings_per_token": true}`, "Field 'timings_per_token'"},
		{`{"prompt": "x", "return_progress": true}`, "Field 'return_progress'"},
		{`{"prompt": "x", "n_indent": 2}`, "Field 'n_indent'"},
		{`{"prompt": "x", "t_max_predict_ms": 100}`, "Field 't_max_predict_ms'"},
		{`{"prompt": "x", "n_cache_reuse": 256}`, "Field 'n_cache_reuse'"},
		{`{"prompt": "x", "lora": [{"id": 0, "scale": 1}]}`, "Field 'lora'"},
		{`{"prompt": "x", "speculative.n_max": 8}`, "Field 'speculative.n_max'"},
		{`{"prompt": "x", "n_keep": -2}`, "Field 'n_keep'"},
		{`{"prompt": "x", "mirostat": 1}`, "Field 'mirostat'"},
		{`{"prompt": "x", "top_k": "1"}`, "Field 'top_k': expected an integer, got string"},
	} {
		st, b := ts.post(t, "/completion", []byte(c.body))
		if e := parseError(t, b); st != 400 || e.Error.Type != TypeInvalidRequest || !strings.Contains(e.Error.Message, c.msg) {
			t.Errorf("%s: %d %s, want 400 naming %q", c.body, st, b, c.msg)
		}
	}
	if st, b := ts.post(t, "/completion", []byte(`{"prompt": "x", "n_keep": 5, "n_discard": 3, "n_predict": 1}`)); st != 200 || !bytes.Contains(b, []byte(`"n_keep":5`)) {
		t.Errorf("n_keep (inert without a context shift) refused or not echoed: %d %s", st, b)
	}
}
