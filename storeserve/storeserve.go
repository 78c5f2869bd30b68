// Package storeserve serves every model of the store from one HTTP server (`bankml serve` without a model):
// a request names its model, which is loaded on demand through the full admission, kept per keep_alive,
// and evicted least-recently-used under a model count and a memory budget.
//
// # Design record
//
// What. A Router holds one serve.Server per loaded model (own engine, slots, metrics, receipts) and forwards
// each request, body unchanged, to the server of the model its JSON "model" (Ollama's "name") names, or a GET's
// ?model=NAME (llama-server's router's query parameter), compared case-insensitively. A model not loaded is looked up in the store and never pulled (Ollama's 404; only POST
// /api/pull, /api/create FROM and bankml pull download), its header checked against -ctk/-ctv (a 400 before
// any eviction or hash), admitted as bankml serve admits one and kept for keep_alive after its last request
// (default 5 minutes; 0: unloaded once idle; negative: kept). Loads run outside the router's lock and are
// shared by concurrent requests for one model. Idle models are evicted least recently used first until
// MaxModels and MaxMemory (bytes of each model's file and its slots' full KV caches) allow a load; with only busy ones left the load waits
// (its request's context bounding it) while the least recently used busy model drains: it takes no new
// requests, and is evicted once its last one ends. The router answers the store's routes itself (routes.go:
// Ollama's /api/tags, show, ps, pull, create, copy, delete; llama-server's /models, /models/load,
// /models/unload; /health; /metrics under a model label; /bankml/ledger's routes of the history, log and key
// every model shares (Options.Serve.Ledger, TLog, Signer; serve.MountLedger); the console's files, its page
// picking a model), a model's facts from its file's header (serve.ShowFacts), no model loaded. Ollama's embedding routes need no
// --embeddings, as Ollama's (serve.Options.OllamaEmbeddings). A request no model server would take gets a model server's answer before any load; serve.Guards and
// serve.LogRequests stand in front. Before each request a loaded model's manifest is read again: one the
// store no longer names (rm, a pull or cp over it, its file gone) is dropped, unloaded when idle, and the
// request resolved afresh. Error bodies name models, never server paths (scrub).
//
// Follows. Ollama's scheduler (server/sched.go: keep_alive, OLLAMA_MAX_LOADED_MODELS, least-recently-used
// eviction of idle runners, "unload" on keep_alive 0) and its store API (server/routes.go); llama-server's
// router mode (tools/server: GET /models with each model's status, POST /models/load and /models/unload).
//
// Deliberate differences. Memory is budgeted from the header (file size plus the slots' full KV caches at
// -ctk/-ctv: model.Hparams.KVCacheBytes), not measured. Ollama's /api/pull digests name its layers; bankml's
// one layer is the GGUF file, named by its sha256.
//
// Determinism. A model's answers are its serve.Server's (package serve's contract); loading and eviction
// change when a request waits, never what it is answered.
package storeserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/catalog"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/store"
)

// DefaultKeepAlive is how long a model stays loaded after its last request when neither the request nor
// Options says (Ollama's default).
const DefaultKeepAlive = 5 * time.Minute

// maxBody bounds the request bodies the router reads to find the model (serve's own limit).
const maxBody = serve.DefaultMaxBodyBytes

// Options configure a Router.
type Options struct {
	Store *store.Store
	// Pull is how POST /api/pull, and /api/create's FROM naming a catalog model the store lacks, pull a model.
	// A request naming a model the store lacks never pulls it.
	Pull store.PullOptions
	// Serve configures each model's server (NCtx, Threads, Parallel, ...); Alias is set to the model's
	// NAME:TAG. Its Ledger, TLog and Signer (the history, its transparency log, the operator key) are
	// shared by every model loaded: each answer is appended to the one history and its receipt names its
	// model by model_sha256; the router serves their /bankml/ledger routes once (serve.MountLedger). The
	// caller owns them: it closes them after Close.
	Serve     serve.Options
	KeepAlive time.Duration // 0: DefaultKeepAlive; negative: forever
	// NoKeepAlive unloads a model as soon as it is idle (bankml serve --keep-alive 0), KeepAlive aside.
	NoKeepAlive bool
	MaxModels   int   // models loaded at once; 0: no limit (negative: New refuses it)
	MaxMemory   int64 // bytes of loaded models at once, each its file plus its slots' full KV caches; 0: no limit (negative: New refuses it)
	// Admit admits a model file against its pin; nil: admit.Open with the manifest's sha256 and
	// Serve.CacheTypes (the full admission: guard, architecture, cache types, pin, load). Before it, the
	// router refuses cache types the file's heads do not fit (a 400), from the header.
	Admit func(path, sha256 string) (*admit.Model, error)
	Log   *slog.Logger
}

// Router serves the store's models.
type Router struct {
	o       Options
	log     *slog.Logger
	mu      sync.Mutex
	loaded  map[string]*loaded   // key: lower-case NAME:TAG
	loads   map[string]*loadCall // loads under way
	metrics *serve.Metrics       // GET /metrics: every model's series under a model label (Options.Serve.Metrics)
	closed  bool
	// changed is closed (and replaced) whenever room may have appeared: a request ended, a model left
	// r.loaded, a load ended. makeRoom and the requests of a draining model wait on it.
	changed chan struct{}
	handler http.Handler // the routes behind the Host check, the origin policy and the API key (routes)
	// detailsOf are the Ollama details of the store's files (sha256 → api.ModelDetails), read from each
	// file's header once (details); a file no model names any more is forgotten (keepDetails).
	detailsOf sync.Map
}

type loaded struct {
	ref      string // NAME:TAG as the manifest has it
	sha256   string // the file the manifest named when it was loaded
	m        *admit.Model
	srv      *serve.Server
	size     int64
	at       time.Time // loaded at
	used     time.Time // last request finished (or began)
	keep     time.Duration
	inflight int
	timer    *time.Timer
	gone     bool // dropped from r.loaded because the store changed under it (drop); unloaded when idle
	// draining: a load waits for room held by this busy model, which takes no new request and is evicted
	// once idle (Ollama's scheduler expires such a runner the same way).
	draining bool
}

type loadCall struct {
	done chan struct{}
	l    *loaded
	err  error
	// room is the bytes this load holds room for once makeRoom granted it (0 before): only such loads count
	// against the limits, so that loads still waiting for room never wait on one another.
	room int64
}

// New builds a Router over a store.
func New(o Options) (*Router, error) {
	if o.Store == nil {
		return nil, errors.New("storeserve: no store")
	}
	switch {
	case o.NoKeepAlive:
		o.KeepAlive = 0
	case o.KeepAlive == 0:
		o.KeepAlive = DefaultKeepAlive
	}
	if o.MaxModels < 0 {
		return nil, fmt.Errorf("storeserve: max models %d: give 0 (no limit) or a count of models", o.MaxModels)
	}
	if o.MaxMemory < 0 {
		return nil, fmt.Errorf("storeserve: max memory %d: give 0 (no limit) or a number of bytes", o.MaxMemory)
	}
	if o.Admit == nil {
		kv := o.Serve.CacheTypes
		o.Admit = func(path, sha string) (*admit.Model, error) {
			return admit.Open(path, admit.Options{Manifest: sha, Pin: admit.RequirePin, Chat: true, CacheTypes: &kv})
		}
	}
	if o.Serve.Metrics == nil {
		o.Serve.Metrics = serve.NewMetrics()
	}
	// Ollama's /api/embed and /api/embeddings take any model without a flag; llama-server's and OpenAI's
	// embedding routes keep --embeddings' gate (Serve.Embeddings), as llama-server's router passes its
	// flags to every model's server.
	o.Serve.OllamaEmbeddings = true
	r := &Router{o: o, log: o.Log, loaded: map[string]*loaded{}, loads: map[string]*loadCall{}, metrics: o.Serve.Metrics, changed: make(chan struct{})}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := r.routes(); err != nil {
		return nil, fmt.Errorf("storeserve: %w", err)
	}
	keep, models, memory := r.limits()
	r.log.Info("serving the store", "store", o.Store.Root, "keep_alive", keep, "max_models", models, "max_memory", memory)
	return r, nil
}

// Limits says the router's effective keep-alive and limits in words, for the server's banner: "keep-alive
// 5m0s, max models no limit, max memory no limit" (0 is no limit, not Ollama's automatic count of 3 per GPU).
func (r *Router) Limits() string {
	keep, models, memory := r.limits()
	return "keep-alive " + keep + ", max models " + models + ", max memory " + memory
}

func (r *Router) limits() (keep, models, memory string) {
	switch {
	case r.o.KeepAlive < 0:
		keep = "forever"
	case r.o.KeepAlive == 0:
		keep = "0s (unloaded once idle)"
	default:
		keep = r.o.KeepAlive.String()
	}
	models, memory = "no limit", "no limit"
	if r.o.MaxModels > 0 {
		models = fmt.Sprint(r.o.MaxModels)
	}
	if r.o.MaxMemory > 0 {
		memory = fmt.Sprintf("%d bytes", r.o.MaxMemory)
	}
	return keep, models, memory
}

// Handler is the router's HTTP handler.
func (r *Router) Handler() http.Handler { return r.handler }

// Close unloads every model. It does not close Options.Serve's Ledger or TLog, which the caller closes
// after it.
func (r *Router) Close() error {
	r.mu.Lock()
	r.closed = true
	all := make([]*loaded, 0, len(r.loaded))
	for k, l := range r.loaded {
		all = append(all, l)
		delete(r.loaded, k)
	}
	r.changedLocked()
	r.mu.Unlock()
	for _, l := range all {
		unload(l)
	}
	return nil
}

func unload(l *loaded) {
	if l.timer != nil {
		l.timer.Stop()
	}
	l.srv.Close()
	l.m.Close()
}

func key(ref string) string { return strings.ToLower(ref) }

// ref resolves a request's model name to the store's NAME:TAG.
func (r *Router) ref(name string) (string, error) {
	n, t, err := catalog.ParseRef(name)
	if err != nil {
		return "", err
	}
	return n + ":" + t, nil
}

// acquire returns the loaded model for name (loading it if needed) with one more request in flight;
// release must follow.
func (r *Router) acquire(ctx context.Context, name string) (*loaded, error) {
	ref, err := r.ref(name)
	if err != nil {
		return nil, &httpError{http.StatusBadRequest, err.Error()}
	}
	k := key(ref)
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, &httpError{http.StatusServiceUnavailable, "the server is shutting down"}
		}
		if l, ok := r.loaded[k]; ok {
			r.mu.Unlock()
			// The store may have changed under the loaded model (bankml rm, a pull or cp over its name, its
			// file deleted): such a model is dropped, and the request resolved afresh (a 404 once removed).
			if why := r.stale(l); why != "" {
				r.drop(l, why)
				continue
			}
			r.mu.Lock()
			if cur, ok := r.loaded[k]; !ok || cur != l {
				r.mu.Unlock()
				continue
			}
			if l.draining {
				// A load waits for this model's room: queue behind it (the model is evicted once idle, and
				// loaded again for this request when there is room).
				if err := r.waitLocked(ctx); err != nil {
					return nil, err
				}
				continue
			}
			l.inflight++
			l.used = time.Now()
			if l.timer != nil {
				l.timer.Stop()
				l.timer = nil
			}
			r.mu.Unlock()
			return l, nil
		}
		c, ok := r.loads[k]
		if !ok {
			c = &loadCall{done: make(chan struct{})}
			r.loads[k] = c
			r.mu.Unlock()
			c.l, c.err = r.load(ctx, ref)
			r.mu.Lock()
			delete(r.loads, k)
			if c.err == nil {
				// The loading request holds the model from the start, so that no other load evicts it
				// before its first request.
				r.loaded[k] = c.l
				c.l.inflight++
			}
			close(c.done)
			r.changedLocked()
			r.mu.Unlock()
			if c.err == nil {
				return c.l, nil
			}
		} else {
			r.mu.Unlock()
			select {
			case <-c.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if c.err != nil {
			if isContextError(c.err) && ctx.Err() == nil {
				continue // the request that was loading it went away: this one loads it
			}
			return nil, c.err
		}
		// loop: take the loaded model under the lock (it may have been evicted meanwhile)
	}
}

// release ends a request on l; keep is the request's keep_alive (nil: the model's). A model dropped from
// the store while the request held it is unloaded once its last request ends.
func (r *Router) release(l *loaded, keep *time.Duration) {
	r.mu.Lock()
	l.inflight--
	l.used = time.Now()
	if l.inflight == 0 {
		r.changedLocked()
	}
	if l.gone {
		last := l.inflight == 0
		r.mu.Unlock()
		if last {
			r.log.Info("unloading model", "model", l.ref, "reason", "removed from the store; its last request ended")
			unload(l)
		}
		return
	}
	if keep != nil {
		l.keep = *keep
	}
	r.schedule(l)
	r.mu.Unlock()
}

// stale says why a loaded model may no longer answer under its name ("" while it may): its manifest is
// gone (bankml rm, DELETE /api/delete elsewhere) or does not read, names another file (a pull or a cp over
// the name), or its file is gone.
func (r *Router) stale(l *loaded) string {
	man, err := r.o.Store.Get(l.ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "removed from the store"
	case err != nil:
		return "its manifest no longer reads"
	case man.Model.SHA256 != l.sha256:
		return "its name now names another file (sha256 " + man.Model.SHA256 + ")"
	}
	if _, err := os.Stat(r.o.Store.BlobPath(l.sha256)); err != nil {
		return "its model file is gone"
	}
	return ""
}

// drop takes l out of the loaded models because the store changed under it (stale's why): unloaded now when
// idle, else when its last request ends (release).
func (r *Router) drop(l *loaded, why string) {
	r.mu.Lock()
	if cur, ok := r.loaded[key(l.ref)]; !ok || cur != l {
		r.mu.Unlock()
		return
	}
	delete(r.loaded, key(l.ref))
	r.changedLocked()
	l.gone = true
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	idle := l.inflight == 0
	r.mu.Unlock()
	r.storeChanged()
	r.log.Info("model dropped", "model", l.ref, "reason", why, "unloaded", idle)
	if idle {
		unload(l)
	}
}

// schedule arms l's expiry when it is idle (under r.mu).
func (r *Router) schedule(l *loaded) {
	if l.inflight > 0 || l.keep < 0 {
		return
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	l.timer = time.AfterFunc(l.keep, func() { r.expire(l) })
}

// expire unloads l if it is still loaded and idle.
func (r *Router) expire(l *loaded) {
	r.mu.Lock()
	k := key(l.ref)
	if cur, ok := r.loaded[k]; !ok || cur != l || l.inflight > 0 {
		r.mu.Unlock()
		return
	}
	delete(r.loaded, k)
	r.changedLocked()
	r.mu.Unlock()
	r.log.Info("unloading model", "model", l.ref, "reason", "keep_alive expired")
	unload(l)
}

// manifest is the store's manifest of ref (NAME:TAG, as ref returns it), looked up as every route looks a model
// up, so that one model gets one answer on every route (statusOf): a model the store lacks is a *notFoundError
// (Ollama's 404), a manifest that does not read a server-side error, an *httpError 500 naming the model and no
// path of the server (the log has the file), as Ollama's show answers a manifest it cannot parse.
func (r *Router) manifest(ref string) (*store.Manifest, error) {
	man, err := r.o.Store.Get(ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, &notFoundError{ref}
	case err != nil:
		r.log.Error("model manifest unreadable", "model", ref, "err", err)
		return nil, &httpError{http.StatusInternalServerError, fmt.Sprintf("model '%s': its manifest does not read: %s", ref, r.scrub(err.Error()))}
	}
	return man, nil
}

// load looks ref up in the store (never pulling it: a model the store lacks, or whose file is gone, is a
// *notFoundError), makes room and admits it. Its errors name no server path (scrub).
func (r *Router) load(ctx context.Context, ref string) (*loaded, error) {
	man, err := r.manifest(ref)
	if err != nil {
		return nil, err
	}
	blob := r.o.Store.BlobPath(man.Model.SHA256)
	if err := r.checkBlob(man, "loaded"); err != nil {
		return nil, err
	}
	// The server's -ctk/-ctv against the model's heads, from the file's header: refused before any model is
	// evicted for it and before its file is hashed.
	if err := checkCacheTypes(blob, r.o.Serve.CacheTypes); err != nil {
		k, v := cacheTypeNames(r.o.Serve.CacheTypes)
		r.log.Warn("model refused: the server's KV cache types do not fit it", "model", man.Ref(), "err", err)
		return nil, &httpError{http.StatusBadRequest, fmt.Sprintf("model '%s' cannot run with this server's KV cache types (-ctk %s -ctv %s): %s", man.Ref(), k, v, err)}
	}
	kv, kvWhat := r.kvBytes(blob)
	size := man.Model.Size
	if kv > 0 {
		size = satAdd(size, kv)
		kvWhat = fmt.Sprintf(" (its file's %d and %s)", man.Model.Size, kvWhat)
	}
	if err := r.makeRoom(ctx, key(ref), size, kvWhat); err != nil {
		return nil, err
	}
	r.log.Info("loading model", "model", man.Ref(), "sha256", man.Model.SHA256)
	m, err := r.o.Admit(blob, man.Model.SHA256)
	if err != nil {
		r.log.Error("model not admitted", "model", man.Ref(), "err", err)
		return nil, &httpError{http.StatusServiceUnavailable, fmt.Sprintf("model '%s' could not be admitted: %s", man.Ref(), r.scrubModel(err.Error(), blob, man))}
	}
	so := r.o.Serve
	so.Alias = []string{man.Ref()}
	so.ModelPath = r.scrub(blob)
	so.Defaults = Defaults(man)
	srv, err := serve.New(m, so)
	if err != nil {
		// The server's own settings (-c, -np, ...) do not fit this model: no retry will, so a 500
		// (Ollama's answer to a model that fails to load), not the 503 of a busy server.
		m.Close()
		r.log.Error("model cannot be served with this server's settings", "model", man.Ref(), "err", err)
		return nil, &httpError{http.StatusInternalServerError, fmt.Sprintf("model '%s' cannot be served with this server's settings: %s", man.Ref(), r.scrubModel(err.Error(), blob, man))}
	}
	now := time.Now()
	return &loaded{ref: man.Ref(), sha256: man.Model.SHA256, m: m, srv: srv, size: size, at: now, used: now, keep: r.o.KeepAlive}, nil
}

// kvBytes is the memory of the full KV caches of the slots this server gives the model file at path (the
// Serve options' -np slots of serve.SlotContext's tokens at -ctk/-ctv: model.Hparams.KVCacheBytes, the formula
// of the engine's own memory check), from its header alone, as Ollama's scheduler counts a model's KV cache
// for its context and parallel requests before it loads it; what says it in words for an error. 0 when the
// header does not read, names an architecture bankml does not run, or the settings leave a slot no context:
// admission or serve.New then refuses the model with the reason.
func (r *Router) kvBytes(path string) (n int64, what string) {
	f, err := gguf.Open(path)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	hp, err := model.FileHparams(f)
	if err != nil {
		return 0, ""
	}
	slots := max(r.o.Serve.Parallel, 1)
	nCtx, err := serve.SlotContext(r.o.Serve.NCtx, slots, hp.NCtxTrain)
	if err != nil {
		return 0, ""
	}
	kv := hp.KVCacheBytes(nCtx, slots, r.o.Serve.CacheTypes)
	k, v := cacheTypeNames(r.o.Serve.CacheTypes)
	what = fmt.Sprintf("the KV caches' %d: -np %d of %d tokens at -ctk %s -ctv %s", kv, slots, nCtx, k, v)
	if kv > math.MaxInt64 {
		return math.MaxInt64, what
	}
	return int64(kv), what
}

// satAdd is a+b for non-negative a and b, or math.MaxInt64 when that overflows.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// checkBlob checks man's model file in the store (store.CheckBlob) for a route that needs it: a file that is
// gone is a *notFoundError (Ollama answers a manifest whose blob is gone as a model not found: its getModel's
// fs.ErrNotExist), one cut short or damaged since it was pulled an *httpError 500 ("model 'x' cannot be
// <done>: ..."; no retry mends it: Ollama's answer to a model that fails to load, not the 503 of a busy
// server) saying what is wrong without the path (the log has it).
func (r *Router) checkBlob(man *store.Manifest, done string) error {
	blob := r.o.Store.BlobPath(man.Model.SHA256)
	if err := r.o.Store.CheckBlob(man); errors.Is(err, os.ErrNotExist) {
		r.log.Warn("model file missing: the model is answered as not found until it is pulled again", "model", man.Ref(), "path", blob, "err", err)
		return &notFoundError{man.Ref()}
	} else if err != nil {
		r.log.Error("model file damaged: pull the model again", "model", man.Ref(), "path", blob, "err", err)
		msg := strings.TrimPrefix(err.Error(), "store: "+man.Ref()+": ")
		return &httpError{http.StatusInternalServerError, fmt.Sprintf("model '%s' cannot be %s: %s", man.Ref(), done, r.scrub(strings.ReplaceAll(msg, " "+blob, "")))}
	}
	return nil
}

// checkCacheTypes is model.CheckFileCacheTypes on the file at path, from its header alone. A file that does
// not open as GGUF, or whose architecture bankml does not run, passes: admission refuses it with the reason.
func checkCacheTypes(path string, t model.CacheTypes) error {
	f, err := gguf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if model.CheckArchitecture(f) != nil {
		return nil
	}
	return model.CheckFileCacheTypes(f, t)
}

// cacheTypeNames are t's K and V types as -ctk and -ctv name them (the zero type is f16).
func cacheTypeNames(t model.CacheTypes) (k, v string) {
	name := func(x gguf.GGMLType) string {
		if x == 0 {
			return gguf.F16.String()
		}
		return x.String()
	}
	return name(t.K), name(t.V)
}

// notFoundError is a model the store does not hold, or whose file is gone: Ollama's 404 (notFoundMessage).
type notFoundError struct{ ref string }

func (e *notFoundError) Error() string { return fmt.Sprintf("model '%s' not found", e.ref) }

// notFoundMessage is Ollama's 404 text for a model it does not have, as the request named it: its embedding
// routes answer through handleScheduleError (`model "x" not found, try pulling it first`), its generate and
// chat handlers (and the OpenAI routes in front of them) with `model 'x' not found` (server/routes.go).
func notFoundMessage(path, name string) string {
	switch path {
	case "/api/embed", "/api/embeddings":
		return fmt.Sprintf("model %q not found, try pulling it first", name)
	}
	return fmt.Sprintf("model '%s' not found", name)
}

// scrub takes the store's folder out of a message a client gets: error bodies name models, never the
// server's paths (the log has them).
func (r *Router) scrub(msg string) string {
	if root := r.o.Store.Root; root != "" {
		msg = strings.ReplaceAll(msg, root, "<store>")
	}
	// A mirror folder (--from, $BANKML_MIRROR) is a server path too, named as store.Pull names it.
	if m := r.o.Pull.ResolvedMirror(); m != "" && !strings.HasPrefix(m, "http://") && !strings.HasPrefix(m, "https://") {
		msg = strings.ReplaceAll(msg, m, "<mirror>")
	}
	return msg
}

// clientModelName refuses what a client asked the server to pull (POST /api/pull, /api/create's "from")
// when it is no model name: a file on the server, a URL, an hf:// address or anything with a space or a line break. Those are the operator's to
// pull (bankml pull on the server); a client naming them would make the server read its own files or
// fetch addresses for it.
func clientModelName(field, what string) error {
	if !store.IsModelName(what) {
		return fmt.Errorf("%s %q is no model name: over HTTP this server pulls models by name only (a catalog name such as bonsai:1.7b), never a file or URL (bankml pull on the server takes those)", field, what)
	}
	return nil
}

// scrubModel is scrub, with man's model file (blob) named by the model and its sha256.
func (r *Router) scrubModel(msg, blob string, man *store.Manifest) string {
	return r.scrub(man.Named(msg, blob, fmt.Sprintf("the file of %s (sha256 %s)", man.Ref(), man.Model.SHA256)))
}

// makeRoom evicts idle models, least recently used first, until one more model of size bytes (its file and
// its slots' full KV caches; parts says them for the error, "" for none) fits
// MaxModels and MaxMemory (counting the loads already granted room, not those waiting for it). With only busy models in the way it waits, as Ollama's
// scheduler does, while the least recently used of them drains (no new requests; evicted once idle), until
// ctx ends (its error) or the router closes (a 503).
func (r *Router) makeRoom(ctx context.Context, k string, size int64, parts string) error {
	if r.o.MaxMemory > 0 && size > r.o.MaxMemory {
		// No eviction can make room: a retry would not help, so not a 503 (Ollama answers a model larger
		// than its memory with a 500 naming both sizes).
		hint := ""
		if parts != "" {
			hint = " (a smaller -c, -np or -ctk/-ctv shrinks the KV caches)"
		}
		return &httpError{http.StatusInternalServerError, fmt.Sprintf("the model's %d bytes%s exceed this server's --max-memory of %d bytes: it cannot be loaded here%s", size, parts, r.o.MaxMemory, hint)}
	}
	var victims []*loaded
	evict := func() {
		for _, v := range victims {
			r.log.Info("unloading model", "model", v.ref, "reason", "least recently used, to make room")
			unload(v)
		}
		victims = nil
	}
	defer evict()
	var drained *loaded // the busy model this load marked draining
	r.mu.Lock()
	for {
		if r.closed {
			r.mu.Unlock()
			return &httpError{http.StatusServiceUnavailable, "the server is shutting down"}
		}
		n, mem := len(r.loaded), size
		for _, l := range r.loaded {
			mem += l.size
		}
		for _, c := range r.loads {
			if c.room > 0 { // a load granted room (not this one, which is not yet)
				n++
				mem += c.room
			}
		}
		if (r.o.MaxModels <= 0 || n+1 <= r.o.MaxModels) && (r.o.MaxMemory <= 0 || mem <= r.o.MaxMemory) {
			if c, ok := r.loads[k]; ok {
				c.room = max(size, 1)
			}
			break
		}
		var lru, busy *loaded
		for _, l := range r.loaded {
			if l.inflight == 0 && (lru == nil || l.used.Before(lru.used)) {
				lru = l
			}
			if l.inflight > 0 && (busy == nil || l.used.Before(busy.used)) {
				busy = l
			}
		}
		if lru != nil {
			delete(r.loaded, key(lru.ref))
			victims = append(victims, lru)
			continue
		}
		// Only busy models (or other loads under way) hold the room: drain the least recently used busy
		// one and wait for a change.
		if busy != nil && !busy.draining {
			busy.draining = true
			drained = busy
			r.log.Info("waiting for room to load a model: draining the least recently used busy model", "model", busy.ref, "limits", r.Limits())
		}
		r.mu.Unlock()
		evict()
		r.mu.Lock()
		if err := r.waitLocked(ctx); err != nil {
			r.mu.Lock()
			if drained != nil && drained.draining {
				drained.draining = false // the wait is over: the model takes requests again
				r.changedLocked()
			}
			r.mu.Unlock()
			return err
		}
		r.mu.Lock()
	}
	r.mu.Unlock()
	return nil
}

// waitLocked waits, with r.mu held on entry and released on return, until room may have appeared
// (r.changed) or ctx ends (its error).
func (r *Router) waitLocked(ctx context.Context) error {
	ch := r.changed
	r.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// changedLocked wakes every waiter of r.changed (under r.mu).
func (r *Router) changedLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// isContextError reports whether err is a request's context ending.
func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Unload unloads a model now when it is idle, or as soon as it is (keep_alive 0). It reports whether the
// model was loaded.
func (r *Router) Unload(name string) (bool, error) {
	ref, err := r.ref(name)
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	l, ok := r.loaded[key(ref)]
	if !ok {
		r.mu.Unlock()
		return false, nil
	}
	l.keep = 0
	if l.inflight > 0 {
		r.mu.Unlock()
		return true, nil
	}
	delete(r.loaded, key(ref))
	r.changedLocked()
	r.mu.Unlock()
	unload(l)
	return true, nil
}

// Loaded lists the loaded models (NAME:TAG), sorted.
func (r *Router) Loaded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range r.loaded {
		out = append(out, l.ref)
	}
	sort.Strings(out)
	return out
}

// httpError is an error with its HTTP status.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// statusOf is the status and message of a failed acquire of name (as the request named it) on path; the
// message names no server path.
func (r *Router) statusOf(err error, path, name string) (int, string) {
	var he *httpError
	var nf *notFoundError
	switch {
	case errors.As(err, &nf):
		return http.StatusNotFound, notFoundMessage(path, name)
	case errors.As(err, &he):
		return he.status, r.scrub(he.msg)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, err.Error()
	}
	return http.StatusInternalServerError, r.scrub(err.Error())
}

// modelRequest is the part of a request body the router reads.
type modelRequest struct {
	Model     string        `json:"model"`
	Name      string        `json:"name"`
	KeepAlive *api.Duration `json:"keep_alive"`
	Prompt    *string       `json:"prompt"`
	Messages  []any         `json:"messages"`
}

// forward serves a request for one model: it reads the body, finds the model (the body's "model", or Ollama's
// "name"; a GET's ?model=NAME, as llama-server's router takes it) and hands the request, body unchanged, to
// that model's server.
func (r *Router) forward(w http.ResponseWriter, req *http.Request) {
	ollama := strings.HasPrefix(req.URL.Path, "/api/")
	body, bodyErr := serve.ReadBody(w, req, maxBody)
	if bodyErr != nil {
		writeErr(w, ollama, bodyErr.HTTPStatus(), bodyErr.Message)
		return
	}
	// llama-server's router takes a GET's model from the query (?model=NAME: its proxy_get), a GET having no
	// body; one sent with a GET is read as a POST's is, the query's model first.
	get := req.Method == http.MethodGet || req.Method == http.MethodHead
	hint := ""
	if get {
		hint = "; a GET names it in the query: " + req.URL.Path + "?model=NAME"
	}
	var mr modelRequest
	// A body that does not decode is refused here, before any model is named: a partial decode could read
	// as Ollama's unload request (keep_alive set, the messages not reached) and unload a model.
	if !get || len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &mr); err != nil {
			writeErr(w, ollama, http.StatusBadRequest, "invalid request: "+err.Error())
			return
		}
	}
	if q := req.URL.Query().Get("model"); get && q != "" {
		mr.Model = q
	}
	name := mr.Model
	if name == "" {
		name = mr.Name
	}
	if name == "" {
		writeErr(w, ollama, http.StatusBadRequest, "model is required: this server serves the store's models (GET /api/tags or /models lists them)"+hint)
		return
	}
	var keep *time.Duration
	if mr.KeepAlive != nil {
		d := mr.KeepAlive.Duration
		keep = &d
	}
	// Ollama's "unload" request: keep_alive 0 without a prompt or messages.
	if ollama && keep != nil && *keep == 0 && (mr.Prompt == nil || *mr.Prompt == "") && len(mr.Messages) == 0 {
		ref, err := r.ref(name)
		if err != nil {
			writeErr(w, true, http.StatusBadRequest, err.Error())
			return
		}
		if _, err := r.Unload(ref); err != nil {
			writeErr(w, true, http.StatusBadRequest, err.Error())
			return
		}
		unloadAnswer(w, req.URL.Path, name)
		return
	}
	l, err := r.acquire(req.Context(), name)
	if err != nil {
		st, msg := r.statusOf(err, req.URL.Path, name)
		writeErr(w, ollama, st, msg)
		return
	}
	defer r.release(l, keep)
	serve.NoteModel(req, l.ref)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	// The model's Server routes the request afresh (chi reuses a route context it finds in the request).
	req = req.WithContext(context.WithValue(req.Context(), chi.RouteCtxKey, (*chi.Context)(nil)))
	l.srv.Handler().ServeHTTP(w, req)
}

// unloadAnswer is Ollama's answer to keep_alive 0 without a prompt: done, done_reason "unload".
func unloadAnswer(w http.ResponseWriter, path, model string) {
	now := time.Now().UTC()
	var v any
	if path == "/api/chat" {
		v = api.ChatResponse{Model: model, CreatedAt: now, Message: api.Message{Role: "assistant"}, DoneReason: "unload", Done: true}
	} else {
		v = api.GenerateResponse{Model: model, CreatedAt: now, DoneReason: "unload", Done: true}
	}
	writeJSON(w, http.StatusOK, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}

// writeErr answers an error in Ollama's shape ({"error": "..."}) under /api/, else llama-server's.
func writeErr(w http.ResponseWriter, ollama bool, status int, msg string) {
	if ollama {
		writeJSON(w, status, map[string]string{"error": msg})
		return
	}
	typ := map[int]string{400: "invalid_request_error", 404: "not_found_error", 503: "unavailable_error"}[status]
	if typ == "" {
		typ = "server_error"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "type": typ}})
}

// Defaults are a stored model's Modelfile settings as package serve applies them to the Ollama API.
func Defaults(m *store.Manifest) serve.ModelDefaults {
	d := serve.ModelDefaults{Options: m.Parameters, System: m.System}
	for _, msg := range m.Messages {
		d.Messages = append(d.Messages, api.Message{Role: msg.Role, Content: msg.Content})
	}
	return d
}
