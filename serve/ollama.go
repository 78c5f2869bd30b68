package serve

import "github.com/go-chi/chi/v5"

// mountOllama mounts the routes of the Ollama API: helper ollama.
func (s *Server) mountOllama(r chi.Router) {}
