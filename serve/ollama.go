package serve

import (
	"os"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/sample"
)

// ollamaErrMaxQueue is Ollama's ErrMaxQueue (server/sched.go), its answer to a request past its queue.
const ollamaErrMaxQueue = "server busy, please try again.  maximum pending requests exceeded"

// mountOllama mounts the routes of the Ollama API (Ollama v0.17.4's
// server/routes.go; see ollama_api.go and docs/serve.md): GET and HEAD /,
// GET and HEAD /api/version and /api/tags, POST /api/show, GET /api/ps,
// POST /api/chat and /api/generate.
//
// For route writers: the Ollama routes are mounted here on the same router, behind the same middleware
// (request counting, the API key). The shared pieces, all on *Server:
//
//   - s.begin(w, r, writeErr) *exchange: reads the body (413 over the limit) and re-checks the model file
//     (503); nil means it has answered with writeErr (nil: writeError) and the route returns. It stamps the
//     arrival time the receipt measures from.
//   - x.tokenSeen(time.Now()): call for every token released to the client (sets ttft_ms).
//   - s.finish(x, usageOf(res), answer) (Receipt, error): re-checks the model file (503), builds the
//     receipt for the answer text exactly as the client receives it (Ollama routes: clientText, Go's
//     encoding/json's U+FFFD per invalid byte; llama-server's routes: jsonText/chatText, utf8.go), counts the answer in the metrics, and appends the exchange to the ledger (the receipt then
//     carries ledger_index); on an error no receipt may be sent (answer the error instead).
//   - s.recheck() error: the model re-check alone (begin and finish call it).
//   - s.generationError(err) *APIError: maps package engine's errors: ErrQueueFull → 429 (the Ollama routes: Ollama's 503), a
//     *engine.ContextError → 400 exceed_context_size_error, a *sample.ParamError → 400 naming the
//     parameter, cancellation → 503, anything else → 500 (params.go).
//   - s.eng (*engine.Engine), s.base (the sampling defaults: sample.DefaultParams with the model's
//     general.sampling.* applied), s.decodeSampling(body, nProbs) (llama-server's sampling fields),
//     paramError(err), s.render(body) (chat.ParseRequest + Template.Apply, 400 on the request's faults).
//   - writeError(w, err), writeJSON(w, status, v), *APIError (Status, Type, Message; HTTPStatus()),
//     badRequest, decodeJSON(body, v): the error bodies and request decoding.
//   - s.metrics.refusedFor(reason) (requests_processing and requests_deferred are read from the engine's
//     busy slots and queue at each scrape).
//   - s.m (*admit.Model: Name, Path, SHA256, Identity, Pin, Guard, File, Tokenizer, Template, Model), s.opt
//     (Options), s.nCtx(), s.started, s.fingerprint().
func (s *Server) mountOllama(r chi.Router, a *ollamaAPI) {
	r.Get("/", a.handleRoot)
	r.Head("/", a.handleRoot)
	r.Get("/api/version", a.handleVersion)
	r.Head("/api/version", a.handleVersion)
	r.Get("/api/tags", a.handleTags)
	r.Head("/api/tags", a.handleTags)
	r.Post("/api/show", a.handleShow)
	r.Get("/api/ps", a.handlePs)
	r.Post("/api/chat", a.handleChat)
	r.Post("/api/generate", a.handleGenerate)
	s.mountOllamaEmbed(r, a)
}

// newOllamaAPI is the Ollama API over the server's model.
func (s *Server) newOllamaAPI() *ollamaAPI {
	a := &ollamaAPI{s: s, model: ollamaModel{
		Name: s.name, Names: append([]string{s.m.Name, fileStem(s.m.Name)}, s.aliases...), Path: s.m.Path, Size: s.m.Identity.Size, SHA256: s.m.SHA256, File: s.m.File,
		Loaded: s.started,
	}}
	if fi, err := os.Stat(s.m.Path); err == nil {
		a.model.ModTime = fi.ModTime()
	}
	if s.m.Template != nil {
		a.model.Template = s.m.Template.Source()
	}
	if s.m.File != nil {
		_, a.model.HasTemplate = s.m.File.GetString("tokenizer.chat_template")
	}
	return a
}

// engine is the server's engine.
func (a *ollamaAPI) engine() *engine.Engine { return a.s.eng }

// base is the sampling parameters every request starts from (llama-server's
// defaults with the model's general.sampling.* applied).
func (a *ollamaAPI) base() sample.Params { return a.s.base }

// fileStem is a model file's base name without its .gguf extension (any case): the name Ollama users give a
// model ("stories260K" for stories260K.gguf). A name without the extension is itself.
func fileStem(name string) string {
	if n := len(name) - len(".gguf"); n > 0 && strings.EqualFold(name[n:], ".gguf") {
		return name[:n]
	}
	return name
}
