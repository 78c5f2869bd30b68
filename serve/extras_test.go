package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/sample"
)

// TestStopStrings checks stop strings that span tokens: the answer is the reference's text cut exactly
// before the first occurrence, finish_reason "stop", streamed (the held-back prefix never sent) and not.
func TestStopStrings(t *testing.T) {
	ts, rm, prompt := storiesWithRef(t)
	p := sample.DefaultParams()
	p.Temp = 0
	full := refText(t, rm, refAnswer(t, rm, prompt, p, 64, 512))
	n := 0
	for _, stop := range []string{"little girl", "Lily. She", "play outside", "e l"} {
		i := strings.Index(full, stop)
		if i < 0 {
			t.Fatalf("%q not in the reference's greedy text %q", stop, full)
		}
		for _, stream := range []bool{false, true} {
			body := mustJSON(t, map[string]any{"prompt": "Once upon a time", "max_tokens": 64, "temperature": 0, "stop": []string{"never", stop}, "stream": stream})
			st, b := ts.post(t, "/v1/completions", body)
			if st != 200 {
				t.Fatalf("%d %s", st, b)
			}
			var a answer
			if stream {
				a = parseStream(t, b)
			} else {
				a = parseAnswer(t, b)
			}
			if a.text != full[:i] || a.finish != "stop" || a.receipt.ResponseSHA256 != sha([]byte(a.text)) {
				t.Errorf("stop %q stream=%v: %q (%s), want %q (stop)", stop, stream, a.text, a.finish, full[:i])
				continue
			}
			n++
		}
	}
	t.Logf("stop strings: %d of 8", n)
}

// TestLogprobValues checks the logprobs of an answer's first token against the softmax of the reference's
// raw logits for the prompt (llama-server's get_token_probabilities: before any sampler stage), top-N ids
// in order and logf of each probability, bit for bit.
func TestLogprobValues(t *testing.T) {
	ts, rm, prompt := storiesWithRef(t)
	logits, err := rm.PromptLogits(prompt, 1)
	if err != nil {
		t.Fatal(err)
	}
	const nTop = 5
	want := sample.TokenProbs(logits, nTop)
	body := mustJSON(t, map[string]any{"prompt": "Once upon a time", "max_tokens": 1, "seed": 9, "temperature": 1.5, "top_k": 0, "logprobs": nTop})
	st, b := ts.post(t, "/v1/completions", body)
	if st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	var v struct {
		Choices []struct {
			Logprobs struct {
				Content []struct {
					ID          int32   `json:"id"`
					Logprob     float64 `json:"logprob"`
					TopLogprobs []struct {
						ID      int32   `json:"id"`
						Token   string  `json:"token"`
						Logprob float64 `json:"logprob"`
					} `json:"top_logprobs"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &v); err != nil || len(v.Choices) != 1 || len(v.Choices[0].Logprobs.Content) != 1 {
		t.Fatalf("%v: %s", err, b)
	}
	e := v.Choices[0].Logprobs.Content[0]
	if len(e.TopLogprobs) != nTop {
		t.Fatalf("%d top logprobs, want %d", len(e.TopLogprobs), nTop)
	}
	all := sample.TokenProbs(logits, len(logits))
	for i, tp := range e.TopLogprobs {
		wl := float64(sample.Logarithm(want[i].P))
		piece, _ := rm.TokenToPiece(want[i].ID, false)
		if tp.ID != want[i].ID || math.Float64bits(tp.Logprob) != math.Float64bits(wl) || tp.Token != string(piece) {
			t.Errorf("top %d: %+v, reference id %d logprob %v token %q", i, tp, want[i].ID, wl, piece)
		}
	}
	idx := slices.IndexFunc(all, func(d sample.TokenData) bool { return d.ID == e.ID })
	if idx < 0 || math.Float64bits(e.Logprob) != math.Float64bits(float64(sample.Logarithm(all[idx].P))) {
		t.Errorf("sampled token %d logprob %v, reference %v", e.ID, e.Logprob, all[idx].P)
	}
}

// TestTokenizeRoutes checks /tokenize and /detokenize against the reference's tokenizer.
func TestTokenizeRoutes(t *testing.T) {
	for _, path := range []string{storiesPath(t), qwen3Model(t)} {
		rm := refModel(t, path)
		ts := newTestServer(t, path, AdmitOptions{}, Options{})
		for _, c := range []struct {
			text                     string
			addSpecial, parseSpecial bool
		}{{"Once upon a time, there was", false, true}, {"Hello <|im_start|> wörld 🙂", true, true}, {"<s>x</s> <|endoftext|>", false, false}} {
			want, err := rm.Tokenize(c.text, c.addSpecial, c.parseSpecial)
			if err != nil {
				t.Fatal(err)
			}
			st, b := ts.post(t, "/tokenize", mustJSON(t, map[string]any{"content": c.text, "add_special": c.addSpecial, "parse_special": c.parseSpecial}))
			var tv struct{ Tokens []int32 }
			if st != 200 || json.Unmarshal(b, &tv) != nil || !slices.Equal(tv.Tokens, want) {
				t.Errorf("%s: tokenize %q: %d %s, reference %v", path, c.text, st, b, want)
			}
			var text []byte
			for _, id := range want {
				p, err := rm.TokenToPiece(id, true)
				if err != nil {
					t.Fatal(err)
				}
				text = append(text, p...)
			}
			st, b = ts.post(t, "/detokenize", mustJSON(t, map[string]any{"tokens": want}))
			var dv struct{ Content string }
			if _, wantText := llamaServerTexts(t, path, text); st != 200 || json.Unmarshal(b, &dv) != nil || dv.Content != wantText {
				t.Errorf("%s: detokenize %v: %d %s, reference %q", path, want, st, b, text)
			}
		}
	}
}

// TestMetrics checks that /metrics counts the answers' tokens under llama-server's names.
func TestMetrics(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	st, b := ts.post(t, "/v1/completions", []byte(`{"prompt": "Once upon a time", "max_tokens": 7, "temperature": 0}`))
	if st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	a := parseAnswer(t, b)
	_, m := ts.get(t, "/metrics")
	for _, want := range []string{
		fmt.Sprintf("llamacpp:tokens_predicted_total %d\n", a.receipt.CompletionTokens),
		fmt.Sprintf("llamacpp:prompt_tokens_total %d\n", a.receipt.PromptTokens-a.receipt.CachedTokens),
		// metrics_post_decode's largest slot.prompt.n_tokens(): the last sampled token is never decoded.
		fmt.Sprintf("llamacpp:n_tokens_max %d\n", a.receipt.PromptTokens+a.receipt.CompletionTokens-1),
		`bankml:http_requests_total{code="200",route="/v1/completions"} 1`,
		"# TYPE llamacpp:prompt_seconds_total counter",
	} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, m)
		}
	}
}
