package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/gguf"
)

// The embedding and reranking routes: llama-server's POST /v1/embeddings (OpenAI's shape), /embedding and
// /embeddings (its own), /rerank, /reranking, /v1/rerank and /v1/reranking (Jina's and TEI's shapes), and
// Ollama's /api/embed and /api/embeddings. Every input is tokenized as llama-server's
// tokenize_input_prompts does and embedded by the engine (engine.Embed: several inputs in one forward pass,
// each vector its own input's alone), pooled as the server's --pooling says; llama-server's routes normalize
// the pooled vectors with common_embd_normalize (embed.Normalize, embd_normalize, default 2), Ollama's
// /api/embed with its own L2 normalisation (embed.NormalizeOllama). Without --embeddings (llama-server's
// flag; an encoder model turns it on by itself) the routes answer llama-server's 501, Ollama's too unless
// Options.OllamaEmbeddings (the store server's: Ollama's embedding routes need no flag).

// embdNormalizeDefault is llama-server's params.embd_normalize: euclidean.
const embdNormalizeDefault = 2

// mountEmbeddings adds the llama-server and OpenAI embedding and reranking routes.
func (s *Server) mountEmbeddings(r chi.Router) {
	r.Post("/v1/embeddings", func(w http.ResponseWriter, r *http.Request) { s.handleEmbeddings(w, r, true) })
	r.Post("/embedding", func(w http.ResponseWriter, r *http.Request) { s.handleEmbeddings(w, r, false) })
	r.Post("/embeddings", func(w http.ResponseWriter, r *http.Request) { s.handleEmbeddings(w, r, false) })
	for _, p := range []string{"/rerank", "/reranking", "/v1/rerank", "/v1/reranking"} {
		r.Post(p, s.handleRerank)
	}
}

// embeddingsOn reports whether the server embeds (--embeddings, --reranking, or an encoder model).
func (s *Server) embeddingsOn() bool {
	return s.opt.Embeddings || s.opt.Reranking || s.m.Model.Encoder()
}

// errNoEmbeddings is llama-server's answer without --embeddings.
var errNoEmbeddings = &APIError{Type: TypeNotSupported, Message: "This server does not support embeddings. Start it with `--embeddings`"}

// embedInputs is llama-server's tokenize_input_prompts (add_special and parse_special on): a string, an
// array of token ids or of strings and ids mixed (one input), or an array of those and of strings (one
// input each); an object {"prompt_string": ...} is one input too. Errors are 400s naming the element.
func (s *Server) embedInputs(field string, raw json.RawMessage) ([][]int32, error) {
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil && !slices.ContainsFunc(arr, isJSONInt) {
		if len(arr) == 0 {
			return nil, badRequest("%q must not be empty", field)
		}
		out := make([][]int32, len(arr))
		for i, e := range arr {
			toks, err := s.subprompt(fmt.Sprintf("%s[%d]", field, i), e)
			if err != nil {
				return nil, err
			}
			out[i] = toks
		}
		return out, nil
	}
	toks, err := s.subprompt(field, raw)
	if err != nil {
		return nil, err
	}
	return [][]int32{toks}, nil
}

// isJSONInt reports whether raw is a JSON integer (nlohmann's is_number_integer: no fraction or exponent).
func isJSONInt(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && (t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) && !bytes.ContainsAny(t, ".eE")
}

// subprompt is tokenize_input_subprompt: a string or a mixed array (tokenize_mixed), an array of token
// ids, or {"prompt_string": ...}.
func (s *Server) subprompt(field string, raw json.RawMessage) ([]int32, error) {
	var obj struct {
		PromptString json.RawMessage `json:"prompt_string"`
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		if json.Unmarshal(raw, &obj) != nil || obj.PromptString == nil {
			return nil, badRequest("%s: \"prompt\" elements must be a string, a list of tokens, a JSON object containing a prompt string, or a list of mixed strings & tokens.", field)
		}
		raw = obj.PromptString
	}
	return s.tokenizeMixed(field, raw, true, true)
}

// embedValues is one input's vectors as llama-server's embedding task returns them: the pooled vector
// normalized with norm (common_embd_normalize), or every row as it is for pooling none. With dims > 0 (the
// request's "dimensions", which llama-server ignores) the pooled vector is cut to its first dims values
// before it is normalized, so that the cut vector has the norm asked for (Ollama's /api/embed cuts and
// normalizes again the same way).
func (s *Server) embedValues(e engine.Embedding, norm, dims int) [][]float32 {
	if e.Pooled == nil {
		d := s.m.Model.HP.NEmbd
		rows := make([][]float32, len(e.Rows)/d)
		for i := range rows {
			rows[i] = e.Rows[i*d : (i+1)*d]
		}
		return rows
	}
	v := e.Pooled
	if dims > 0 && dims < len(v) { // checkDimensions bounds dims by n_embd, the pooled vector's size
		v = v[:dims]
	}
	out := make([]float32, len(v))
	embed.Normalize(out, v, norm)
	return [][]float32{out}
}

// checkDimensions refuses a "dimensions" the model's embeddings cannot be cut to: below 1, or more than
// the model's embedding size (n_embd). OpenAI refuses both; Ollama ignores them silently, bankml says so.
func (s *Server) checkDimensions(dims int) error {
	switch n := s.m.Model.HP.NEmbd; {
	case dims < 1:
		return fmt.Errorf("must be a positive number of dimensions, not %d", dims)
	case dims > n:
		return fmt.Errorf("%d is more than the model's %d embedding dimensions", dims, n)
	}
	return nil
}

// float64s widens v for JSON: llama-server's nlohmann::json stores a float as a double and prints it so.
func float64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// embeddingsRequest is the body of /v1/embeddings, /embedding and /embeddings.
type embeddingsRequest struct {
	Input          json.RawMessage `json:"input"`
	Content        json.RawMessage `json:"content"`
	EncodingFormat *string         `json:"encoding_format"`
	Model          *string         `json:"model"`
	EmbdNormalize  *int            `json:"embd_normalize"`
	// Dimensions is OpenAI's "dimensions" (llama-server ignores it; bankml cuts the vector, as Ollama does:
	// checkDimensions, embedValues).
	// A float64, so that a fractional value is refused rather than truncated (checkDimensions).
	Dimensions *float64 `json:"dimensions"`
}

// oaiEmbedding is one element of /v1/embeddings' data, in llama-server's member order.
type oaiEmbedding struct {
	Embedding      any    `json:"embedding"`
	Index          int    `json:"index"`
	Object         string `json:"object"`
	EncodingFormat string `json:"encoding_format,omitempty"`
}

// oaiEmbeddings is /v1/embeddings' answer (format_embeddings_response_oaicompat), with the receipt.
type oaiEmbeddings struct {
	Model   string          `json:"model"`
	Object  string          `json:"object"`
	Usage   oaiEmbedUsage   `json:"usage"`
	Data    json.RawMessage `json:"data"`
	Receipt *Receipt        `json:"bankml_receipt,omitempty"`
}

type oaiEmbedUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// handleEmbeddings is llama-server's handle_embeddings_impl: oai for /v1/embeddings (OpenAI's answer; a
// body with "content" and no "input" gets llama-server's own answer there too), else /embedding and
// /embeddings ([{"index", "embedding": [[...]]}], the receipt in the Bankml-Receipt header).
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request, oai bool) {
	x := s.begin(w, r, nil)
	if x == nil {
		return
	}
	if !s.embeddingsOn() {
		writeError(w, errNoEmbeddings)
		return
	}
	pool := s.eng.Pooling()
	if oai && pool == embed.PoolingNone {
		writeError(w, badRequest("Pooling type 'none' is not OAI compatible. Please use a different pooling type"))
		return
	}
	var req embeddingsRequest
	if err := decodeJSON(x.body, &req); err != nil {
		writeError(w, err)
		return
	}
	field, raw := "input", req.Input
	if raw == nil {
		if req.Content == nil {
			writeError(w, badRequest("\"input\" or \"content\" must be provided"))
			return
		}
		field, raw, oai = "content", req.Content, false // "content" is not OAI compatible
	}
	base64Out := false
	if req.EncodingFormat != nil {
		switch *req.EncodingFormat {
		case "base64":
			base64Out = true
		case "float":
		default:
			writeError(w, badRequest("The format to return the embeddings in. Can be either float or base64"))
			return
		}
	}
	norm := embdNormalizeDefault
	if req.EmbdNormalize != nil {
		norm = *req.EmbdNormalize
	}
	dims := 0
	if req.Dimensions != nil {
		if pool == embed.PoolingNone || pool == embed.PoolingRank {
			writeError(w, badRequest("Field 'dimensions': cuts a pooled embedding, and --pooling %s gives none", pool))
			return
		}
		d := *req.Dimensions
		if d != math.Trunc(d) || math.Abs(d) > 1<<30 {
			writeError(w, badRequest("Field 'dimensions': must be a whole number of dimensions, not %v", d))
			return
		}
		if err := s.checkDimensions(int(d)); err != nil {
			writeError(w, badRequest("Field 'dimensions': %s", err))
			return
		}
		dims = int(d)
	}
	inputs, err := s.embedInputs(field, raw)
	if err != nil {
		writeError(w, err)
		return
	}
	res, ok := s.embedAll(w, r, inputs, writeError)
	if !ok {
		return
	}
	n := 0
	for _, e := range res {
		n += e.Tokens
	}
	u := usage{PromptTokens: n}
	if !oai {
		type item struct {
			Index     int         `json:"index"`
			Embedding [][]float64 `json:"embedding"`
		}
		items := make([]item, len(res))
		for i, e := range res {
			items[i].Index = i
			for _, v := range s.embedValues(e, norm, dims) {
				items[i].Embedding = append(items[i].Embedding, float64s(v))
			}
		}
		answer, err := marshalJSON(items)
		if err != nil {
			writeError(w, err)
			return
		}
		s.answerWithHeader(w, x, u, answer)
		return
	}
	data := make([]oaiEmbedding, len(res))
	for i, e := range res {
		v := s.embedValues(e, norm, dims)[0]
		data[i] = oaiEmbedding{Index: i, Object: "embedding"}
		if base64Out {
			b := make([]byte, 4*len(v))
			for k, f := range v {
				binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(f))
			}
			data[i].Embedding, data[i].EncodingFormat = base64.StdEncoding.EncodeToString(b), "base64"
		} else {
			data[i].Embedding = float64s(v)
		}
	}
	answer, err := marshalJSON(data)
	if err != nil {
		writeError(w, err)
		return
	}
	name := s.name
	if req.Model != nil {
		name = *req.Model
	}
	rc, err := s.finish(x, u, answer)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, oaiEmbeddings{Model: name, Object: "list", Usage: oaiEmbedUsage{n, n}, Data: answer, Receipt: &rc})
}

// embedAll runs engine.Embed for inputs, answering an error itself (writeErr: the route's shape) when it
// returns false: a refused input is a 400 with llama-server's message, a full queue 429.
func (s *Server) embedAll(w http.ResponseWriter, r *http.Request, inputs [][]int32, writeErr func(http.ResponseWriter, error)) ([]engine.Embedding, bool) {
	res, err := s.eng.Embed(r.Context(), inputs) // request contexts derive from s.stop (BaseContext)
	switch {
	case err == nil:
		return res, true
	case errors.Is(err, engine.ErrEmbedInput):
		msg := err.Error()
		if _, after, ok := strings.Cut(msg, ": "); ok {
			msg = after
		}
		writeErr(w, badRequest("%s", strings.TrimPrefix(msg, "input ")))
	default:
		writeErr(w, err)
	}
	return nil, false
}

// answerWithHeader finishes an exchange whose answer is a JSON array (no member for the receipt): the
// receipt goes in the Bankml-Receipt header, the array is the body.
func (s *Server) answerWithHeader(w http.ResponseWriter, x *exchange, u usage, answer []byte) {
	rc, err := s.finish(x, u, answer)
	if err != nil {
		writeError(w, err)
		return
	}
	if b, err := json.Marshal(rc); err == nil {
		w.Header().Set("Bankml-Receipt", string(b))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(answer)
}

// rerankRequest is the body of the rerank routes (Jina's shape, or TEI's with "texts").
type rerankRequest struct {
	Query      json.RawMessage `json:"query"`
	Documents  []string        `json:"documents"`
	Texts      []string        `json:"texts"`
	TopN       *int            `json:"top_n"`
	ReturnText *bool           `json:"return_text"`
	Model      *string         `json:"model"`
}

// handleRerank is llama-server's post_rerank: each document is paired with the query
// (format_prompt_rerank: the model's "rerank" chat template, else [BOS] query [EOS] [SEP] document [EOS]
// as the vocabulary adds them), scored by the ranking head (pooling rank: the score is the head's first
// value), and the documents are answered by descending score, top_n of them.
func (s *Server) handleRerank(w http.ResponseWriter, r *http.Request) {
	x := s.begin(w, r, nil)
	if x == nil {
		return
	}
	if !s.opt.Reranking || s.eng.Pooling() != embed.PoolingRank {
		writeError(w, &APIError{Type: TypeNotSupported, Message: "This server does not support reranking. Start it with `--reranking`"})
		return
	}
	var req rerankRequest
	if err := decodeJSON(x.body, &req); err != nil {
		writeError(w, err)
		return
	}
	tei := req.Texts != nil
	var query string
	if req.Query == nil {
		writeError(w, badRequest("\"query\" must be provided"))
		return
	}
	if json.Unmarshal(req.Query, &query) != nil {
		writeError(w, badRequest("\"query\" must be a string"))
		return
	}
	docs := req.Documents
	if docs == nil {
		docs = req.Texts
	}
	if len(docs) == 0 {
		writeError(w, badRequest("\"documents\" must be a non-empty string array"))
		return
	}
	topN := len(docs)
	if req.TopN != nil {
		topN = *req.TopN
	}
	inputs := make([][]int32, len(docs))
	for i, d := range docs {
		inputs[i] = s.rerankTokens(query, d)
	}
	res, ok := s.embedAll(w, r, inputs, writeError)
	if !ok {
		return
	}
	type result struct {
		Index int     `json:"index"`
		Score float64 `json:"-"`
		Text  *string `json:"text,omitempty"`
	}
	results := make([]result, len(res))
	n := 0
	for i, e := range res {
		results[i] = result{Index: i, Score: float64(e.Pooled[0])}
		if tei && req.ReturnText != nil && *req.ReturnText {
			results[i].Text = &docs[i]
		}
		n += e.Tokens
	}
	// std::sort by descending score (not stable: equal scores keep no particular order in llama-server).
	slices.SortStableFunc(results, func(a, b result) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	results = results[:max(0, min(topN, len(results)))]
	label := "relevance_score"
	if tei {
		label = "score"
	}
	var parts [][]byte
	for _, r := range results {
		// Member order as llama-server's: index, the score, text.
		b := fmt.Appendf(nil, `{"index":%d,%q:%s`, r.Index, label, jsonFloat(r.Score))
		if r.Text != nil {
			t, _ := marshalJSON(*r.Text)
			b = append(append(b, `,"text":`...), t...)
		}
		parts = append(parts, append(b, '}'))
	}
	answer := append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
	u := usage{PromptTokens: n}
	if tei {
		s.answerWithHeader(w, x, u, answer)
		return
	}
	name := s.name
	if req.Model != nil {
		name = *req.Model
	}
	rc, err := s.finish(x, u, answer)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Model   string          `json:"model"`
		Object  string          `json:"object"`
		Usage   oaiEmbedUsage   `json:"usage"`
		Results json.RawMessage `json:"results"`
		Receipt *Receipt        `json:"bankml_receipt"`
	}{name, "list", oaiEmbedUsage{n, n}, answer, &rc})
}

// jsonFloat is a float64 as encoding/json writes it.
func jsonFloat(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// rerankTokens is format_prompt_rerank (tools/server/server-common.cpp): with the model's
// tokenizer.chat_template.rerank, that template with {query} and {document} replaced, tokenized with
// parse_special and no added special tokens; else the query and the document tokenized without special
// tokens, joined as [BOS if add_bos] query [EOS if add_eos] [SEP if add_sep] document [EOS if add_eos],
// EOS standing for SEP when the vocabulary has none.
func (s *Server) rerankTokens(query, doc string) []int32 {
	tok := s.m.Tokenizer
	if tmpl, ok := s.m.File.GetString("tokenizer.chat_template.rerank"); ok {
		p := strings.ReplaceAll(tmpl, "{query}", query)
		p = strings.ReplaceAll(p, "{document}", doc)
		return tok.Tokenize(p, false, true)
	}
	sep, addSep := s.sepToken()
	eos := tok.EOS()
	if eos < 0 {
		eos = sep
	}
	var out []int32
	if tok.AddBOS() && tok.BOS() >= 0 {
		out = append(out, tok.BOS())
	}
	out = append(out, tok.Tokenize(query, false, false)...)
	if tok.AddEOS() && eos >= 0 {
		out = append(out, eos)
	}
	if addSep && sep >= 0 {
		out = append(out, sep)
	}
	out = append(out, tok.Tokenize(doc, false, false)...)
	if tok.AddEOS() && eos >= 0 {
		out = append(out, eos)
	}
	return out
}

// sepToken is SepToken of the served model.
func (s *Server) sepToken() (int32, bool) { return SepToken(s.m.File, s.m.Tokenizer.NVocab()) }

// SepToken is the vocabulary's SEP token (-1 when none) and llama_vocab_get_add_sep, as llama_vocab loads them
// from f, a file of nVocab tokens: WordPiece (bert) has SEP 102 (within the vocabulary) and adds it, the
// jina-v1-en, jina-v2-code and roberta-bpe pre-tokenizers add it, and the file's
// tokenizer.ggml.seperator_token_id (within the vocabulary) and add_sep_token override. Rerank here and
// bankml embed's rank pairs read it.
func SepToken(f *gguf.File, nVocab int) (int32, bool) {
	sep, add := int32(-1), false
	model, _ := f.GetString("tokenizer.ggml.model")
	pre, _ := f.GetString("tokenizer.ggml.pre")
	if model == "bert" {
		add = true
		if nVocab > 102 {
			sep = 102
		}
	}
	if model == "gpt2" && (pre == "jina-v1-en" || pre == "jina-v2-code" || pre == "roberta-bpe") {
		add = true
	}
	if v, ok := f.GetUint64("tokenizer.ggml.seperator_token_id"); ok && v < uint64(nVocab) {
		sep = int32(v)
	}
	if v, ok := f.GetBool("tokenizer.ggml.add_sep_token"); ok {
		add = v
	}
	return sep, add
}

// mountOllamaEmbed adds Ollama's /api/embed and /api/embeddings.
func (s *Server) mountOllamaEmbed(r chi.Router, a *ollamaAPI) {
	r.Post("/api/embed", a.handleEmbed)
	r.Post("/api/embeddings", a.handleEmbeddings)
}

// ollamaVector is the vector Ollama's runner returns for one input: the pooled one, or with pooling none
// the last token's row (llama_get_embeddings_ith of the batch's last row, as its llamarunner falls back).
func (a *ollamaAPI) ollamaVector(e engine.Embedding) []float32 {
	if e.Pooled != nil {
		return e.Pooled
	}
	d := a.s.m.Model.HP.NEmbd
	return slices.Clone(e.Rows[len(e.Rows)-d:])
}

// ollamaEmbedInputs tokenizes Ollama's inputs (add_special and parse_special, as its runner does).
func (a *ollamaAPI) ollamaEmbedInputs(texts []string) [][]int32 {
	inputs := make([][]int32, len(texts))
	for i, t := range texts {
		inputs[i] = a.s.m.Tokenizer.Tokenize(t, true, true)
	}
	return inputs
}

// handleEmbed is Ollama's POST /api/embed (server/routes.go EmbedHandler): input a string or an array of
// strings; each vector L2-normalized (Ollama's normalize), cut to dimensions and normalized again when
// dimensions is smaller (a negative dimensions, or one past the model's n_embd, which Ollama ignores, is a
// 400 naming it); {"model", "embeddings", "total_duration", "load_duration", "prompt_eval_count",
// "bankml_receipt"}. An input longer than the route embeds (ollamaEmbedLimit: the engine's limit, cut to the
// num_ctx of the options or the model's PARAMETERs) is truncated as Ollama truncates it (ollamaTruncate)
// unless truncate is false, which makes it Ollama's 400 "the input length exceeds the context length"
// (inputTooLong), as it is for an input the cut leaves too long.
func (a *ollamaAPI) handleEmbed(w http.ResponseWriter, r *http.Request) {
	var req api.EmbedRequest
	x := a.start(w, r, &req, func() string { return req.Model })
	if x == nil {
		return
	}
	if !a.s.embeddingsOn() && !a.s.opt.OllamaEmbeddings {
		ollamaError(w, http.StatusNotImplemented, errNoEmbeddings.Message)
		return
	}
	// dimensions 0 is absent (api.EmbedRequest's omitempty); Ollama ignores a negative one and one past the
	// vector's size, which bankml refuses naming the field.
	if req.Dimensions != 0 {
		if err := a.s.checkDimensions(req.Dimensions); err != nil {
			ollamaError(w, http.StatusBadRequest, "dimensions: "+err.Error())
			return
		}
	}
	set, ok := a.settings(w, req.Options)
	if !ok {
		return
	}
	limit, what := a.ollamaEmbedLimit(set)
	var texts []string
	switch in := req.Input.(type) {
	case string:
		if in != "" {
			texts = append(texts, in)
		}
	case []any:
		for _, v := range in {
			s, ok := v.(string)
			if !ok {
				ollamaError(w, http.StatusBadRequest, "invalid input type")
				return
			}
			texts = append(texts, s)
		}
	case nil:
	default:
		ollamaError(w, http.StatusBadRequest, "invalid input type")
		return
	}
	type embedAnswer struct {
		Model           string      `json:"model"`
		Embeddings      [][]float32 `json:"embeddings"`
		TotalDuration   int64       `json:"total_duration,omitempty"`
		LoadDuration    int64       `json:"load_duration,omitempty"`
		PromptEvalCount int         `json:"prompt_eval_count,omitempty"`
		Receipt         *Receipt    `json:"bankml_receipt,omitempty"`
	}
	if len(texts) == 0 {
		writeJSON(w, http.StatusOK, embedAnswer{Model: req.Model, Embeddings: [][]float32{}})
		return
	}
	inputs := a.ollamaEmbedInputs(texts)
	truncate := req.Truncate == nil || *req.Truncate // Ollama's default: truncate
	for i, in := range inputs {
		if len(in) <= limit {
			continue
		}
		if truncate {
			cut, err := a.ollamaTruncate(texts[i], limit)
			if err != nil {
				ollamaError(w, http.StatusBadRequest, err.Error())
				return
			}
			if inputs[i] = cut; len(cut) <= limit {
				continue
			}
		}
		ollamaError(w, http.StatusBadRequest, inputTooLong(fmt.Sprintf("input %d", i), len(inputs[i]), what))
		return
	}
	res, ok := a.s.embedAll(w, r, inputs, writeOllamaAPIError)
	if !ok {
		return
	}
	out := embedAnswer{Model: req.Model, Embeddings: make([][]float32, len(res))}
	for i, e := range res {
		v := a.ollamaVector(e)
		if err := embed.NormalizeOllama(v); err != nil {
			ollamaError(w, http.StatusBadRequest, err.Error())
			return
		}
		if req.Dimensions > 0 && req.Dimensions < len(v) {
			v = v[:req.Dimensions]
			if err := embed.NormalizeOllama(v); err != nil {
				ollamaError(w, http.StatusBadRequest, err.Error())
				return
			}
		}
		out.Embeddings[i] = v
		out.PromptEvalCount += e.Tokens
	}
	answer, err := json.Marshal(out.Embeddings)
	if err != nil {
		writeOllamaAPIError(w, err)
		return
	}
	rc, err := a.s.finish(x, usage{PromptTokens: out.PromptEvalCount}, answer)
	if err != nil {
		writeOllamaAPIError(w, err)
		return
	}
	out.TotalDuration = int64(time.Since(x.received))
	out.Receipt = &rc
	writeJSON(w, http.StatusOK, out)
}

// ollamaInputTooLong is Ollama's answer to an embedding input longer than its runner's context (its runners'
// errorInputTooLong, which EmbedHandler passes on as a 400).
const ollamaInputTooLong = "the input length exceeds the context length"

// inputTooLong is Ollama's refusal of an input (which: "input 1", "the prompt") of n tokens past the limit
// ollamaEmbedLimit words as what, with the numbers after Ollama's words.
func inputTooLong(which string, n int, what string) string {
	return fmt.Sprintf("%s: %s has %d tokens, more than %s", ollamaInputTooLong, which, n, what)
}

// ollamaEmbedLimit is the most tokens one input of Ollama's embedding routes may have, and the words that
// name it: the engine's limit (engine.EmbedLimit: the slot context and, for most models, the physical batch
// -ub), cut to the num_ctx of the request's options or of the model's PARAMETERs when one is given, as Ollama
// loads its runner with num_ctx and cuts to min(num_ctx, the model's context) (EmbedHandler).
func (a *ollamaAPI) ollamaEmbedLimit(set ollamaSettings) (int, string) {
	limit := a.engine().EmbedLimit()
	if set.NumCtx > 0 && set.NumCtx < limit {
		return set.NumCtx, set.numCtxWords()
	}
	if limit < a.engine().NCtx() {
		return limit, fmt.Sprintf("the %d tokens the server embeds at once (its physical batch, -ub)", limit)
	}
	return limit, fmt.Sprintf("the server's slot context of %d tokens", limit)
}

// ollamaTruncate is the input Ollama's EmbedHandler embeds instead of a text its runner refuses for its
// length (server/routes.go, v0.17.4, embedWithRetry): the text tokenized without special tokens (parsing
// them, as its Tokenize); the room ctxLen, limit (ollamaEmbedLimit: Ollama's min(num_ctx, the model's
// context length), bankml's also the physical batch, -ub), less one when the tokens
// do not start with tokenizer.ggml.bos_token_id and one when they do not end with tokenizer.ggml.eos_token_id
// (0 when absent; Ollama asks add_bos_token and add_eos_token under the architecture's prefix, where no GGUF
// has them, so it always leaves that room); the first ctxLen tokens turned back into text piece by piece
// (llama_token_to_piece with special tokens rendered, Ollama's Detokenize) and tokenized again as every
// input is. Ollama's errors: tokens that already fit the room ("cannot be truncated further") and no room.
func (a *ollamaAPI) ollamaTruncate(text string, limit int) ([]int32, error) {
	tok, f := a.s.m.Tokenizer, a.s.m.File
	toks := tok.Tokenize(text, false, true)
	ctxLen := limit
	bos, _ := f.GetUint64("tokenizer.ggml.bos_token_id")
	eos, _ := f.GetUint64("tokenizer.ggml.eos_token_id")
	if len(toks) > 0 && uint64(toks[0]) != bos {
		ctxLen--
	}
	if len(toks) > 0 && uint64(toks[len(toks)-1]) != eos {
		ctxLen--
	}
	if len(toks) <= ctxLen {
		return nil, errors.New("input exceeds maximum context length and cannot be truncated further")
	}
	if ctxLen <= 0 {
		return nil, errors.New("input after truncation exceeds maximum context length")
	}
	var b []byte
	for _, t := range toks[:ctxLen] {
		b = append(b, tok.TokenToPiece(t, true)...)
	}
	return tok.Tokenize(string(b), true, true), nil
}

// handleEmbeddings is Ollama's old POST /api/embeddings (EmbeddingsHandler): {"model", "prompt"} →
// {"embedding": [...]}, the runner's vector as it is (no normalisation), as float64; an empty prompt
// gives an empty embedding. A prompt longer than the route embeds (ollamaEmbedLimit, num_ctx included, as
// Ollama's runner is loaded with it) is never truncated: Ollama's "the input length exceeds the context
// length", as a 400 where Ollama's EmbeddingsHandler makes every runner error a 500.
func (a *ollamaAPI) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req api.EmbeddingRequest
	x := a.start(w, r, &req, func() string { return req.Model })
	if x == nil {
		return
	}
	if !a.s.embeddingsOn() && !a.s.opt.OllamaEmbeddings {
		ollamaError(w, http.StatusNotImplemented, errNoEmbeddings.Message)
		return
	}
	type embeddingAnswer struct {
		Embedding []float64 `json:"embedding"`
		Receipt   *Receipt  `json:"bankml_receipt,omitempty"`
	}
	set, ok := a.settings(w, req.Options)
	if !ok {
		return
	}
	if req.Prompt == "" {
		writeJSON(w, http.StatusOK, embeddingAnswer{Embedding: []float64{}})
		return
	}
	inputs := a.ollamaEmbedInputs([]string{req.Prompt})
	if limit, what := a.ollamaEmbedLimit(set); len(inputs[0]) > limit {
		ollamaError(w, http.StatusBadRequest, inputTooLong("the prompt", len(inputs[0]), what))
		return
	}
	res, ok := a.s.embedAll(w, r, inputs, writeOllamaAPIError)
	if !ok {
		return
	}
	v := float64s(a.ollamaVector(res[0]))
	answer, err := json.Marshal(v)
	if err != nil {
		writeOllamaAPIError(w, err)
		return
	}
	rc, err := a.s.finish(x, usage{PromptTokens: res[0].Tokens}, answer)
	if err != nil {
		writeOllamaAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, embeddingAnswer{Embedding: v, Receipt: &rc})
}
