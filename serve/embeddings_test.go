package serve

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
	"github.com/bankml/bankml/internal/testdata"
)

// embedServeModel is a tiny synthetic model of arch for the embedding routes: bert with the bge vocabulary,
// or qwen3 with synth's; classifier > 0 adds a ranking head of that many labels.
func embedServeModel(t testing.TB, arch string, classifier int) string {
	t.Helper()
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	shape = synth.ForArch(arch, shape)
	shape.Classifier = classifier
	cfg := synth.Config{Arch: arch, Shape: shape, Weight: gguf.Q8_0, Embd: gguf.Q8_0, Output: gguf.Q8_0, Seed: 101 + uint64(classifier)}
	name := "serve-embed-" + arch
	if arch == synth.ArchBert {
		if cfg.Vocab, err = synth.VocabFromGGUF(testdata.Model(t, "vocab/ggml-vocab-bert-bge.gguf")); err != nil {
			t.Fatal(err)
		}
	}
	if classifier > 0 {
		name += "-rank"
	}
	return synthcache.File(t, name, cfg)
}

// bitsEqual compares float32 bit patterns.
func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func float32sOf(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// TestEmbeddingRoutesMatchReference: every embedding route, for each pooling, on an encoder (bert) and a
// decoder (qwen3): the vectors are the reference's (llama_get_embeddings_seq / _ith of each input alone)
// normalized as the route's server does — common_embd_normalize from libllama-common for llama-server's
// routes (default 2, the request's embd_normalize), Ollama's normalize for /api/embed, as they are for
// /api/embeddings —, bit for bit after the JSON round trip, with llama-server's and Ollama's shapes.
func TestEmbeddingRoutesMatchReference(t *testing.T) {
	lib := reftest.Lib(t)
	texts := []string{"Hello world", "The quick brown fox jumps over the lazy dog.", "a"}
	n, total := 0, 0
	for _, arch := range []string{synth.ArchBert, synth.ArchQwen3} {
		path := embedServeModel(t, arch, 0)
		rm, err := lib.LoadModel(path)
		if err != nil {
			t.Fatal(err)
		}
		defer rm.Close()
		for _, pool := range []embed.Pooling{embed.PoolingMean, embed.PoolingCLS, embed.PoolingLast, embed.PoolingNone} {
			ts := newTestServer(t, path, AdmitOptions{}, Options{Embeddings: true, Pooling: pool.String()})
			var toks [][]int32
			var ref []*reference.Embedding
			for _, text := range texts {
				tk, err := rm.Tokenize(text, true, true)
				if err != nil {
					t.Fatal(err)
				}
				e, err := rm.Embed(tk, int(pool), 1)
				if err != nil {
					t.Fatal(err)
				}
				toks, ref = append(toks, tk), append(ref, e)
			}
			check := func(route string, i int, got, want []float32) {
				total++
				if !bitsEqual(got, want) {
					t.Errorf("%s %s %s input %d: %d values differ from the reference's %d", arch, pool, route, i, len(got), len(want))
					return
				}
				n++
			}
			normalized := func(i, norm int) []float32 {
				v, err := lib.EmbdNormalize(ref[i].Pooled, norm)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			// llama-server's own routes: [{"index", "embedding": [[...]]}].
			for _, route := range []string{"/embedding", "/embeddings"} {
				for _, norm := range []int{2, -1, 0} {
					st, body := ts.post(t, route, mustJSON(t, map[string]any{"content": texts, "embd_normalize": norm}))
					if st != http.StatusOK {
						t.Fatalf("%s: %d %s", route, st, body)
					}
					var items []struct {
						Index     int         `json:"index"`
						Embedding [][]float64 `json:"embedding"`
					}
					if err := json.Unmarshal(body, &items); err != nil || len(items) != len(texts) {
						t.Fatalf("%s: %v %s", route, err, body)
					}
					for i, it := range items {
						if pool == embed.PoolingNone {
							var got, want []float32
							for _, r := range it.Embedding {
								got = append(got, float32sOf(r)...)
							}
							for _, r := range ref[i].Rows {
								want = append(want, r...)
							}
							check(route, i, got, want)
							continue
						}
						check(route, i, float32sOf(it.Embedding[0]), normalized(i, norm))
					}
				}
			}
			// OpenAI's route, float and base64; pooling none is refused.
			st, body := ts.post(t, "/v1/embeddings", mustJSON(t, map[string]any{"input": texts, "model": "m"}))
			if pool == embed.PoolingNone {
				if st != http.StatusBadRequest || !strings.Contains(string(body), "Pooling type 'none' is not OAI compatible") {
					t.Errorf("/v1/embeddings with pooling none: %d %s", st, body)
				}
			} else {
				var oai struct {
					Model  string `json:"model"`
					Object string `json:"object"`
					Usage  struct {
						PromptTokens int `json:"prompt_tokens"`
						TotalTokens  int `json:"total_tokens"`
					} `json:"usage"`
					Data []struct {
						Embedding []float64 `json:"embedding"`
						Index     int       `json:"index"`
						Object    string    `json:"object"`
					} `json:"data"`
					Receipt *Receipt `json:"bankml_receipt"`
				}
				if err := json.Unmarshal(body, &oai); st != http.StatusOK || err != nil || len(oai.Data) != len(texts) || oai.Model != "m" || oai.Object != "list" || oai.Receipt == nil {
					t.Fatalf("/v1/embeddings: %d %v %s", st, err, body)
				}
				if !strings.HasPrefix(string(body), `{"model":"m","object":"list","usage":{"prompt_tokens":`) {
					t.Errorf("/v1/embeddings member order: %.80s", body)
				}
				sum := 0
				for i, d := range oai.Data {
					check("/v1/embeddings", i, float32sOf(d.Embedding), normalized(i, 2))
					sum += len(toks[i])
				}
				if oai.Usage.PromptTokens != sum || oai.Usage.TotalTokens != sum {
					t.Errorf("/v1/embeddings usage %d, want %d tokens", oai.Usage.PromptTokens, sum)
				}
				st, body = ts.post(t, "/v1/embeddings", mustJSON(t, map[string]any{"input": texts[1], "encoding_format": "base64"}))
				var b64 struct {
					Data []struct {
						Embedding      string `json:"embedding"`
						EncodingFormat string `json:"encoding_format"`
					} `json:"data"`
				}
				if err := json.Unmarshal(body, &b64); st != http.StatusOK || err != nil || len(b64.Data) != 1 || b64.Data[0].EncodingFormat != "base64" {
					t.Fatalf("/v1/embeddings base64: %d %v %s", st, err, body)
				}
				raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float32, len(raw)/4)
				for k := range got {
					got[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
				}
				check("/v1/embeddings base64", 1, got, normalized(1, 2))
			}
			// Ollama's /api/embed (normalized by Ollama's rule) and /api/embeddings (as it is).
			st, body = ts.post(t, "/api/embed", mustJSON(t, map[string]any{"model": ts.name, "input": texts}))
			var oll struct {
				Embeddings [][]float32 `json:"embeddings"`
			}
			if err := json.Unmarshal(body, &oll); st != http.StatusOK || err != nil || len(oll.Embeddings) != len(texts) {
				t.Fatalf("/api/embed: %d %v %s", st, err, body)
			}
			for i := range texts {
				want := ollamaRaw(ref[i])
				if err := embed.NormalizeOllama(want); err != nil {
					t.Fatal(err)
				}
				check("/api/embed", i, oll.Embeddings[i], want)
			}
			st, body = ts.post(t, "/api/embeddings", mustJSON(t, map[string]any{"model": ts.name, "prompt": texts[1]}))
			var old struct {
				Embedding []float64 `json:"embedding"`
			}
			if err := json.Unmarshal(body, &old); st != http.StatusOK || err != nil {
				t.Fatalf("/api/embeddings: %d %v %s", st, err, body)
			}
			check("/api/embeddings", 1, float32sOf(old.Embedding), ollamaRaw(ref[1]))
		}
	}
	t.Logf("%d of %d route answers bit-equal to the reference's vectors", n, total)
}

// ollamaRaw is the vector Ollama's runner reads from the reference: the pooled one, or the last token's row.
func ollamaRaw(e *reference.Embedding) []float32 {
	if e.Pooled != nil {
		return slices.Clone(e.Pooled)
	}
	return slices.Clone(e.Rows[len(e.Rows)-1])
}

// TestRerankRoutesMatchReference: /v1/rerank (Jina's shape) and /rerank with "texts" (TEI's) on a bert
// reranker: each document's score is the reference's rank-pooled value of the (query, document) tokens,
// the results sorted by descending score and cut to top_n.
func TestRerankRoutesMatchReference(t *testing.T) {
	lib := reftest.Lib(t)
	path := embedServeModel(t, synth.ArchBert, 1)
	rm, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	ts := newTestServer(t, path, AdmitOptions{}, Options{Reranking: true})
	query := "what is a panda?"
	docs := []string{"hi", "The giant panda is a bear species endemic to China.", "pandas eat bamboo", "a"}
	scores := make([]float32, len(docs))
	for i, d := range docs {
		toks := ts.rerankTokens(query, d)
		e, err := rm.Embed(toks, reference.PoolingRank, 1)
		if err != nil {
			t.Fatal(err)
		}
		scores[i] = e.Pooled[0]
	}
	st, body := ts.post(t, "/v1/rerank", mustJSON(t, map[string]any{"query": query, "documents": docs, "top_n": 3}))
	var jina struct {
		Results []struct {
			Index int     `json:"index"`
			Score float64 `json:"relevance_score"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &jina); st != http.StatusOK || err != nil || len(jina.Results) != 3 {
		t.Fatalf("/v1/rerank: %d %v %s", st, err, body)
	}
	for k, r := range jina.Results {
		if math.Float32bits(float32(r.Score)) != math.Float32bits(scores[r.Index]) {
			t.Errorf("result %d (document %d): score %g, reference %g", k, r.Index, r.Score, scores[r.Index])
		}
		if k > 0 && r.Score > jina.Results[k-1].Score {
			t.Errorf("results not sorted: %s", body)
		}
	}
	st, body = ts.post(t, "/rerank", mustJSON(t, map[string]any{"query": query, "texts": docs, "return_text": true}))
	var tei []struct {
		Index int     `json:"index"`
		Score float64 `json:"score"`
		Text  string  `json:"text"`
	}
	if err := json.Unmarshal(body, &tei); st != http.StatusOK || err != nil || len(tei) != len(docs) {
		t.Fatalf("/rerank (TEI): %d %v %s", st, err, body)
	}
	for _, r := range tei {
		if math.Float32bits(float32(r.Score)) != math.Float32bits(scores[r.Index]) || r.Text != docs[r.Index] {
			t.Errorf("TEI result %+v, reference score %g", r, scores[r.Index])
		}
	}
	t.Logf("%d of %d rerank scores bit-equal to the reference's", len(docs), len(docs))
}

// TestEmbeddingRoutesRefuse: llama-server's refusals and bankml's.
func TestEmbeddingRoutesRefuse(t *testing.T) {
	qwen := newTestServer(t, embedServeModel(t, synth.ArchQwen3, 0), AdmitOptions{}, Options{})
	bert := newTestServer(t, embedServeModel(t, synth.ArchBert, 0), AdmitOptions{}, Options{})
	long := strings.Repeat("word ", 600)
	for _, tc := range []struct {
		name   string
		ts     *testServer
		path   string
		body   string
		status int
		want   string
	}{
		{"without --embeddings", qwen, "/v1/embeddings", `{"input":"hi"}`, 501, "Start it with `--embeddings`"},
		{"Ollama without --embeddings", qwen, "/api/embed", `{"model":"` + qwen.name + `","input":"hi"}`, 501, "--embeddings"},
		{"rerank without --reranking", bert, "/v1/rerank", `{"query":"q","documents":["d"]}`, 501, "Start it with `--reranking`"},
		{"no input", bert, "/v1/embeddings", `{}`, 400, "must be provided"},
		{"bad encoding", bert, "/v1/embeddings", `{"input":"hi","encoding_format":"hex"}`, 400, "Can be either float or base64"},
		{"empty prompt list", bert, "/embedding", `{"content":[]}`, 400, "must not be empty"},
		{"past a micro-batch", bert, "/v1/embeddings", `{"input":"` + long + `"}`, 400, "is too large to process"},
		{"Ollama input type", bert, "/api/embed", `{"model":"` + bert.name + `","input":[1,2]}`, 400, "invalid input type"},
		{"completion on an encoder", bert, "/v1/completions", `{"prompt":"hi","max_tokens":2}`, 501, "the model is an encoder"},
	} {
		st, body := tc.ts.post(t, tc.path, []byte(tc.body))
		if st != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, st, body, tc.status, tc.want)
		}
	}
}

// TestDimensionsCutTheEmbeddingAndNormalizeItAgain: "dimensions" (OpenAI's field, which llama-server ignores
// and Ollama's /api/embed honours) cuts each vector to its first N values: on llama-server's routes the
// pooled vector is cut and then normalized as embd_normalize says (the euclidean default: unit length again),
// on /api/embed Ollama's way (normalized, cut, normalized again), bit for bit; N equal to the model's size
// changes nothing; N below 1, past the model's size or not an integer is a 400 naming the field, and so is
// dimensions with --pooling none.
func TestDimensionsCutTheEmbeddingAndNormalizeItAgain(t *testing.T) {
	path := embedServeModel(t, synth.ArchBert, 0)
	ts := newTestServer(t, path, AdmitOptions{}, Options{})
	n := ts.Server.m.Model.HP.NEmbd
	const dims = 8
	oai := func(t *testing.T, body string) []float32 {
		t.Helper()
		st, b := ts.post(t, "/v1/embeddings", []byte(body))
		if st != 200 {
			t.Fatalf("%s: %d %s", body, st, b)
		}
		var out struct {
			Data []struct {
				Embedding []float64 `json:"embedding"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return float32sOf(out.Data[0].Embedding)
	}
	ollama := func(t *testing.T, body string) []float32 {
		t.Helper()
		st, b := ts.post(t, "/api/embed", []byte(body))
		if st != 200 {
			t.Fatalf("%s: %d %s", body, st, b)
		}
		var out struct {
			Embeddings [][]float32 `json:"embeddings"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out.Embeddings[0]
	}
	raw := oai(t, `{"input":"Hello world","embd_normalize":-1}`) // the pooled vector as it is
	if len(raw) != n || n <= dims {
		t.Fatalf("pooled vector of %d values, n_embd %d", len(raw), n)
	}
	euclid := make([]float32, dims)
	embed.Normalize(euclid, raw[:dims], 2)
	ollamaCut := slices.Clone(raw)
	if err := embed.NormalizeOllama(ollamaCut); err != nil {
		t.Fatal(err)
	}
	ollamaCut = ollamaCut[:dims]
	if err := embed.NormalizeOllama(ollamaCut); err != nil {
		t.Fatal(err)
	}
	model := `"model":"` + ts.name + `"`
	for _, c := range []struct {
		name string
		got  func(t *testing.T) []float32
		want []float32
	}{
		{"/v1/embeddings cuts and normalizes to unit length", func(t *testing.T) []float32 { return oai(t, `{"input":"Hello world","dimensions":8}`) }, euclid},
		{"/v1/embeddings with embd_normalize -1 only cuts", func(t *testing.T) []float32 {
			return oai(t, `{"input":"Hello world","dimensions":8,"embd_normalize":-1}`)
		}, raw[:dims]},
		{"/v1/embeddings with dimensions n_embd is the whole vector", func(t *testing.T) []float32 {
			return oai(t, `{"input":"Hello world","dimensions":`+strconv.Itoa(n)+`}`)
		}, oai(t, `{"input":"Hello world"}`)},
		{"llama-server's /embedding cuts the same way", func(t *testing.T) []float32 {
			st, b := ts.post(t, "/embedding", []byte(`{"content":"Hello world","dimensions":8}`))
			if st != 200 {
				t.Fatalf("%d %s", st, b)
			}
			var out []struct {
				Embedding [][]float64 `json:"embedding"`
			}
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			return float32sOf(out[0].Embedding[0])
		}, euclid},
		{"Ollama's /api/embed normalizes, cuts and normalizes again", func(t *testing.T) []float32 {
			return ollama(t, `{`+model+`,"input":"Hello world","dimensions":8}`)
		}, ollamaCut},
		{"Ollama's /api/embed with dimensions n_embd is the whole vector", func(t *testing.T) []float32 {
			return ollama(t, `{`+model+`,"input":"Hello world","dimensions":`+strconv.Itoa(n)+`}`)
		}, ollama(t, `{`+model+`,"input":"Hello world"}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.got(t); !bitsEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	none := newTestServer(t, path, AdmitOptions{}, Options{Pooling: "none"})
	for _, c := range []struct {
		name string
		ts   *testServer
		path string
		body string
		want string
	}{
		{"dimensions 0 is refused on /v1/embeddings", ts, "/v1/embeddings", `{"input":"hi","dimensions":0}`, "Field 'dimensions': must be a positive number of dimensions, not 0"},
		{"a negative dimensions is refused", ts, "/v1/embeddings", `{"input":"hi","dimensions":-3}`, "Field 'dimensions': must be a positive number of dimensions, not -3"},
		{"dimensions past the model's size is refused", ts, "/v1/embeddings", `{"input":"hi","dimensions":` + strconv.Itoa(n+1) + `}`, "Field 'dimensions': " + strconv.Itoa(n+1) + " is more than the model's " + strconv.Itoa(n) + " embedding dimensions"},
		{"dimensions of the wrong type is refused", ts, "/v1/embeddings", `{"input":"hi","dimensions":"8"}`, "Field 'dimensions'"},
		{"a fractional dimensions is refused, not truncated", ts, "/v1/embeddings", `{"input":"hi","dimensions":1.5}`, "Field 'dimensions': must be a whole number of dimensions, not 1.5"},
		{"a dimensions below one is named as sent", ts, "/v1/embeddings", `{"input":"hi","dimensions":0.5}`, "Field 'dimensions': must be a whole number of dimensions, not 0.5"},
		{"Ollama's /api/embed refuses a negative dimensions it would ignore", ts, "/api/embed", `{` + model + `,"input":"hi","dimensions":-3}`, `{"error":"dimensions: must be a positive number of dimensions, not -3"}`},
		{"Ollama's /api/embed refuses dimensions past the model's size", ts, "/api/embed", `{` + model + `,"input":"hi","dimensions":` + strconv.Itoa(n+1) + `}`, `"error":"dimensions: ` + strconv.Itoa(n+1) + ` is more than`},
		{"dimensions with pooling none is refused", none, "/embedding", `{"content":"hi","dimensions":8}`, "Field 'dimensions': cuts a pooled embedding, and --pooling none gives none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, b := c.ts.post(t, c.path, []byte(c.body))
			if st != 400 || !strings.Contains(string(b), c.want) {
				t.Fatalf("%d %s; want 400 with %q", st, b, c.want)
			}
		})
	}
}

// TestTheEmbeddingLimitIsThePhysicalBatchAndApiEmbedTruncatesPastIt: Options.UBatch (serve's -ub) is the
// most tokens one input of the embedding routes may have (512 by default, as llama-server's -ub; capped at a
// causal model's context, as llama_context caps n_ubatch): past it llama-server's routes answer llama-server's
// refusal with the physical batch in force, within it they embed. Ollama's /api/embed truncates an input
// past the limit as Ollama does (truncate absent or true: the first tokens that fit with the BOS and EOS
// added again; the vector is the shorter text's) and refuses it with truncate false, or when cutting cannot
// make it fit (Ollama's "cannot be truncated further").
func TestTheEmbeddingLimitIsThePhysicalBatchAndApiEmbedTruncatesPastIt(t *testing.T) {
	qwenPath, bertPath := embedServeModel(t, synth.ArchQwen3, 0), embedServeModel(t, synth.ArchBert, 0)
	qwen := newTestServer(t, qwenPath, AdmitOptions{}, Options{Embeddings: true, Pooling: "mean", NCtx: 2048})
	qwenUB := newTestServer(t, qwenPath, AdmitOptions{}, Options{Embeddings: true, Pooling: "mean", NCtx: 2048, UBatch: 2048})
	qwenCapped := newTestServer(t, qwenPath, AdmitOptions{}, Options{Embeddings: true, Pooling: "mean", NCtx: 1024, UBatch: 4096})
	bert := newTestServer(t, bertPath, AdmitOptions{}, Options{})
	// textOf is "word " repeated until the model's tokenizer gives at least n tokens (specials added).
	textOf := func(ts *testServer, n int) (string, int) {
		s := ""
		for {
			s += "word "
			if k := len(ts.Server.m.Tokenizer.Tokenize(s, true, true)); k >= n {
				return s, k
			}
		}
	}
	q600, n600 := textOf(qwen, 600)
	q1100, n1100 := textOf(qwen, 1100)
	b600 := strings.Repeat("word ", 600)
	b510 := strings.TrimSuffix(strings.Repeat("word ", 510), " ")
	oai := func(text string) string { return `{"input":"` + text + `"}` }
	ollama := func(ts *testServer, text, extra string) string {
		return `{"model":"` + ts.name + `","input":"` + text + `"` + extra + `}`
	}
	for _, tc := range []struct {
		name   string
		ts     *testServer
		path   string
		body   string
		status int
		want   string // in the answer
		tokens int    // /api/embed's prompt_eval_count, when not 0
	}{
		{"past the default physical batch of 512 llama-server's route refuses", qwen, "/v1/embeddings", oai(q600), 400,
			"input (" + strconv.Itoa(n600) + " tokens) is too large to process. increase the physical batch size (current batch size: 512)", 0},
		{"-ub 2048 takes the same input on /v1/embeddings", qwenUB, "/v1/embeddings", oai(q600), 200, `"embedding"`, 0},
		{"-ub 2048 takes the same input on /embedding", qwenUB, "/embedding", `{"content":"` + q600 + `"}`, 200, `"embedding"`, 0},
		{"-ub past a decoder's context is capped at the context", qwenCapped, "/v1/embeddings", oai(q1100), 400,
			"input (" + strconv.Itoa(n1100) + " tokens) is too large to process. increase the physical batch size (current batch size: 1024)", 0},
		{"/api/embed truncates by default", qwen, "/api/embed", ollama(qwen, q600, ""), 200, `"embeddings"`, -1},
		{"/api/embed truncates with truncate true", qwen, "/api/embed", ollama(qwen, q600, `,"truncate":true`), 200, `"embeddings"`, -1},
		{"/api/embed with truncate false refuses in Ollama's words", qwen, "/api/embed", ollama(qwen, q600, `,"truncate":false`), 400,
			"the input length exceeds the context length: input 0 has " + strconv.Itoa(n600) + " tokens, more than the 512 tokens the server embeds at once (its physical batch, -ub)", 0},
		{"/api/embed keeps the first tokens and adds the specials again", bert, "/api/embed", ollama(bert, b600, ""), 200, `"embeddings"`, 512},
		// The synthetic bert has no tokenizer.ggml.bos_token_id or eos_token_id: Ollama takes both as 0, [PAD]
		// here, and leaves no room for a BOS or EOS before a text starting and ending with it.
		{"/api/embed cannot cut a text that fits only without its specials", bert, "/api/embed",
			ollama(bert, "[PAD] "+strings.Repeat("word ", 509)+"[PAD]", ""), 400, "input exceeds maximum context length and cannot be truncated further", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := tc.ts.post(t, tc.path, []byte(tc.body))
			if st != tc.status || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%d %.300s; want %d with %q", st, body, tc.status, tc.want)
			}
			if tc.tokens == 0 {
				return
			}
			var got struct {
				Embeddings      [][]float32 `json:"embeddings"`
				PromptEvalCount int         `json:"prompt_eval_count"`
			}
			if err := json.Unmarshal(body, &got); err != nil || len(got.Embeddings) != 1 {
				t.Fatalf("%v %.300s", err, body)
			}
			if limit := tc.ts.eng.EmbedLimit(); tc.tokens < 0 && (got.PromptEvalCount > limit || got.PromptEvalCount < limit-2) {
				t.Fatalf("prompt_eval_count %d; want the limit %d less at most the 2 tokens Ollama leaves for BOS and EOS", got.PromptEvalCount, limit)
			}
			if tc.tokens > 0 {
				if got.PromptEvalCount != tc.tokens {
					t.Fatalf("prompt_eval_count %d; want %d", got.PromptEvalCount, tc.tokens)
				}
				st, b := tc.ts.post(t, "/api/embed", []byte(ollama(tc.ts, b510, "")))
				var short struct {
					Embeddings [][]float32 `json:"embeddings"`
				}
				if err := json.Unmarshal(b, &short); st != 200 || err != nil || !bitsEqual(short.Embeddings[0], got.Embeddings[0]) {
					t.Fatalf("the truncated input's vector differs from its first 510 words' (%d %v)", st, err)
				}
			}
		})
	}
}
