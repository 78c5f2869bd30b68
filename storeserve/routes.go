package storeserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/catalog"
	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/store"
)

// routes builds the router on a model Server's route table (serve.Routes): each of its routes is forwarded
// to the Server of the model the request names, the store's own routes replace those of the same method and
// path, and a request no route takes gets the table's answer (llama-server's 404 File Not Found, under /api/
// Ollama's 404 or 405 with Allow) before any model is named or loaded. Before all of it come the model
// server's own guards (serve.Guards, under Serve.CORSOrigins and Serve.APIKey), in its order: a loopback
// request naming another Host (DNS rebinding) is a 403, a page of an origin not allowed is a 403 before
// anything runs, an OPTIONS preflight is answered at once (200) as llama-server answers it, and the API key
// is checked before routing as llama-server's router mode checks it: without the key only the public paths
// answer, every other request is a 401. The error names a malformed origin.
func (r *Router) routes() error {
	mux := serve.Routes()
	type route struct{ method, pattern string }
	var model []route
	_ = chi.Walk(mux, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		model = append(model, route{method, pattern})
		return nil
	})
	for _, rt := range model {
		mux.MethodFunc(rt.method, rt.pattern, r.forward)
	}
	health := func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) }
	root := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "Ollama is running")
	}
	version := func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]string{"version": serveOllamaVersion})
	}
	mux.Get("/metrics", r.metrics.Handler().ServeHTTP) // every model's, under a model label
	// The history, its transparency log and the operator key are every model's (Options.Serve.Ledger, TLog,
	// Signer): their /bankml/ledger routes are answered once, here, as a model's Server answers them.
	serve.MountLedger(mux, r.o.Serve)
	// The console's static files need no model (llama-server's router serves its web UI itself); the page
	// finds the router at GET /props and names the model the user picks in each of its calls.
	serve.MountConsole(mux)
	mux.Get("/health", health)
	mux.Get("/v1/health", health)
	mux.Get("/", root)
	mux.Head("/", root)
	mux.Get("/api/version", version)
	mux.Head("/api/version", version)
	// llama-server's router endpoints
	mux.Get("/props", r.handleProps)
	mux.Get("/models", r.handleModels)
	mux.Get("/v1/models", r.handleModels)
	mux.Post("/models/load", r.handleLoad)
	mux.Post("/models/unload", r.handleUnload)
	// Ollama's store routes (HEAD where Ollama registers one)
	mux.Get("/api/tags", r.handleTags)
	mux.Head("/api/tags", r.handleTags)
	mux.Get("/api/ps", r.handlePs)
	mux.Post("/api/show", r.handleShow)
	mux.Post("/api/pull", r.handlePull)
	mux.Post("/api/create", r.handleCreate)
	mux.Post("/api/copy", r.handleCopy)
	mux.Delete("/api/delete", r.handleDelete)
	guards, err := serve.Guards(serve.GuardOptions{CORSOrigins: r.o.Serve.CORSOrigins, APIKey: r.o.Serve.APIKey, Log: r.log,
		Refused: r.metrics.RefusedFor})
	if err != nil {
		return err
	}
	r.handler = serve.LogRequests(r.log)(guards(mux)) // one log line per request, the forwarded ones included
	return nil
}

// serveOllamaVersion is the Ollama API version bankml answers in (package serve's).
const serveOllamaVersion = "0.17.4"

func decode(w http.ResponseWriter, req *http.Request, ollama bool, v any) bool {
	b, bodyErr := serve.ReadBody(w, req, maxBody)
	if bodyErr != nil {
		writeErr(w, ollama, bodyErr.HTTPStatus(), bodyErr.Message)
		return false
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		writeErr(w, ollama, http.StatusBadRequest, "missing request body")
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeErr(w, ollama, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

// list is the store's models that read; each one that does not is logged as a warning and left out, as
// Ollama's /api/tags leaves out a bad manifest. The details of files no listed model names are forgotten
// (keepDetails).
func (r *Router) list() ([]*store.Manifest, error) {
	all, err := r.o.Store.List()
	var ue *store.UnreadableError
	if errors.As(err, &ue) {
		for _, m := range ue.Manifests {
			r.log.Warn("bad manifest", "model", m.Ref, "error", m.Err)
		}
		err = nil
	}
	if err == nil {
		r.keepDetails(all)
	}
	return all, err
}

// keepDetails forgets the cached details (detailsOf) of every file no model of live names: a model removed
// (DELETE /api/delete, bankml rm) or whose name now names another file (a pull, create or copy over it), so
// that the cache holds the store's files only. A file forgotten by a listing older than its pull is read
// again when asked for.
func (r *Router) keepDetails(live []*store.Manifest) {
	named := make(map[string]bool, len(live))
	for _, m := range live {
		named[m.Model.SHA256] = true
	}
	r.detailsOf.Range(func(k, _ any) bool {
		if !named[k.(string)] {
			r.detailsOf.Delete(k)
		}
		return true
	})
}

// storeChanged follows a change of the store's models (made by a route, or found by stale): the details of
// files no model names any more are forgotten. A listing that fails forgets nothing.
func (r *Router) storeChanged() {
	all, err := r.o.Store.List()
	var ue *store.UnreadableError
	if err == nil || errors.As(err, &ue) {
		r.keepDetails(all)
	}
}

// handleModels is llama-server's router GET /models: every model of the store with its status.
func (r *Router) handleModels(w http.ResponseWriter, _ *http.Request) {
	all, err := r.list()
	if err != nil {
		writeErr(w, false, 500, r.scrub(err.Error()))
		return
	}
	r.mu.Lock()
	type status struct {
		Value string `json:"value"`
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
		Created int64  `json:"created"`
		Status  status `json:"status"`
		SHA256  string `json:"sha256"`
		Size    int64  `json:"size"`
	}
	data := []model{}
	for _, m := range all {
		st := "unloaded"
		if _, ok := r.loaded[key(m.Ref())]; ok {
			st = "loaded"
		} else if _, ok := r.loads[key(m.Ref())]; ok {
			st = "loading"
		}
		data = append(data, model{ID: m.Ref(), Object: "model", OwnedBy: "bankml", Created: m.Modified.Unix(), Status: status{st}, SHA256: m.Model.SHA256, Size: m.Model.Size})
	}
	r.mu.Unlock()
	writeJSON(w, 200, map[string]any{"object": "list", "data": data})
}

// handleLoad is POST /models/load {"model": NAME}: loads it (kept per the server's keep_alive).
func (r *Router) handleLoad(w http.ResponseWriter, req *http.Request) {
	var body struct {
		Model string `json:"model"`
	}
	if !decode(w, req, false, &body) {
		return
	}
	l, err := r.acquire(req.Context(), body.Model)
	if err != nil {
		st, msg := r.statusOf(err, req.URL.Path, body.Model)
		writeErr(w, false, st, msg)
		return
	}
	r.release(l, nil)
	writeJSON(w, 200, map[string]any{"success": true, "model": l.ref})
}

// handleUnload is POST /models/unload {"model": NAME}.
func (r *Router) handleUnload(w http.ResponseWriter, req *http.Request) {
	var body struct {
		Model string `json:"model"`
	}
	if !decode(w, req, false, &body) {
		return
	}
	was, err := r.Unload(body.Model)
	switch {
	case err != nil:
		writeErr(w, false, 400, err.Error())
	case !was:
		writeErr(w, false, 400, fmt.Sprintf("model '%s' is not loaded", body.Model))
	default:
		writeJSON(w, 200, map[string]any{"success": true})
	}
}

// details is Ollama's details of m (serve.Details), from its file's header, kept by sha256 (a file's details
// never change) while a model of the store names the file (keepDetails). A file that does not open as GGUF gets
// the format alone, and a warning in the log: /api/tags lists the model all the same, as Ollama lists a model
// from its manifest alone.
func (r *Router) details(m *store.Manifest) api.ModelDetails {
	if d, ok := r.detailsOf.Load(m.Model.SHA256); ok {
		return d.(api.ModelDetails)
	}
	f, err := gguf.Open(r.o.Store.BlobPath(m.Model.SHA256))
	if err != nil {
		r.log.Warn("model file does not read: its details are left out", "model", m.Ref(), "err", err)
		d := serve.Details(nil)
		d.QuantizationLevel = ""
		return d
	}
	defer f.Close()
	d := serve.Details(f)
	r.detailsOf.Store(m.Model.SHA256, d)
	return d
}

// handleTags is Ollama's GET /api/tags: the store's models.
func (r *Router) handleTags(w http.ResponseWriter, _ *http.Request) {
	all, err := r.list()
	if err != nil {
		writeErr(w, true, 500, r.scrub(err.Error()))
		return
	}
	out := api.ListResponse{Models: []api.ListModelResponse{}}
	for _, m := range all {
		out.Models = append(out.Models, api.ListModelResponse{Name: m.Ref(), Model: m.Ref(), ModifiedAt: m.Modified,
			Size: m.Model.Size, Digest: m.Model.SHA256, Details: r.details(m)})
	}
	writeJSON(w, 200, out)
}

// handlePs is Ollama's GET /api/ps: the models loaded now, with when each unloads (a keep_alive of -1: the
// far future, as Ollama reports it).
func (r *Router) handlePs(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	out := api.ProcessResponse{Models: []api.ProcessModelResponse{}}
	for _, l := range r.loaded {
		exp := l.used.Add(l.keep)
		if l.keep < 0 {
			exp = l.at.Add(math.MaxInt64)
		}
		out.Models = append(out.Models, api.ProcessModelResponse{Name: l.ref, Model: l.ref, Size: l.size,
			Digest: l.m.SHA256, Details: serve.Details(l.m.File),
			ExpiresAt: exp, ContextLength: l.srv.ContextLength()})
	}
	r.mu.Unlock()
	writeJSON(w, 200, out)
}

// lookup is the manifest of the model a store route's request names (name, as the request names it), looked up
// as a request for that model to answer is (acquire): a name that is no model name is a 400, then the
// manifest's answer (Router.manifest: 404 for a model the store lacks, 500 for a manifest that does not read).
// ok is false when it has answered w.
func (r *Router) lookup(w http.ResponseWriter, req *http.Request, name string) (m *store.Manifest, ok bool) {
	ref, err := r.ref(name)
	if err != nil {
		writeErr(w, true, http.StatusBadRequest, err.Error())
		return nil, false
	}
	if m, err = r.manifest(ref); err != nil {
		st, msg := r.statusOf(err, req.URL.Path, name)
		writeErr(w, true, st, msg)
		return nil, false
	}
	return m, true
}

// handleShow is Ollama's POST /api/show: the model's file as the single-model server shows it (serve.ShowFacts:
// details, model_info, tensors, the chat template, capabilities), read from its header without loading it,
// and the manifest's settings: license, parameters (Ollama's lines: the name padded to 30, the value as Go
// writes it, a list one line per value), system (the request's, if it gives one, as Ollama's), messages and
// the modelfile `bankml show --modelfile` prints (store.Modelfile), its FROM scrubbed of the store's folder as
// every answer of this server is ("<store>/blobs/sha256-HEX").
func (r *Router) handleShow(w http.ResponseWriter, req *http.Request) {
	var body api.ShowRequest
	if !decode(w, req, true, &body) {
		return
	}
	if body.Model == "" {
		body.Model = body.Name //lint:ignore SA1019 older Ollama clients send "name"; Ollama takes it too
	}
	m, ok := r.lookup(w, req, body.Model)
	if !ok {
		return
	}
	resp, err := r.showFacts(m, body.Verbose)
	if err != nil {
		st, msg := r.statusOf(err, req.URL.Path, body.Model)
		writeErr(w, true, st, msg)
		return
	}
	resp.License = strings.Join(m.License, "\n")
	resp.Modelfile = r.scrub(r.o.Store.Modelfile(m))
	resp.Parameters = parameterLines(m.Parameters)
	resp.System = m.System
	if body.System != "" {
		resp.System = body.System
	}
	for _, msg := range m.Messages {
		resp.Messages = append(resp.Messages, api.Message{Role: msg.Role, Content: msg.Content})
	}
	resp.ModifiedAt = m.Modified
	writeJSON(w, 200, resp)
}

// showFacts are serve.ShowFacts of m's file, its header and chat template read without loading the weights. A
// file that is gone is a *notFoundError, one cut short or damaged a 500 (checkBlob). A chat template that
// does not parse leaves the capabilities at completion, with a warning in the log (loading the model refuses
// it, naming the fault).
func (r *Router) showFacts(m *store.Manifest, verbose bool) (api.ShowResponse, error) {
	if err := r.checkBlob(m, "read"); err != nil {
		return api.ShowResponse{}, err
	}
	f, err := gguf.Open(r.o.Store.BlobPath(m.Model.SHA256))
	if err != nil {
		if cerr := r.checkBlob(m, "read"); cerr != nil { // gone or damaged since checked
			return api.ShowResponse{}, cerr
		}
		r.log.Error("model file does not open", "model", m.Ref(), "err", err)
		return api.ShowResponse{}, &httpError{http.StatusInternalServerError, fmt.Sprintf("model '%s' cannot be read: %s", m.Ref(), r.scrubModel(err.Error(), r.o.Store.BlobPath(m.Model.SHA256), m))}
	}
	defer f.Close()
	t, err := chat.FromGGUF(f)
	if err != nil {
		r.log.Warn("model's chat template does not parse: its capabilities are left at completion", "model", m.Ref(), "err", err)
		t = nil
	}
	return serve.ShowFacts(f, t, verbose), nil
}

// parameterLines are a manifest's parameters as Ollama's /api/show lists them: one line per value (a list
// such as stop one line per element), the name padded to 30 and the value as Go writes it (%#v: a string
// quoted), sorted by name.
func parameterLines(params map[string]any) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lines []string
	for _, k := range keys {
		switch v := params[k].(type) {
		case []string:
			for _, e := range v {
				lines = append(lines, fmt.Sprintf("%-30s %#v", k, e))
			}
		default:
			lines = append(lines, fmt.Sprintf("%-30s %#v", k, v))
		}
	}
	return strings.Join(lines, "\n")
}

// progressLines streams Ollama's pull progress as NDJSON lines (api.ProgressResponse), flushed as written.
type progressLines struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	stream bool
}

func (p *progressLines) send(v api.ProgressResponse) {
	if !p.stream {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b, _ := json.Marshal(v)
	p.w.Write(append(b, '\n'))
	if f, ok := p.w.(http.Flusher); ok {
		f.Flush()
	}
}

// counter turns written bytes into progress lines, at most every 100 ms.
type counter struct {
	p           *progressLines
	digest      string
	total, done int64
	last        time.Time
}

func (c *counter) Write(b []byte) (int, error) {
	c.done += int64(len(b))
	if time.Since(c.last) > 100*time.Millisecond || c.done == c.total {
		c.last = time.Now()
		c.p.send(api.ProgressResponse{Status: "pulling " + c.digest[:12], Digest: "sha256:" + c.digest, Total: c.total, Completed: c.done})
	}
	return len(b), nil
}

// handlePull is Ollama's POST /api/pull: the catalog model pulled into the store, its progress streamed
// as Ollama streams it ("pulling manifest", "pulling <digest>" with total and completed, "verifying sha256
// digest", "writing manifest", "success"), or one {"status": "success"} with "stream": false.
func (r *Router) handlePull(w http.ResponseWriter, req *http.Request) {
	var body api.PullRequest
	if !decode(w, req, true, &body) {
		return
	}
	if body.Model == "" {
		body.Model = body.Name //lint:ignore SA1019 older Ollama clients send "name"; Ollama takes it too
	}
	if err := clientModelName("model", body.Model); err != nil {
		writeErr(w, true, http.StatusBadRequest, err.Error())
		return
	}
	stream := body.Stream == nil || *body.Stream
	p := &progressLines{w: w, stream: stream}
	if stream {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(200)
	}
	p.send(api.ProgressResponse{Status: "pulling manifest"})
	o := r.o.Pull
	o.Fetch.Progress = func(total, done int64) io.Writer {
		c := &counter{p: p, total: total, done: done}
		if e, err := catalogDigest(body.Model); err == nil {
			c.digest = e
		} else {
			c.digest = strings.Repeat("0", 64)
		}
		return c
	}
	m, err := r.o.Store.Pull(req.Context(), body.Model, o)
	if err != nil {
		if stream {
			b, _ := json.Marshal(map[string]string{"error": r.scrub(err.Error())})
			w.Write(append(b, '\n'))
			return
		}
		writeErr(w, true, 500, r.scrub(err.Error()))
		return
	}
	r.storeChanged()
	p.send(api.ProgressResponse{Status: "verifying sha256 digest"})
	p.send(api.ProgressResponse{Status: "writing manifest"})
	if stream {
		p.send(api.ProgressResponse{Status: "success"})
		return
	}
	_ = m
	writeJSON(w, 200, api.ProgressResponse{Status: "success"})
}

// handleCreate is Ollama's POST /api/create: "from", "system", "parameters", "messages" and "license" make
// a Modelfile for store.Create; "template", "adapters", "files" (uploaded blobs) and "quantize" are refused
// with the reason.
func (r *Router) handleCreate(w http.ResponseWriter, req *http.Request) {
	var body api.CreateRequest
	if !decode(w, req, true, &body) {
		return
	}
	switch {
	case body.Model == "":
		writeErr(w, true, 400, "model is required")
		return
	case body.From == "":
		writeErr(w, true, 400, "from is required: name a model in the store or the catalog (uploaded files are not supported)")
		return
	case len(body.Files) > 0 || len(body.Adapters) > 0:
		writeErr(w, true, 400, "files and adapters are not supported: bankml creates a model from one in its store or catalog")
		return
	case body.Quantize != "":
		writeErr(w, true, 400, "quantize is not supported here: use bankml quantize")
		return
	}
	if err := clientModelName("from", body.From); err != nil {
		writeErr(w, true, http.StatusBadRequest, err.Error())
		return
	}
	var mf strings.Builder
	fmt.Fprintf(&mf, "FROM %s\n", body.From)
	if body.Template != "" {
		fmt.Fprintf(&mf, "TEMPLATE %q\n", body.Template)
	}
	if body.System != "" {
		fmt.Fprintf(&mf, "SYSTEM %q\n", body.System)
	}
	for k, v := range body.Parameters {
		vs, ok := v.([]any)
		if !ok {
			vs = []any{v}
		}
		for _, e := range vs {
			fmt.Fprintf(&mf, "PARAMETER %s %q\n", k, fmt.Sprint(e))
		}
	}
	for _, m := range body.Messages {
		fmt.Fprintf(&mf, "MESSAGE %s %q\n", m.Role, m.Content)
	}
	lic, _ := body.License.([]any)
	if s, ok := body.License.(string); ok {
		lic = []any{s}
	}
	for _, l := range lic {
		fmt.Fprintf(&mf, "LICENSE %q\n", fmt.Sprint(l))
	}
	stream := body.Stream == nil || *body.Stream
	p := &progressLines{w: w, stream: stream}
	_, err := r.o.Store.Create(req.Context(), body.Model, strings.NewReader(mf.String()), store.CreateOptions{Pull: r.o.Pull,
		CheckParameters: func(params map[string]any) error { _, err := checkParameters(params); return err }})
	if err != nil {
		writeErr(w, true, 400, r.scrub(err.Error()))
		return
	}
	r.storeChanged()
	if stream {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(200)
		p.send(api.ProgressResponse{Status: "writing manifest"})
		p.send(api.ProgressResponse{Status: "success"})
		return
	}
	writeJSON(w, 200, api.ProgressResponse{Status: "success"})
}

// handleCopy is Ollama's POST /api/copy.
func (r *Router) handleCopy(w http.ResponseWriter, req *http.Request) {
	var body api.CopyRequest
	if !decode(w, req, true, &body) {
		return
	}
	if _, ok := r.lookup(w, req, body.Source); !ok {
		return
	}
	if _, err := r.o.Store.Copy(body.Source, body.Destination); err != nil {
		writeErr(w, true, 400, r.scrub(err.Error()))
		return
	}
	r.storeChanged()
	w.WriteHeader(200)
}

// handleDelete is Ollama's DELETE /api/delete: the model is unloaded and its manifest removed.
func (r *Router) handleDelete(w http.ResponseWriter, req *http.Request) {
	var body api.DeleteRequest
	if !decode(w, req, true, &body) {
		return
	}
	if body.Model == "" {
		body.Model = body.Name //lint:ignore SA1019 older Ollama clients send "name"; Ollama takes it too
	}
	// A manifest that does not read is removed all the same (store.Remove mends it, as `bankml rm` does); a name
	// that is no model name is the 400 the other routes give it, one the store lacks Ollama's 404.
	ref, err := r.ref(body.Model)
	if err != nil {
		writeErr(w, true, http.StatusBadRequest, err.Error())
		return
	}
	if _, err := r.manifest(ref); err != nil {
		var nf *notFoundError
		if errors.As(err, &nf) {
			writeErr(w, true, http.StatusNotFound, notFoundMessage(req.URL.Path, body.Model))
			return
		}
	}
	if _, err := r.Unload(body.Model); err != nil {
		writeErr(w, true, 400, err.Error())
		return
	}
	if err := r.o.Store.Remove(body.Model); err != nil {
		writeErr(w, true, 500, r.scrub(err.Error()))
		return
	}
	r.storeChanged()
	w.WriteHeader(200)
}

// catalogDigest is the sha256 the catalog records for a model name (the one layer Ollama's progress names).
func catalogDigest(name string) (string, error) {
	e, err := catalog.Lookup(name)
	if err != nil {
		return "", err
	}
	return e.SHA256, nil
}

// checkParameters checks PARAMETERs as bankml serve checks a request's Ollama options.
var checkParameters = serve.CheckModelfileParameters

// handleProps is llama-server's router GET /props (server-models.cpp get_router_props): a request with
// ?model=NAME (or a body, read as forward reads it) is that model's /props; without either, the router's own properties —
// role "router", max_instances (--max-models, 0: no limit), models_autoload (a request loads its model) — and
// the placeholders llama-server gives there so that its web UI does not break (model_path "none", empty
// default_generation_settings).
func (r *Router) handleProps(w http.ResponseWriter, req *http.Request) {
	body, err := serve.ReadBody(w, req, maxBody)
	if err != nil {
		writeErr(w, false, err.HTTPStatus(), err.Message)
		return
	}
	if req.URL.Query().Get("model") != "" || len(bytes.TrimSpace(body)) > 0 { // forward reads and checks both
		req.Body = io.NopCloser(bytes.NewReader(body))
		r.forward(w, req)
		return
	}
	writeJSON(w, 200, map[string]any{
		"role":                        "router",
		"max_instances":               r.o.MaxModels,
		"models_autoload":             true,
		"model_alias":                 "bankml",
		"model_path":                  "none",
		"default_generation_settings": map[string]any{"params": map[string]any{}, "n_ctx": 0},
		"build_info":                  r.o.Serve.Version,
	})
}
