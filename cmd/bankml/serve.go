package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/provenance"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/storeserve"
)

// serveCmd is `bankml serve MODEL`: the OpenAI, Ollama and llama-server HTTP APIs over one model (package
// serve). The model is guarded, pinned and loaded before the port opens.
type serveCmd struct {
	Model        string      `arg:"" optional:"" name:"MODEL" help:"A GGUF model file (or -m/--model FNAME), or a model NAME[:TAG] from the store, pulled from bankml's catalog on first use (pinned by its manifest)." type:"model"`
	ModelFlag    string      `short:"m" name:"model" placeholder:"FNAME" help:"Path to a GGUF model file, as llama-server's -m/--model, instead of MODEL." type:"path"`
	Manifest     string      `name:"manifest" help:"Provenance manifest (FORK.json), or the file's sha256 / sha256:<hex> digest, to pin the model against."`
	Unpinned     bool        `name:"unpinned" help:"Serve a model without a pin; every receipt then says pinned: false."`
	Host         *string     `name:"host" help:"Address to listen on, as llama-server's --host (default 127.0.0.1, loopback; another address exposes the model to the network)."`
	Port         *int        `name:"port" help:"Port to listen on, as llama-server's --port (default 8080; 0 picks a free one)."`
	Listen       *string     `name:"listen" help:"HOST:PORT to listen on, instead of --host and --port (default 127.0.0.1:8080)."`
	Ctx          int         `short:"c" name:"ctx-size" aliases:"ctx" default:"0" help:"KV cache size in tokens across all slots, as llama-server's -c/--ctx-size: 0 takes the model's training context; rounded up to a multiple of 256; with -np P each slot gets a P-th of it, rounded up to a multiple of 256 and capped at the training context (llama-server without --kv-unified)."`
	Threads      threadCount `short:"t" name:"threads" default:"${nproc}" help:"Matmul threads (default: the number of logical CPUs), serving all slots' one batch as llama-server's -t/--threads (0 or less: the number of logical CPUs, as llama.cpp; at most 512, ggml's GGML_MAX_N_THREADS)."`
	History      string      `name:"history" help:"Folder of the history ledger: every exchange is appended to DIR/history.jsonl (fsynced), committed by an RFC 6962 Merkle tree." type:"path"`
	CORSOrigin   []string    `name:"cors-origin" aliases:"cors-origins" sep:"," env:"BANKML_ORIGINS" placeholder:"ORIGIN" help:"Origins whose web pages may read answers, besides loopback pages (http(s)://localhost, 127.0.0.1, [::1], 0.0.0.0 on any port) and app origins (app://, file://, tauri://, vscode-webview://, vscode-file://), always allowed: SCHEME://HOST[:PORT] with at most one * for any text, or * for every origin (never with credentials); repeatable and comma-separated, as llama-server's --cors-origins and Ollama's OLLAMA_ORIGINS. Their host names may also be used to reach a loopback server (Host header)."`
	APIKey       string      `name:"api-key" env:"BANKML_API_KEY" help:"API key every request but /health, /v1/health and / must carry (Authorization: Bearer KEY or X-Api-Key), as llama-server's --api-key."`
	Parallel     int         `name:"parallel" aliases:"np" default:"1" help:"Number of slots (requests generated at once), as llama-server's -np/--parallel."`
	Timeout      int         `name:"timeout" default:"3600" placeholder:"N" help:"Seconds each socket read of a request and each write of its answer may wait, as llama-server's -to/--timeout (its default 3600): a timeout per operation, so long generations and long streams are not cut; a client silent or not reading for N seconds is dropped."`
	Queue        int         `name:"queue" default:"64" help:"Requests allowed to wait for a slot; more get 429 (the Ollama routes: Ollama's 503 server busy)."`
	Alias        aliasList   `short:"a" name:"alias" placeholder:"STRING" help:"Names of the model, comma-separated (given again, each one adds), as llama-server's -a/--alias: the first in byte order is the name /v1/models, /props and every answer give (default: the file's base name); /v1/models lists them all as aliases; Ollama requests may name the model by any of them or by the file's base name."`
	CacheReuse   string      `name:"cache-reuse" default:"exact" enum:"exact,server" placeholder:"exact|server" help:"How a request keeps a slot's cached prompt (cache_prompt): exact (default) keeps the longest cached prefix whose cells a fresh evaluation computes alike, so every answer equals the fresh one; server keeps llama-server's whole common prefix (its cache_n; answers then depend on what the slot ran before). llama-server's --cache-reuse N (KV shifting) has no counterpart."`
	CacheRAM     int         `name:"cache-ram" default:"0" placeholder:"N" help:"MiB of host memory for prompts slots held before another prompt took them, as llama-server's -cram/--cache-ram: a request given a slot by least-recent use, or a slot that keeps under half of its prompt for it, saves the slot's prompt there and gets back the cached prompt that keeps most of its own (-1: no limit; 0, bankml's default: none; llama-server's is 8192)."`
	SlotSavePath string      `name:"slot-save-path" placeholder:"PATH" help:"Folder of slot files for POST /slots/{id}?action=save|restore, as llama-server's --slot-save-path; without it slot actions are refused (501)." type:"path"`
	Slots        bool        `name:"slots" negatable:"" default:"true" help:"Serve GET /slots (every slot's current or last request: its prompt and what it generated), as llama-server's --slots, on by default; --no-slots answers it with llama-server's 501 (the last of the two given counts). The POST /slots actions depend on --slot-save-path alone, as in llama-server."`
	NPredict     int         `short:"n" name:"n-predict" default:"-1" help:"Tokens to predict for a request that sets no n_predict/max_tokens (or -1; Ollama: no num_predict), as llama-server's -n/--n-predict; a request's own count wins, above or below it; -1: until an end-of-generation token or a full context; below -1 (any int, as llama-server takes it): one token, as llama-server's slot limit then has no budget."`

	Embeddings bool   `name:"embeddings" aliases:"embedding" help:"Serve embeddings (/v1/embeddings, /embedding, /embeddings, Ollama's /api/embed and /api/embeddings), as llama-server's --embeddings; an encoder model (bert) embeds without it."`
	Reranking  bool   `name:"reranking" aliases:"rerank" help:"Serve reranking (/v1/rerank, /rerank, /reranking, /v1/reranking) with the model's ranking head (pooling rank), as llama-server's --reranking."`
	Pooling    string `name:"pooling" enum:",none,mean,cls,last,rank" default:"" placeholder:"{none,mean,cls,last,rank}" help:"Pooling of the embeddings, as llama-server's --pooling (default: the model's {arch}.pooling_type)."`
	UBatch     int    `name:"ubatch-size" default:"512" placeholder:"N" help:"Physical batch size, as llama-server's -ub/--ubatch-size: the most tokens one input of the embedding and rerank routes may have (llama-server's n_ubatch: at most -b, and for a decoder at most -c); a longer one is refused as llama-server refuses it (increase the physical batch size), truncated on Ollama's /api/embed. Prompts of completions run in micro-batches of 512 whatever it is."`
	Batch      int    `name:"batch-size" default:"2048" placeholder:"N" help:"Logical batch size, as llama-server's -b/--batch-size: bankml takes it only as the bound it puts on -ub (llama-server's n_ubatch is at most n_batch)."`

	KV cacheTypeFlags `embed:""`

	Proof proofFlags `embed:""`
	matchFlag

	Ignored llamaIgnored `embed:""`

	storeFlag  `embed:""` // --models: the store a NAME comes from (storemodel.go)
	mirrorFlag `embed:""` // --from: the mirror a NAME is pulled from on first use

	StoreServe storeServeFlags `embed:""` // without MODEL: the store (serve_store.go)
}

// aliasList is serve's -a/--alias: each value split at commas and added, as arg.cpp:3007's handler adds to
// model_alias (serve.Options.Alias strips and sorts them). A value may start with "-" (-a -x), as llama.cpp
// takes the next token whatever it is.
type aliasList []string

// Decode implements kong.MapperValue.
func (a *aliasList) Decode(ctx *kong.DecodeContext) error {
	v, err := popString(ctx, "alias")
	if err != nil {
		return err
	}
	*a = append(*a, strings.Split(v, ",")...)
	return nil
}

// Defaults of --host and --port (llama-server's).
const (
	defaultHost = "127.0.0.1"
	defaultPort = 8080
)

// address is the address to listen on: --listen HOST:PORT, or --host and --port (llama-server's spellings,
// each defaulting to defaultHost and defaultPort). --listen with --host or --port is refused: one way only.
func (c *serveCmd) address() (string, error) {
	if c.Listen != nil {
		if c.Host != nil || c.Port != nil {
			return "", errors.New("serve: --listen and --host/--port both given: use --listen HOST:PORT or llama-server's --host and --port, not both")
		}
		if _, _, err := net.SplitHostPort(*c.Listen); err != nil {
			return "", fmt.Errorf("serve: --listen %q: %w", *c.Listen, err)
		}
		return *c.Listen, nil
	}
	host, port := defaultHost, defaultPort
	if c.Host != nil {
		host = *c.Host
	}
	if c.Port != nil {
		port = *c.Port
	}
	if port < 0 || port > 65535 {
		return "", fmt.Errorf("serve: %w", outOfRange("--port", port, 0, 65535, "0: any free port"))
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// Validate (kong's hook after parsing) takes the model from MODEL or -m/--model (resolveModel).
func (c *serveCmd) Validate() (err error) {
	if c.Model == "" && c.ModelFlag == "" {
		return nil // the whole store (serve_store.go)
	}
	c.Model, err = resolveModel(c.Model, c.ModelFlag)
	return err
}

func (c *serveCmd) Run(stderr errWriter, sigs *signals) error {
	if err := c.Ignored.warn("serve", stderr); err != nil {
		return err
	}
	if err := checkRanges(
		intRange{"-ub/--ubatch-size", c.UBatch, 1, math.MaxInt32, "tokens: the most one embedding input may have"},
		intRange{"-b/--batch-size", c.Batch, 1, math.MaxInt32, "tokens: the bound of -ub"},
	); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if c.Parallel < 0 { // llama-server's auto (any negative: common/arg.cpp refuses only 0)
		return fmt.Errorf("serve: -np/--parallel %d: %w", c.Parallel, serve.ErrParallelAuto)
	}
	if c.Parallel < 1 {
		return fmt.Errorf("serve: %w", outOfRange("-np/--parallel", c.Parallel, 1, maxSeq, "slots; 256 is llama.cpp's LLAMA_MAX_SEQ"))
	}
	// arg.cpp's std::stoi (-n arg.cpp:1655). -np and -c quote their own ranges (above and below), which lie
	// inside a 32-bit int.
	if err := checkInt32("-n/--n-predict", c.NPredict); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if c.Parallel > maxSeq { // llama_context refuses n_seq_max (llama-server's -np) above it
		return fmt.Errorf("serve: %w", outOfRange("-np/--parallel", c.Parallel, 1, maxSeq, "slots; 256 is llama.cpp's LLAMA_MAX_SEQ"))
	}
	if err := checkCtxSize(c.Ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if c.Ctx > 0 { // a slot's share of an explicit -c does not depend on the model: a usage error (exit 1)
		if err := c.checkSlots(math.MaxInt32); err != nil {
			return err
		}
	}
	if c.Timeout < 1 || c.Timeout > math.MaxInt32 {
		return fmt.Errorf("serve: %w", outOfRange("-to/--timeout", c.Timeout, 1, math.MaxInt32, "seconds"))
	}
	if c.Queue < 1 {
		return fmt.Errorf("serve: %w", outOfRange("--queue", c.Queue, 1, inf, "requests waiting for a slot"))
	}
	if c.CacheRAM < -1 {
		return fmt.Errorf("serve: %w", outOfRange("-cram/--cache-ram", c.CacheRAM, -1, inf, "MiB; -1: no limit, 0: none"))
	}
	if c.SlotSavePath != "" { // arg.cpp:3614
		if fi, err := os.Stat(c.SlotSavePath); err != nil || !fi.IsDir() {
			return fmt.Errorf("serve: --slot-save-path: not a directory: %s", c.SlotSavePath)
		}
	}
	if _, err := quant.LevelFromEnv(); err != nil { // a usage error (exit 1), not a model refused (exit 2)
		return fmt.Errorf("serve: %w", err)
	}
	if c.Reranking && c.Pooling != "" && c.Pooling != "rank" { // a usage error, before anything is created
		return fmt.Errorf("serve: --reranking needs pooling rank, not --pooling %s", c.Pooling)
	}
	// The proof flags and the key are checked before anything is created on disk (the model pulled into the
	// store, the history folder).
	proof, err := c.checkProof()
	if err != nil {
		return err
	}
	match, err := c.resolve("serve", nil) // a bad --match is a usage error; its info line comes with the model
	if err != nil {
		return err
	}
	addr, err := c.address()
	if err != nil {
		return err
	}
	if err := serve.CheckCORSOrigins(c.CORSOrigin); err != nil {
		return fmt.Errorf("serve: --cors-origin: %w", err)
	}
	host, _, _ := net.SplitHostPort(addr)
	log := slog.New(slog.NewTextHandler(stderr, nil))
	// SIGTERM and SIGINT are caught from the start: during admission they stop the command at once, before it
	// listens (exit 143 or 130, as every command a signal stops: run's interruptedStatus); once it listens they
	// shut it down gracefully (serve.Server.Serve, exit 0).
	ctx, stop := sigs.notifyContext(os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.Model == "" {
		if _, err := c.resolve("serve", stderr); err != nil { // the info line, for every model it will load
			return err
		}
		return c.serveStore(ctx, addr, match.Variant.String(), proof, log, stderr)
	}

	// A model NAME comes from the store (pulled on first use), pinned by its manifest.
	model, manifest, stored, err := storeModel("serve", c.Model, c.Manifest, c.storeFlag, c.From, stderr, sigs)
	if err != nil {
		return err
	}
	alias := []string(c.Alias)
	var defaults serve.ModelDefaults
	if stored != nil {
		if len(alias) == 0 {
			alias = []string{stored.Ref()} // served as NAME:TAG, as Ollama names it
		}
		defaults = storeserve.Defaults(stored) // its Modelfile's settings, on the Ollama API
	}
	c.Model, c.Manifest = model, manifest

	// Admission before the port opens: a refused model never listens (exit 2). A pin is required unless
	// --unpinned.
	pin := admit.RequirePin
	if c.Unpinned {
		pin = admit.AllowUnpinned
	}
	// The cache types (-ctk/-ctv) and -c/-np are checked against the model from the header, before the file
	// is hashed and before the history is opened (admitOptions).
	kv := c.KV.types()
	m, err := untilStopped(ctx, func() (*admit.Model, error) {
		return openModel("serve", c.Model, stored, c.admitOptions(pin, &kv), stderr, stderr)
	}, func(m *admit.Model) { m.Close() })
	if np := (*admit.NoPinError)(nil); errors.As(err, &np) {
		return cannotRun(noPinAdvice(np))
	}
	if err != nil {
		return err
	}
	defer m.Close()
	if err := c.checkPooling(m.Model); err != nil { // before the history folder is created (engine.New checks it again)
		return cannotRun(err)
	}
	if _, err := c.resolve("serve", stderr); err != nil { // the info line, now that the model is admitted
		return err
	}

	l, signer, tlog, err := c.openHistory(ctx, proof, stderr, log)
	if err != nil {
		return err
	}
	if l != nil {
		defer l.Close()
	}
	if tlog != nil {
		defer closeLog(tlog, stderr) // before the history closes
	}
	so := c.serveOptions(l, tlog, signer, log, match.Variant.String())
	so.Alias, so.Defaults = alias, defaults
	s, err := serve.New(m, so)
	if err != nil {
		return cannotRun(err)
	}
	defer s.Close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		if host == "" {
			host = "every interface"
		}
		fmt.Fprintf(stderr, "warning: listening on %s, not loopback: anyone who can reach it can use the model%s\n", host,
			map[bool]string{true: "", false: " (no --api-key)"}[c.APIKey != ""])
	}
	if err := ctx.Err(); err != nil { // a signal after admission, before listening: stopped as during it
		ln.Close()
		return err
	}
	fmt.Fprintf(stderr, "listening on http://%s\n", ln.Addr())
	if err := s.Serve(ctx, ln); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "stopped")
	return nil
}

// untilStopped returns what admit returns, or ctx's error as soon as ctx is canceled (a signal while serve
// admits its model: hashing a large file takes seconds, which admission cannot cut short); what admit returns
// after that is released with release.
func untilStopped[T any](ctx context.Context, admit func() (T, error), release func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := admit()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				release(r.v)
			}
		}()
		var zero T
		return zero, ctx.Err()
	}
}

// checkPooling refuses a --pooling (or --reranking's pooling rank) the model cannot pool with, as engine.New
// would once the history is open: a ranking head missing for rank (exit 2, the flag does not fit this model).
func (c *serveCmd) checkPooling(mdl *model.Model) error {
	flag, pool := "--pooling "+c.Pooling, c.Pooling
	if c.Reranking {
		flag, pool = "--reranking", "rank"
	}
	if pool == "" {
		return nil
	}
	p, err := embed.ParsePooling(pool)
	if err == nil {
		_, err = mdl.Pooling(p)
	}
	if err != nil {
		return fmt.Errorf("serve: %s: %w", flag, err)
	}
	return nil
}

// maxSeq is llama.cpp's LLAMA_MAX_SEQ (src/llama-cparams.h:8): llama_context's constructor throws "n_seq_max
// must be <= 256" (src/llama-context.cpp:101), and llama-server's -np is its n_seq_max.
const maxSeq = 256

// admitOptions are serve's admission options: the pin policy, the chat template, and the checks made from the
// header before the file is hashed (the history is opened only after admission): the cache types kv
// (admit.Options.CacheTypes) and -c/--ctx-size with -np/--parallel against the training context (checkSlots;
// its error there refuses the model, exit 2: with -c 0 a slot's share is the model's training context's).
func (c *serveCmd) admitOptions(pin admit.PinPolicy, kv *model.CacheTypes) admit.Options {
	return admit.Options{Manifest: c.Manifest, Pin: pin, Chat: true, CacheTypes: kv,
		Header: func(hp model.Hparams) error { return c.checkSlots(hp.NCtxTrain) }}
}

// checkSlots refuses a -c/--ctx-size and -np/--parallel that leave a slot no context on a model trained on
// nCtxTrain tokens (serve.SlotContext; llama.cpp's "n_ctx_seq == 0", src/llama-context.cpp:297). Run calls it
// before the model for an explicit -c (a usage error, exit 1: the flags alone are wrong) and admitOptions
// from the header (exit 2: the flags do not fit this model).
func (c *serveCmd) checkSlots(nCtxTrain int) error {
	if _, err := serve.SlotContext(c.Ctx, c.Parallel, nCtxTrain); err != nil {
		return fmt.Errorf("serve: -c/--ctx-size %d with -np/--parallel %d: %w", c.Ctx, c.Parallel, err)
	}
	return nil
}

// noPinAdvice is serve's refusal of a file without a pin (exit 2), saying the three ways on, one a line: pin
// it to the sha256 its publisher gives, add it to the store (which records its sha256 and pins it), or serve
// it unpinned.
func noPinAdvice(np *admit.NoPinError) error {
	return fmt.Errorf("serve: %s (sha256 %s) has no pin: refused; serve answers only from a pinned model. Either\n"+
		"  pin it to the sha256 its publisher gives:  bankml serve %s --manifest sha256:HEX  (or --manifest FORK.json, docs/manifest.md)\n"+
		"  or add it to the store, which pins it:     bankml pull %s --name NAME  then  bankml serve NAME\n"+
		"  or serve it unpinned (receipts say pinned: false):  bankml serve %s --unpinned",
		np.Path, np.SHA256, np.Path, np.Path, np.Path)
}

// embedUBatch is the physical batch of an embedding that -ub and -b give: llama-server lowers n_batch to
// n_ubatch for embeddings (tools/server/server.cpp) and llama_context keeps n_ubatch at most n_batch, so the
// smaller of the two (serve.New caps it at a decoder's context).
func (c *serveCmd) embedUBatch() int { return min(c.UBatch, c.Batch) }

// serveOptions are the serve.Options of serve's flags, the history, log and key openHistory gave (nil without
// --history) and the matched CPU variant: one model's server, or each model's of the store server.
func (c *serveCmd) serveOptions(l *ledger.Ledger, tlog *ledger.Log, signer *provenance.Signer, log *slog.Logger, match string) serve.Options {
	return serve.Options{
		NCtx: c.Ctx, Threads: int(c.Threads), Parallel: c.Parallel, QueueSize: c.Queue, NPredict: &c.NPredict,
		APIKey: c.APIKey, CORSOrigins: c.CORSOrigin, Ledger: l, TLog: tlog, Signer: signer, Version: version, Log: log, Match: match,
		Timeout:    time.Duration(c.Timeout) * time.Second,
		CacheReuse: engine.CacheReuse(c.CacheReuse), SlotSavePath: c.SlotSavePath, NoSlots: !c.Slots, CacheRAMMiB: c.CacheRAM,
		Embeddings: c.Embeddings, Reranking: c.Reranking, Pooling: c.Pooling, CacheTypes: c.KV.types(), UBatch: c.embedUBatch(),
	}
}
