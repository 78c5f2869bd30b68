package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/provenance"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/sample"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 16 << 20         // request bodies over 16 MiB get 413
	DefaultQueueSize    = 64               // requests waiting for a slot beyond the busy ones; more get 429
	DefaultGrace        = 10 * time.Second // how long SIGTERM lets answers in flight finish before cancelling them
)

// ErrParallelAuto is the refusal of a negative slot count (-np -1): llama-server's auto mode, which it
// reads as 4 slots sharing one unified KV cache, each seeing the whole context (tools/server/server.cpp:156,
// llama_context's n_ctx_seq = n_ctx when kv_unified, src/llama-context.cpp:292). bankml's slots each have
// their own cache; 4 of the whole context would take 4 times the memory and still differ from one shared
// cache once the slots together fill it, so there is no honest equivalent.
var ErrParallelAuto = errors.New("-np -1 (auto: llama-server's 4 slots sharing one unified KV cache) is not supported: bankml's slots each have their own KV cache; pass -np N")

// Options configure a Server. Zero values take the defaults named.
type Options struct {
	NCtx      int // the KV cache's size in tokens across all slots, as llama-server's -c/n_ctx; 0: the training context. Each slot gets SlotContext's share.
	Threads   int // matmul workers of the engine, serving all slots' one batch as llama-server's -t; 0: 1
	Parallel  int // slots (--parallel); 0: 1; negative (llama-server's auto): ErrParallelAuto from New
	QueueSize int // requests allowed to wait for a slot; 0: DefaultQueueSize; negative: none wait
	// NPredict is llama-server's -n/--n-predict (common_params.n_predict): the tokens to predict for a
	// request that sets no n_predict/max_tokens/max_completion_tokens (Ollama: no num_predict) or sets -1;
	// a request's own count wins, above it or below (server-context.cpp:1818). nil or -1: unlimited (until
	// an end-of-generation token or a full context). Below -1 (llama-server takes any int, common/arg.cpp:1655;
	// -2 is llama-completion's "until context filled", which llama-server does not special-case): the slot's
	// n_predict_max is that value, which leaves no budget (server_slot::has_budget, server-context.cpp:462),
	// so a request that sets no count, or -1, gets one token and stops by the limit (server-context.cpp:1896),
	// as with 0; /completion's generation_settings.n_predict still reports the value.
	NPredict *int
	// Alias is llama-server's -a/--alias (common_params.model_alias): names of the model, each stripped of
	// surrounding white space, empty ones dropped, kept as a sorted set (std::set). The first in that order
	// is the served name (server-context.cpp:1372): /v1/models' id and models[].name, /props' model_alias,
	// and every answer's "model"; /v1/models' aliases lists the set. Empty: the file's base name
	// (Model.Name), bankml's default (llama-server's is the path as given).
	Alias []string
	// ModelPath is /props' model_path; empty: the model file as admitted (admit.Model.Path). The store server
	// names its files without the store's folder (<store>/blobs/sha256-HEX), as it names them elsewhere.
	ModelPath string

	// BatchSize bounds the prompt rows of one step over all slots; 0: engine's default.
	BatchSize int
	// UBatch is the physical batch of an embedding (llama-server's n_ubatch with --embeddings: -ub, no more
	// than -b, which llama-server lowers to -ub for embeddings): the most tokens one input of the embedding
	// and rerank routes may have, the slot context permitting (engine.Options.EmbedUBatch); 0: 512, -ub's
	// default. For a causal model New caps it at the context (-c, or the training context), as llama_context
	// caps n_batch and so n_ubatch. Generation is not affected: prompts run in micro-batches of 512.
	UBatch int
	// CacheReuse is cache_prompt's rule (--cache-reuse exact|server; engine.CacheReuse); "": exact.
	CacheReuse engine.CacheReuse
	// Embeddings is llama-server's --embeddings: the embedding routes answer (an encoder model turns it on
	// by itself). Reranking is --reranking: the rerank routes answer, the pooling is rank. Pooling is
	// --pooling (none, mean, cls, last, rank; "": the model's).
	Embeddings, Reranking bool
	Pooling               string
	// OllamaEmbeddings makes Ollama's /api/embed and /api/embeddings answer without Embeddings, as Ollama's
	// do for any model (its EmbedHandler asks no capability); llama-server's and OpenAI's embedding routes
	// keep llama-server's gate. The store server (package storeserve) sets it.
	OllamaEmbeddings bool

	// CacheTypes are the KV cache's data types (-ctk/--cache-type-k, -ctv/--cache-type-v; engine.Options).
	CacheTypes model.CacheTypes

	// Metrics is the /metrics registry to report to, shared with other models' Servers (NewMetrics: every
	// series under a model label, this Server's name); nil: a registry of the Server's own, without labels.
	Metrics *Metrics

	// NoSlots is llama-server's --no-slots (common_params.endpoint_slots false; --slots, the default, is
	// false here): GET /slots answers 501 not_supported_error "This server does not support slots endpoint.
	// Start it with `--slots`" (get_slots, server-context.cpp), so no client reads other requests' prompts and
	// answers there, and /props says endpoint_slots: false. The POST /slots actions are not affected: as in
	// llama-server, SlotSavePath alone gates them.
	NoSlots bool
	// SlotSavePath is llama-server's --slot-save-path: the folder of POST /slots/{id}?action=save|restore
	// files; "" refuses slot actions (501, as llama-server without the flag).
	SlotSavePath string
	// CacheRAMMiB is llama-server's -cram/--cache-ram: MiB of host memory for the prompts slots held
	// (engine.Options.CacheRAMMiB); -1: no limit; 0: none.
	CacheRAMMiB int

	APIKey string         // when set, every route but /health, /v1/health and / needs it (401), as llama-server's --api-key
	Ledger *ledger.Ledger // the history (--history DIR); nil keeps none
	// TLog is the transparency log the history's lines are committed to (--key with --history; its leaves
	// are the lines' sha256): every answer's entry is published before its receipt is sent, and the
	// /bankml/ledger routes serve the log read-only. It needs Ledger. nil keeps none.
	TLog *ledger.Log
	// Signer is the operator key that signs every receipt (--key); nil sends receipts saying signed: false.
	Signer       *provenance.Signer
	MaxBodyBytes int64         // 0: DefaultMaxBodyBytes
	Grace        time.Duration // 0: DefaultGrace
	Timeout      time.Duration // each socket read and write of an exchange (-to/--timeout; withIOTimeouts); 0: DefaultTimeout
	Version      string        // bankml's version, for receipts, /props and /api/version
	Defaults     ModelDefaults // a stored model's Modelfile settings, applied to the Ollama API and the OpenAI routes (modeldefaults.go)
	Match        string        // the reference CPU variant the answers are exact against (quant.ResolveMatch), for receipts and /props; "": BANKML_MATCH's (quant.MatchFromEnv)
	Log          *slog.Logger  // nil: discard
	// CORSOrigins are origins whose pages may read answers besides the loopback and app origins always
	// allowed (cors.go: --cors-origin, BANKML_ORIGINS): "*" for any (answered with Access-Control-Allow-Origin:
	// *, never with credentials), SCHEME://HOST[:PORT] with at most one "*" for any text; their host names are
	// also accepted in the Host header of a loopback connection. New refuses a malformed one.
	CORSOrigins []string
}

// embedUBatch is the physical batch llama-server gives an embedding with -ub ub (0: 512; the caller has
// applied -b) over a KV cache of -c nCtx tokens (0: the training context): llama_context's cparams.n_ubatch,
// which for a causal model is at most n_ctx (src/llama-context.cpp: n_batch = min(n_ctx, n_batch) with causal
// attention, n_ubatch = min(n_batch, n_ubatch)); an encoder's is -ub's.
func embedUBatch(ub, nCtx int, m *model.Model) int {
	if ub == 0 {
		ub = model.NUbatch
	}
	if nCtx == 0 {
		nCtx = m.HP.NCtxTrain
	}
	if !m.Encoder() {
		ub = min(ub, nCtx)
	}
	return ub
}

// modelNames is the served name and the sorted aliases for a file's base name and -a/--alias values, as
// arg.cpp:3007 collects them (string_strip each, skip empty ones, insert into a std::set) and
// server-context.cpp:1372 picks the name (the set's first, else the file's name).
func modelNames(file string, alias []string) (name string, aliases []string) {
	aliases = []string{}
	for _, a := range alias {
		if a = strings.Trim(a, " \t\n\v\f\r"); a != "" { // std::isspace's bytes, as string_strip
			aliases = append(aliases, a)
		}
	}
	slices.Sort(aliases)
	aliases = slices.Compact(aliases)
	if len(aliases) == 0 {
		return file, aliases
	}
	return aliases[0], aliases
}

// SlotContext is the context of one slot, in tokens, that llama-server gives with -c nCtx and -np parallel
// on a model trained on nCtxTrain tokens: n_ctx (nCtxTrain when 0) padded up to a multiple of 256, then,
// the KV cache not being unified (llama-server's default once -np is given; bankml has no --kv-unified),
// n_ctx/parallel padded up to a multiple of 256 (llama_context's n_ctx_seq, src/llama-context.cpp:289–302),
// capped at nCtxTrain (server_context's n_ctx_slot). -c 4096 -np 4 gives 1024 per slot, -c 1000 -np 3
// gives 512. Errors: a negative size, parallel < 1, or a share of 0 tokens (llama.cpp's "n_ctx_seq == 0").
func SlotContext(nCtx, parallel, nCtxTrain int) (int, error) {
	const pad = 256 // GGML_PAD(…, 256)
	switch {
	case nCtx < 0:
		return 0, fmt.Errorf("context size %d: must not be negative", nCtx)
	case parallel < 1:
		return 0, fmt.Errorf("%d slots: must be at least 1", parallel)
	case nCtx == 0:
		nCtx = nCtxTrain
	}
	total := (nCtx + pad - 1) / pad * pad
	seq := total
	if parallel > 1 {
		seq = (total/parallel + pad - 1) / pad * pad
		if seq == 0 {
			return 0, fmt.Errorf("context size %d shared by %d slots leaves each none (llama.cpp: n_ctx_seq == 0)", total, parallel)
		}
	}
	return min(seq, nCtxTrain), nil
}

// Server answers the OpenAI, Ollama and llama-server HTTP APIs with one admitted model. Create it with New,
// serve Handler (tests) or call Serve (bankml serve); Close releases the engine.
type Server struct {
	m       *admit.Model
	verify  *verifier // the per-answer re-check of the model file (identity.go)
	eng     *engine.Engine
	base    sample.Params // the sampling defaults every request starts from (baseParams)
	opt     Options
	metrics *metrics
	router  chi.Router
	log     *slog.Logger
	started time.Time

	guards func(http.Handler) http.Handler // the Host check, the origin policy and the API key, before routing (Guards, cors.go)

	name    string   // the served name: the first alias, or the file's base name (Options.Alias)
	aliases []string // the aliases, sorted, without duplicates ([] when none)

	nPredict int // the server's n_predict (Options.NPredict; -1: unlimited; below -1: no budget), llama-server's params_base.n_predict

	// stop is cancelled when in-flight answers must be cancelled (Serve's grace period ran out): every
	// request's context derives from it.
	stop       context.Context
	cancelStop context.CancelFunc
}

// New builds a server for a model admitted with its chat template (admit.Open with admit.Options.Chat). It
// does not listen; see Serve and Handler.
func New(m *admit.Model, o Options) (*Server, error) {
	if m == nil {
		return nil, errors.New("serve: no model")
	}
	if m.Template == nil {
		return nil, errors.New("serve: the model was admitted without its chat template (admit.Options.Chat)")
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	switch {
	case o.QueueSize == 0:
		o.QueueSize = DefaultQueueSize
	case o.QueueSize < 0:
		o.QueueSize = 0
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.Parallel < 0:
		return nil, fmt.Errorf("serve: -np/--parallel %d: %w", o.Parallel, ErrParallelAuto)
	case o.Parallel == 0:
		o.Parallel = 1
	}
	if o.Threads <= 0 {
		o.Threads = 1
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Match == "" {
		mt, err := quant.MatchFromEnv()
		if err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		o.Match = mt.Variant.String()
	}
	if o.TLog != nil && o.Ledger == nil {
		return nil, errors.New("serve: a transparency log needs the history it commits (Options.Ledger)")
	}
	var s *Server // its metrics count the refusals of its guards
	guards, err := Guards(GuardOptions{CORSOrigins: o.CORSOrigins, APIKey: o.APIKey, Log: o.Log,
		Refused: func(reason string) { s.metrics.refusedFor(reason) }})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if o.Reranking {
		if o.Pooling != "" && o.Pooling != "rank" {
			return nil, fmt.Errorf("serve: --reranking needs pooling rank, not --pooling %s", o.Pooling)
		}
		o.Pooling = "rank" // llama-server's --reranking sets embedding and pooling rank
	}
	nSlot, err := SlotContext(o.NCtx, o.Parallel, m.Model.HP.NCtxTrain)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if o.UBatch < 0 {
		return nil, fmt.Errorf("serve: physical batch (-ub) %d: must be positive", o.UBatch)
	}
	name, aliases := modelNames(m.Name, o.Alias)
	reg := o.Metrics // the registry this Server reports to
	if reg == nil {
		reg = newRegistry(false)
	}
	eng, err := engine.New(m.Model, m.Tokenizer, m.Template, engine.Options{
		NCtx: nSlot, Threads: o.Threads, Parallel: o.Parallel, QueueSize: o.QueueSize, SuppressTokens: m.SuppressTokens,
		BatchSize: o.BatchSize, CacheReuse: o.CacheReuse, ModelID: "sha256:" + m.SHA256, CacheRAMMiB: o.CacheRAMMiB, Pooling: o.Pooling,
		CacheTypes: o.CacheTypes, EmbedUBatch: embedUBatch(o.UBatch, o.NCtx, m.Model), OnDecode: reg.decodeHook(name),
		OnPrediction: reg.predictionHook(name),
	})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s = &Server{m: m, eng: eng, base: baseParams(m), nPredict: -1, opt: o, log: o.Log, started: time.Now(), guards: guards}
	s.name, s.aliases = name, aliases
	if o.NPredict != nil {
		s.nPredict = *o.NPredict
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var ledgerSize func() float64
	if o.Ledger != nil {
		ledgerSize = func() float64 { return float64(o.Ledger.Head().Size) }
	}
	busy := func() float64 {
		n := 0
		for _, si := range eng.Slots() {
			if si.Busy {
				n++
			}
		}
		return float64(n)
	}
	queue := func() float64 { return float64(eng.QueueLen()) }
	s.metrics = reg.attach(s.name, busy, queue, ledgerSize)
	s.stop, s.cancelStop = context.WithCancel(context.Background())
	s.verify = newVerifier(m, s.log, s.stop)
	s.router = s.routes()
	return s, nil
}

// Close cancels whatever is still generating and releases the engine. It does not close the Model or the
// Ledger, which the caller owns.
func (s *Server) Close() error {
	s.cancelStop()
	s.metrics.detach()
	return s.eng.Close()
}

// ContextLength is the context of each of the server's slots, in tokens (engine.Engine.NCtx: -c's share, or
// the training context), as Ollama's /api/ps reports a loaded model's context_length (its runner's num_ctx).
func (s *Server) ContextLength() int { return s.eng.NCtx() }

// Handler is the server's HTTP handler (every route, behind the middleware), without Serve's timeouts
// (Options.Timeout).
func (s *Server) Handler() http.Handler { return s.router }

// routes builds the router: the OpenAI routes, the llama-server extras, bankml's ledger routes, and the
// Ollama routes (mountOllama).
func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(s.logRequests, s.countRequests, s.guards, headAsGet)
	s.mount(r, s.newOllamaAPI(), notFound)
	return r
}

// mount registers every route of a Server on r, with notFound and methodNotAllowed for the requests none
// of them takes. It is the one route table: Routes builds it too, over handlers never called.
func (s *Server) mount(r chi.Router, a *ollamaAPI, notFound http.HandlerFunc) {
	r.NotFound(notFound)
	r.MethodNotAllowed(methodNotAllowed(notFound))

	// llama-server extras
	r.Get("/health", s.handleHealth)
	r.Get("/v1/health", s.handleHealth)
	r.Get("/props", s.handleProps)
	metrics := http.Handler(http.NotFoundHandler()) // Routes' table: never called
	if s.metrics != nil {
		metrics = s.metrics.handler()
	}
	r.Get("/metrics", metrics.ServeHTTP)
	r.Post("/tokenize", s.handleTokenize)
	r.Post("/detokenize", s.handleDetokenize)
	r.Post("/apply-template", s.handleApplyTemplate)
	r.Post("/completion", s.handleNativeCompletion)
	r.Post("/completions", s.handleNativeCompletion)
	r.Get("/slots", s.handleSlots)
	r.Post("/slots/{id_slot}", s.handleSlotAction)

	// OpenAI
	r.Get("/models", s.handleModels)
	r.Get("/v1/models", s.handleModels)
	r.Post("/v1/chat/completions", s.handleChatCompletions)
	r.Post("/chat/completions", s.handleChatCompletions)
	r.Post("/v1/completions", s.handleCompletions)

	// embeddings and reranking (embeddings.go)
	s.mountEmbeddings(r)

	// bankml
	s.mountLedger(r)
	s.mountConsole(r)

	s.mountOllama(r, a)
}

// Routes is a Server's route table (every method and pattern: llama-server's, OpenAI's, Ollama's and
// bankml's) with its answers to the requests no route takes, notFound's for an unknown path (storeNotFound
// under /api/ for a route of Ollama's the store server does not serve either) and methodNotAllowed's for a
// known path asked with another method. Its handlers are never to be called: a router in front of Servers
// (package storeserve, `bankml serve` without a model) forwards to a model's Server only a request the table
// routes, and lets the table answer the others before any model is named or loaded.
func Routes() chi.Router {
	r := chi.NewRouter()
	r.Use(headAsGet)
	(&Server{}).mount(r, &ollamaAPI{}, storeNotFound)
	return r
}

// countRequests counts every answered request by route pattern and status (bankml:http_requests_total).
func (s *Server) countRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = "unmatched"
		}
		s.metrics.request(route, max(ww.Status(), http.StatusOK))
	})
}

// headAsGet answers HEAD as GET (without the body) on llama-server's paths, as cpp-httplib routes HEAD to
// the GET handlers; under /api/ a HEAD is served only where Ollama registers one (its other GET routes answer
// HEAD with gin's 405).
func headAsGet(next http.Handler) http.Handler {
	asGet := middleware.GetHead(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && !strings.HasPrefix(r.URL.Path, "/api/") {
			asGet.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// notFound answers a path no route serves. Under /api/ it is Ollama's error shape, {"error": "..."}
// (application/json), which Ollama's clients read (ollama-js's checkOk, api.Client's StatusError): for a
// route of Ollama v0.17.4 that bankml does not serve (ollamaUnserved) a message naming it, else gin's text
// "404 page not found" (Ollama's server/routes.go sets no NoRoute handler); elsewhere llama-server's (its
// error handler in server-http.cpp: 404 {"error": {"message": "File Not Found", "type": "not_found_error",
// "code": 404}}).
func notFound(w http.ResponseWriter, r *http.Request) {
	ollamaNotFound(w, r, "(no model store or accounts): it serves the one model it was started with", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, &APIError{Type: TypeNotFound, Message: "File Not Found"})
	})
}

// storeNotFound is notFound for the store server (`bankml serve` without a model), which serves Ollama's
// store routes itself: the Ollama routes it lacks are the accounts, pushes, blob uploads and aliases.
func storeNotFound(w http.ResponseWriter, r *http.Request) {
	ollamaNotFound(w, r, "(no accounts, pushes, blob uploads or aliases)", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, &APIError{Type: TypeNotFound, Message: "File Not Found"})
	})
}

// ollamaNotFound is the 404 under /api/ (naming an Ollama route bankml does not serve, why), else other's.
func ollamaNotFound(w http.ResponseWriter, r *http.Request, why string, other http.HandlerFunc) {
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		other(w, r)
		return
	}
	msg := "404 page not found"
	for _, p := range ollamaUnserved {
		if r.URL.Path == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(r.URL.Path, p)) {
			msg = fmt.Sprintf("%s %s: bankml serve does not serve this Ollama route %s", r.Method, r.URL.Path, why)
			break
		}
	}
	ollamaError(w, http.StatusNotFound, msg)
}

// ollamaUnserved are the paths of Ollama v0.17.4's routes (server/routes.go GenerateRoutes) that bankml does
// not serve; one ending in "/" stands for the paths under it. (The store server serves /api/pull,
// /api/delete, /api/create and /api/copy: a route it registers never gets here.)
var ollamaUnserved = []string{"/api/status", "/api/pull", "/api/push", "/api/delete", "/api/me", "/api/signout",
	"/api/user/keys/", "/api/create", "/api/blobs/", "/api/copy", "/api/experimental/aliases"}

// methodNotAllowed answers a known path asked with another method. Under /api/ it is Ollama's answer (gin
// with HandleMethodNotAllowed, as Ollama's GenerateRoutes sets it: 405, the text "405 method not allowed",
// and the Allow header RFC 9110 §15.5.6 requires: the path's methods joined by ", " in the order of gin's
// method trees, which is the order Ollama first registers each method in, ollamaMethodOrder); elsewhere
// llama-server's, which has no 405 (cpp-httplib finds no handler for the method: the same 404 File Not
// Found as an unknown path, notFound's).
func methodNotAllowed(notFound http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			notFound(w, r)
			return
		}
		if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.Routes != nil {
			var allowed []string
			for _, m := range ollamaMethodOrder {
				if m != r.Method && rctx.Routes.Match(chi.NewRouteContext(), m, r.URL.Path) {
					allowed = append(allowed, m)
				}
			}
			if len(allowed) > 0 {
				w.Header().Set("Allow", strings.Join(allowed, ", "))
			}
		}
		writeText(w, http.StatusMethodNotAllowed, "405 method not allowed")
	}
}

// ollamaMethodOrder is the order of gin's method trees in Ollama's router: the order server/routes.go's
// GenerateRoutes first registers each method in (HEAD "/", GET "/", POST "/api/pull", DELETE "/api/delete",
// ...), which orders the methods of gin's Allow header.
var ollamaMethodOrder = []string{http.MethodHead, http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut}

// writeText answers text as text/plain with status (gin's default answers).
func writeText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, text)
}

// RequireAPIKey is llama-server's middleware_validate_api_key (server-http.cpp), for the single-model server
// and the store server alike (both through Guards, after its Host check and origin policy): with a key set,
// every path but its public ones needs "Authorization: Bearer KEY" (or the bare key, or X-Api-Key), else 401
// {"error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}} (under /api/
// Ollama's error shape), unknown paths and wrong methods included (llama-server checks it in its
// pre-routing handler, before routing; its router mode shares it). The public paths are
// get_public_endpoints': /health, /v1/health and the web UI's paths, of which bankml serves "/" (Ollama's
// "Ollama is running") and the console's static files (/console, /console/...; its API calls need the key);
// /models, /v1/models and /api/tags need the key. An OPTIONS request is not checked: llama-server answers it
// before the check (browsers send no Authorization on a preflight); Guards' cors answers it before it gets
// here. An empty key checks nothing.
func RequireAPIKey(key string) func(http.Handler) http.Handler {
	if key == "" {
		return func(next http.Handler) http.Handler { return next }
	}
	want := []byte(key)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodOptions || r.URL.Path == "/health" || r.URL.Path == "/v1/health" || r.URL.Path == "/" || r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, "/console/") {
				next.ServeHTTP(w, r)
				return
			}
			key := r.Header.Get("Authorization")
			if key == "" {
				key = r.Header.Get("X-Api-Key")
			}
			key = strings.TrimPrefix(key, "Bearer ")
			if subtle.ConstantTimeCompare([]byte(key), want) != 1 {
				if strings.HasPrefix(r.URL.Path, "/api/") { // Ollama's error shape, which its clients read
					ollamaError(w, http.StatusUnauthorized, "Invalid API Key")
					return
				}
				writeError(w, &APIError{Type: TypeAuthentication, Message: "Invalid API Key"})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// begin starts an exchange: it reads the whole body (at most MaxBodyBytes: 413 beyond) and re-checks the model
// file (503 when it is no longer the verified one). On an error it has already answered and returns nil:
// the route just returns. Every generating route, OpenAI or Ollama, starts with it; the Ollama routes pass
// their own error writer (nil: writeError).
func (s *Server) begin(w http.ResponseWriter, r *http.Request, writeErr func(http.ResponseWriter, error)) *exchange {
	if writeErr == nil {
		writeErr = writeError
	}
	received := time.Now()
	body, err := s.readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return nil
	}
	if err := s.recheck(); err != nil {
		writeErr(w, err)
		return nil
	}
	return &exchange{body: body, received: received}
}

// readBody reads a request body of at most MaxBodyBytes (ReadBody).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := ReadBody(w, r, s.opt.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	return body, nil
}

// ReadBody reads a request body of at most limit bytes, as both bankml servers read one: a larger body (by
// its Content-Length, or as read) is a 413 *APIError, any other failed read (a client that sends nothing
// for -to/--timeout, or closes early) a 400 invalid_request_error.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *APIError) {
	tooLarge := &APIError{Status: http.StatusRequestEntityTooLarge, Type: TypeInvalidRequest,
		Message: fmt.Sprintf("request body larger than %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	return body, nil
}

// recheck is the model file's re-check (verifier.check), counted in the metrics when it fails: call it
// before every answer.
func (s *Server) recheck() error {
	if err := s.verify.check(); err != nil {
		s.metrics.refusedFor("model_changed")
		s.log.Error("model re-check failed", "err", err)
		return err
	}
	return nil
}

// Serve answers on ln until ctx is cancelled (bankml serve cancels it on SIGTERM or SIGINT), then shuts down
// gracefully: it stops accepting connections, lets the answers in flight finish for Options.Grace, then
// cancels those still generating (their exchanges are not recorded: the history only gets complete answers,
// each line written whole) and waits for their handlers to return. It returns nil after a shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := NewHTTPServer(s.router, s.opt.Timeout, s.log)
	hs.BaseContext = func(net.Listener) context.Context { return s.stop }
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing answers in flight", "grace", s.opt.Grace)
	gctx, cancel := context.WithTimeout(context.Background(), s.opt.Grace)
	err := hs.Shutdown(gctx)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		s.log.Info("grace period over: cancelling answers in flight")
		s.cancelStop()
		wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = hs.Shutdown(wctx)
		cancel()
	}
	if err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
