package serve

import "net/http"

// handleChatCompletions is OpenAI's POST /v1/chat/completions.
func (s *Server) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	writeError(w, &APIError{Type: ErrNotSupported, Message: "waiting for package engine"})
}

// handleCompletions is OpenAI's POST /v1/completions.
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	writeError(w, &APIError{Type: ErrNotSupported, Message: "waiting for package engine"})
}

// handleProps is llama-server's GET /props.
func (s *Server) handleProps(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": s.nCtx()},
		"total_slots":                 s.opt.Parallel,
		"model_alias":                 s.m.Name,
		"model_path":                  s.m.Path,
		"chat_template":               s.m.Template.Source(),
		"build_info":                  "bankml " + s.opt.Version,
	})
}
