package serve

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// consoleFiles is the console: static files embedded in the binary (no build step; console/*.js is
// plain ECMAScript run as written).
//
//go:embed console
var consoleFiles embed.FS

// consoleCSP keeps the console's page from loading or sending anything anywhere but this server: its
// scripts and styles are its own files, and fetch can reach this origin only.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' blob: data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// mountConsole serves the console at /console/ (MountConsole).
func (s *Server) mountConsole(r chi.Router) { MountConsole(r) }

// MountConsole serves the console at /console/ (GET /console redirects there) on r. It is not at "/", where
// llama-server serves its web UI, because bankml's "/" is Ollama's root ("Ollama is running"), which Ollama
// clients probe to find a server. Like llama-server's web UI files, the console's files need no API key
// (RequireAPIKey); the API calls it makes do. They need no model either: the store server (package
// storeserve) serves them itself, as llama-server's router serves its web UI, and the page, finding a
// router at GET /props (role "router"), lets the user pick a model and names it in each call.
func MountConsole(r chi.Router) {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil { // the embedded folder exists at build time
		panic(err)
	}
	files := http.StripPrefix("/console/", http.FileServerFS(sub))
	r.Get("/console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
	})
	r.Get("/console/*", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", consoleCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
