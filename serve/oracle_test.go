package serve

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
	"github.com/bankml/bankml/sample"
)

// answer is what a client read from one OpenAI answer, streamed or not.
type answer struct {
	text         string  // content / text as decoded
	logprobIDs   []int32 // ids of the logprobs entries
	finish       string
	usage        map[string]any
	receipt      Receipt
	receiptBytes []byte
	chunks       int
}

// logprobsIDs is the part of a logprobs object the oracle reads: the entries' token ids.
type logprobsIDs struct {
	Content []struct {
		ID int32 `json:"id"`
	} `json:"content"`
}

// parseAnswer reads a non-streamed chat.completion / text_completion object.
func parseAnswer(t testing.TB, b []byte) answer {
	t.Helper()
	var v struct {
		Choices []struct {
			Text    *string `json:"text"`
			Message *struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string       `json:"finish_reason"`
			Logprobs     *logprobsIDs `json:"logprobs"`
		} `json:"choices"`
		Usage   map[string]any  `json:"usage"`
		Receipt json.RawMessage `json:"bankml_receipt"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if len(v.Choices) != 1 {
		t.Fatalf("%d choices: %s", len(v.Choices), b)
	}
	c := v.Choices[0]
	a := answer{finish: c.FinishReason, usage: v.Usage, receiptBytes: v.Receipt}
	if c.Message != nil {
		a.text = c.Message.Content
	} else if c.Text != nil {
		a.text = *c.Text
	}
	if c.Logprobs != nil {
		for _, e := range c.Logprobs.Content {
			a.logprobIDs = append(a.logprobIDs, e.ID)
		}
	}
	if err := json.Unmarshal(v.Receipt, &a.receipt); err != nil {
		t.Fatalf("receipt: %v: %s", err, b)
	}
	return a
}

// checkStreamShape wants the stream's chunks in the shape the common client loop reads
// (chunk.choices[0].delta.content): every chunk before [DONE] has at least one choice, except OpenAI's usage
// chunk (empty choices and usage) which must be the last; the receipt is a top-level bankml_receipt of the
// chunk with finish_reason and, when there is a usage chunk, of that one too, the same bytes; no other chunk
// carries it. It returns the receipt's bytes.
func checkStreamShape(t testing.TB, events []string) []byte {
	t.Helper()
	type chunk struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Choices *[]struct {
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage   json.RawMessage `json:"usage"`
		Receipt json.RawMessage `json:"bankml_receipt"`
	}
	var receipt []byte
	finishAt := -1
	for i, e := range events {
		var c chunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("%v: %s", err, e)
		}
		if c.Choices == nil {
			t.Fatalf("chunk %d has no choices array: %s", i, e)
		}
		if len(*c.Choices) == 0 {
			if i != len(events)-1 || c.Usage == nil {
				t.Fatalf("chunk %d has empty choices and is not the last chunk with usage: %s", i, e)
			}
			if !bytes.Equal(c.Receipt, receipt) {
				t.Fatalf("the usage chunk's receipt %s is not the finish chunk's %s", c.Receipt, receipt)
			}
			continue
		}
		finishes := false
		for _, ch := range *c.Choices {
			finishes = finishes || ch.FinishReason != nil
		}
		switch {
		case finishes:
			if finishAt >= 0 {
				t.Fatalf("two chunks with a finish_reason: %d and %d", finishAt, i)
			}
			finishAt = i
			if c.Receipt == nil {
				t.Fatalf("the finish chunk carries no bankml_receipt: %s", e)
			}
			receipt = c.Receipt
		case c.Receipt != nil:
			t.Fatalf("chunk %d carries a receipt without finishing: %s", i, e)
		}
	}
	if finishAt < 0 || finishAt < len(events)-2 {
		t.Fatalf("the finish chunk (%d) is not among the last two of %d", finishAt, len(events))
	}
	return receipt
}

// parseStream reads an SSE answer: every "data: " event up to [DONE], which must be last, in the shape
// checkStreamShape wants.
func parseStream(t testing.TB, b []byte) answer {
	t.Helper()
	var a answer
	var events []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		events = append(events, d)
	}
	if len(events) < 2 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %s", b)
	}
	events = events[:len(events)-1]
	a.receiptBytes = checkStreamShape(t, events)
	if err := json.Unmarshal(a.receiptBytes, &a.receipt); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		var v struct {
			Choices []struct {
				Text  *string `json:"text"`
				Delta *struct {
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string      `json:"finish_reason"`
				Logprobs     *logprobsIDs `json:"logprobs"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e), &v); err != nil {
			t.Fatalf("%v: %s", err, e)
		}
		a.chunks++
		if v.Usage != nil {
			a.usage = v.Usage
		}
		for _, c := range v.Choices {
			if c.Text != nil {
				a.text += *c.Text
			}
			if c.Delta != nil && c.Delta.Content != nil {
				a.text += *c.Delta.Content
			}
			if c.FinishReason != nil {
				if a.finish != "" {
					t.Fatalf("two chunks with a finish_reason: %s", b)
				}
				a.finish = *c.FinishReason
			}
			if c.Logprobs != nil {
				for _, x := range c.Logprobs.Content {
					a.logprobIDs = append(a.logprobIDs, x.ID)
				}
			}
		}
	}
	return a
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// oracleCase is one request whose answer must equal the reference's.
type oracleCase struct {
	name   string
	fields map[string]any         // sampling and length fields added to the request
	params func(p *sample.Params) // the same settings on llama-server's defaults, for the reference
	n      int                    // max_tokens
}

func oracleCases() []oracleCase {
	return []oracleCase{
		{name: "greedy", fields: map[string]any{"temperature": 0}, params: func(p *sample.Params) { p.Temp = 0 }, n: 24},
		{name: "defaults seed 42", fields: map[string]any{"seed": 42}, params: func(p *sample.Params) { p.Seed = 42 }, n: 24},
		{name: "temp 1.2 top-k 100 top-p 0.9", fields: map[string]any{"seed": 7, "temperature": 1.2, "top_k": 100, "top_p": 0.9},
			params: func(p *sample.Params) { p.Seed, p.Temp, p.TopK, p.TopP = 7, 1.2, 100, 0.9 }, n: 24},
		{name: "penalties", fields: map[string]any{"seed": 3, "presence_penalty": 0.6, "frequency_penalty": 0.4, "repeat_penalty": 1.2},
			params: func(p *sample.Params) { p.Seed, p.PenaltyPresent, p.PenaltyFreq, p.PenaltyRepeat = 3, 0.6, 0.4, 1.2 }, n: 24},
		{name: "min-p typical DRY XTC", fields: map[string]any{"seed": 5, "min_p": 0.1, "typical_p": 0.9, "dry_multiplier": 0.8, "xtc_probability": 0.5, "xtc_threshold": 0.1, "top_k": 0},
			params: func(p *sample.Params) {
				p.Seed, p.MinP, p.TypicalP, p.DryMultiplier, p.XTCProbability, p.XTCThreshold, p.TopK = 5, 0.1, 0.9, 0.8, 0.5, 0.1, 0
			}, n: 24},
	}
}

// TestAnswersEqualReference sends every oracle case to /v1/completions and /v1/chat/completions, streamed
// and not, on stories260K and the synthetic qwen3 model, and checks the tokens (the logprobs entries'
// ids), their count, the text and the finish reason against the reference's sampler chain run on the
// reference's logits, then every receipt (hashes recomputed) and the ledger (verified, every entry proved).
func TestAnswersEqualReference(t *testing.T) {
	models := []struct{ name, path string }{{"stories260K", storiesPath(t)}, {"qwen3-synthetic", qwen3Model(t)}}
	// The synthetic qwen3 model has the real 151,936-token vocabulary: its output matrix makes every token
	// cost about a second in the portable kernels, so CI runs three of its combinations (one per route and
	// stream mode pair that matters) unless BANKML_ORACLE_FULL=1 asks for all.
	full := os.Getenv("BANKML_ORACLE_FULL") == "1"
	qwenSubset := map[string]bool{
		"greedy /v1/chat/completions false":          true,
		"defaults seed 42 /v1/chat/completions true": true,
		"penalties /v1/completions false":            true,
	}
	total, passed := 0, 0
	for _, mdl := range models {
		rm := refModel(t, mdl.path)
		l, dir := openLedger(t)
		ts := newTestServer(t, mdl.path, AdmitOptions{}, Options{Ledger: l})
		fileSHA, err := provenance.SHA256File(mdl.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		type sent struct {
			body []byte
			a    answer
		}
		var answers []sent
		for _, oc := range oracleCases() {
			for _, route := range []string{"/v1/completions", "/v1/chat/completions"} {
				for _, stream := range []bool{false, true} {
					name := fmt.Sprintf("%s %s %s stream=%v", mdl.name, oc.name, route, stream)
					if mdl.name != "stories260K" && !full && !qwenSubset[fmt.Sprintf("%s %s %v", oc.name, route, stream)] {
						continue
					}
					total++
					n := oc.n
					if mdl.name != "stories260K" {
						n = 8
					}
					req := map[string]any{"max_tokens": n, "stream": stream, "logprobs": true, "top_logprobs": 1}
					var prompt []int32
					if route == "/v1/completions" {
						text := "Once upon a time, there was"
						req["prompt"] = text
						req["logprobs"] = 1
						delete(req, "top_logprobs")
						if prompt, err = rm.Tokenize(text, true, true); err != nil {
							t.Fatal(err)
						}
					} else {
						msgs := []map[string]string{{"role": "system", "content": "You tell stories."}, {"role": "user", "content": "Tell me about a cat."}}
						req["messages"] = msgs
						if stream {
							req["stream_options"] = map[string]any{"include_usage": true}
						}
						st, b := ts.post(t, "/apply-template", mustJSON(t, map[string]any{"messages": msgs}))
						if st != 200 {
							t.Fatalf("%s: apply-template %d %s", name, st, b)
						}
						var at struct{ Prompt string }
						json.Unmarshal(b, &at)
						if prompt, err = rm.Tokenize(at.Prompt, true, true); err != nil {
							t.Fatal(err)
						}
					}
					for k, v := range oc.fields {
						req[k] = v
					}
					p := sample.DefaultParams()
					oc.params(&p)
					want := refAnswer(t, rm, prompt, p, n, 512)
					wantRaw := refText(t, rm, want)
					wantFinish := "length"
					if eog, _ := rm.IsEOG(want[len(want)-1]); eog {
						wantFinish = "stop"
					}

					body := mustJSON(t, req)
					st, b := ts.post(t, route, body)
					if st != 200 {
						t.Errorf("%s: status %d: %s", name, st, b)
						continue
					}
					// llama-server's text for the reference's bytes: a stream sends only what is complete UTF-8
					// at a token (streamedText), the chat route its parser's content, every route through
					// nlohmann's dump_safe (the chat shim)
					var a answer
					raw := wantRaw
					if stream {
						a = parseStream(t, b)
						raw = streamedText(t, rm, want)
					} else {
						a = parseAnswer(t, b)
					}
					_, wantCompletion := llamaServerTexts(t, mdl.path, []byte(raw))
					var wantText string
					var wantAnswer []byte
					if route == "/v1/completions" {
						wantText, wantAnswer = wantCompletion, []byte(wantCompletion)
					} else {
						// llama-server answers the chat template's parse of the text it generated (streamed:
						// of the text it released) for this body: common_chat_parse in libllama-common, its
						// JSON dumped with nlohmann's replace handler
						p := refParse(t, mdl.path, body, raw, false)
						wantText, wantAnswer = p.Content, refReceiptAnswer(t, p)
					}
					ok := true
					if a.text != wantText {
						t.Errorf("%s: text %q, reference %q", name, a.text, wantText)
						ok = false
					}
					if got := int(a.usage["completion_tokens"].(float64)); got != len(want) {
						t.Errorf("%s: completion_tokens %d, reference %d", name, got, len(want))
						ok = false
					}
					if got := int(a.usage["prompt_tokens"].(float64)); got != len(prompt) {
						t.Errorf("%s: prompt_tokens %d, reference %d", name, got, len(prompt))
						ok = false
					}
					if a.finish != wantFinish {
						t.Errorf("%s: finish_reason %q, reference %q", name, a.finish, wantFinish)
						ok = false
					}
					// Every token whose text is complete UTF-8 has a logprobs entry; compare the ids
					// when all have one (always on stories260K's ASCII pieces).
					if len(a.logprobIDs) == len(want) && !slices.Equal(a.logprobIDs, want) {
						t.Errorf("%s: tokens %v, reference %v", name, a.logprobIDs, want)
						ok = false
					} else if len(a.logprobIDs) != len(want) && mdl.name == "stories260K" {
						t.Errorf("%s: %d logprobs entries for %d tokens", name, len(a.logprobIDs), len(want))
						ok = false
					}
					rc := a.receipt
					switch {
					case rc.RequestSHA256 != sha(body):
						t.Errorf("%s: receipt request_sha256 %s, body's %s", name, rc.RequestSHA256, sha(body))
						ok = false
					case rc.ResponseSHA256 != sha(wantAnswer):
						t.Errorf("%s: receipt response_sha256 %s, the answer's %s", name, rc.ResponseSHA256, sha(wantAnswer))
						ok = false
					case rc.ModelSHA256 != fileSHA || rc.Pinned || rc.Signed || rc.Guard != "play":
						t.Errorf("%s: receipt %+v (model %s, unpinned)", name, rc, fileSHA)
						ok = false
					case rc.PromptTokens != len(prompt) || rc.CompletionTokens != len(want) || rc.TTFTMS == nil || rc.WallMS < *rc.TTFTMS:
						t.Errorf("%s: receipt counts/times %+v", name, rc)
						ok = false
					case rc.LedgerIndex == nil || *rc.LedgerIndex != uint64(len(answers)):
						t.Errorf("%s: receipt ledger_index %v, want %d", name, rc.LedgerIndex, len(answers))
						ok = false
					}
					a.text = string(wantAnswer) // what the history keeps
					answers = append(answers, sent{body, a})
					if ok {
						passed++
					}
				}
			}
		}
		// The ledger: verifies, one entry per answer, each proved by the server and holding the exchange.
		rep, err := ledger.Verify(dir)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Size != uint64(len(answers)) {
			t.Fatalf("%s: ledger has %d entries for %d answers", mdl.name, rep.Size, len(answers))
		}
		st, hb := ts.get(t, "/bankml/ledger")
		var head ledger.Head
		if st != 200 || json.Unmarshal(hb, &head) != nil || head != rep.Head {
			t.Fatalf("GET /bankml/ledger %d %s, verify %+v", st, hb, rep.Head)
		}
		for i, s := range answers {
			st, pb := ts.get(t, fmt.Sprintf("/bankml/ledger/proof?index=%d", i))
			var pr ledger.Proof
			if st != 200 || json.Unmarshal(pb, &pr) != nil {
				t.Fatalf("proof %d: %d %s", i, st, pb)
			}
			if err := pr.Check(); err != nil {
				t.Fatalf("proof %d: %v", i, err)
			}
			if pr.Root != head.Root || pr.Size != head.Size {
				t.Fatalf("proof %d is for another tree: %+v", i, pr)
			}
			var e struct {
				Request string          `json:"request"`
				Answer  string          `json:"answer"`
				Receipt json.RawMessage `json:"receipt"`
			}
			if err := json.Unmarshal([]byte(pr.Entry), &e); err != nil {
				t.Fatal(err)
			}
			if e.Request != string(s.body) || e.Answer != s.a.text || !bytes.Equal(compact(t, e.Receipt), compact(t, s.a.receiptBytes)) {
				t.Fatalf("entry %d does not hold its exchange: %s", i, pr.Entry)
			}
		}
		os.RemoveAll(dir)
	}
	t.Logf("answers equal to the reference: %d of %d", passed, total)
	fmt.Printf("serve oracle: %d of %d answers equal to the reference (tokens, counts, text, finish reason, receipt)\n", passed, total)
}

func compact(t testing.TB, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
