package serve

import (
	"os"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/sample"
)

// mountOllama mounts the routes of the Ollama API (Ollama v0.17.4's
// server/routes.go; see ollama_api.go and docs/serve.md): GET and HEAD /,
// GET and HEAD /api/version and /api/tags, POST /api/show, GET /api/ps,
// POST /api/chat and /api/generate.
func (s *Server) mountOllama(r chi.Router) {
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
