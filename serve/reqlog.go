package serve

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

// The request log: one line per HTTP request, as llama-server's log_server_request writes one ("request:
// METHOD PATH REMOTE STATUS", server-http.cpp) after the answer, as slog attributes: method, path (no query),
// status, the answer's bytes, the duration, the remote address and, once known, the model. Never a request's
// body or the answer's text (llama-server logs those at debug level; bankml does not log prompts at all).
// GET /v1/health, which llama-server leaves out of its log (GitHub Copilot polls it), is logged at debug level.
//
// A request logged by an outer server (the store server's router, which forwards it to a model's Server)
// is not logged again by the inner one: the outer middleware puts its record in the request's context.

type reqLogKey struct{}

// reqLog is what the inner handlers add to a request's log line.
type reqLog struct {
	model string
}

// LogRequests logs one line per request on log (see above); the store server wraps its router in it.
func LogRequests(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := r.Context().Value(reqLogKey{}).(*reqLog); ok {
				next.ServeHTTP(w, r) // logged by the server in front
				return
			}
			start := time.Now()
			rl := &reqLog{}
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r.WithContext(context.WithValue(r.Context(), reqLogKey{}, rl)))
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			level := slog.LevelInfo
			if r.URL.Path == "/v1/health" {
				level = slog.LevelDebug
			}
			attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status),
				slog.Int("bytes", ww.BytesWritten()), slog.Duration("duration", time.Since(start)), slog.String("remote", r.RemoteAddr)}
			if rl.model != "" {
				attrs = append(attrs, slog.String("model", rl.model))
			}
			log.LogAttrs(r.Context(), level, "request", attrs...)
		})
	}
}

// NoteModel names the model that serves r in its request log line (the first name noted stays).
func NoteModel(r *http.Request, model string) {
	if rl, ok := r.Context().Value(reqLogKey{}).(*reqLog); ok && rl.model == "" {
		rl.model = model
	}
}

// logRequests is LogRequests on the server's log, naming the served model.
func (s *Server) logRequests(next http.Handler) http.Handler {
	named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		NoteModel(r, s.name)
		next.ServeHTTP(w, r)
	})
	return LogRequests(s.log)(named)
}
