package serve

import (
	"maps"

	"github.com/ollama/ollama/api"
)

// ModelDefaults are a stored model's Modelfile settings (package store's manifest), applied to the Ollama
// API as Ollama applies a model's (server/routes.go, v0.17.4): its PARAMETERs are the options a request's own
// "options" override one by one; its SYSTEM is the system message of a chat that has none and the system
// prompt of an /api/generate that gives none; its MESSAGEs go before the request's messages. The OpenAI and
// llama-server routes answer as llama-server does, without them.
type ModelDefaults struct {
	Options  map[string]any // Ollama option names, typed as api.FormatParams types them
	System   string
	Messages []api.Message
}

// withDefaults is a request's options over the model's (the request's own win).
func (s *Server) withDefaults(opts map[string]any) map[string]any {
	if len(s.opt.Defaults.Options) == 0 {
		return opts
	}
	out := maps.Clone(s.opt.Defaults.Options)
	// parseOllamaOptions reads JSON-decoded values: give the model's the same shapes
	for k, v := range out {
		switch v := v.(type) {
		case int64:
			out[k] = float64(v)
		case float32:
			out[k] = float64(v)
		case []string:
			l := make([]any, len(v))
			for i, e := range v {
				l[i] = e
			}
			out[k] = l
		}
	}
	maps.Copy(out, opts)
	return out
}

// withModelMessages is a chat's messages after the model's MESSAGEs, with the model's SYSTEM first when the
// conversation does not start with a system message (Ollama's ChatHandler).
func (s *Server) withModelMessages(msgs []api.Message) []api.Message {
	d := s.opt.Defaults
	if d.System == "" && len(d.Messages) == 0 {
		return msgs
	}
	out := append(append([]api.Message(nil), d.Messages...), msgs...)
	if d.System != "" && (len(msgs) == 0 || msgs[0].Role != "system") {
		out = append([]api.Message{{Role: "system", Content: d.System}}, out...)
	}
	return out
}
