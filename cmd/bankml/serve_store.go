package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/storeserve"
)

// storeServeFlags are bankml serve's flags for serving the whole store (no MODEL given: package storeserve).
type storeServeFlags struct {
	KeepAlive keepAlive `name:"keep-alive" default:"5m" help:"Without MODEL: how long a model stays loaded after its last request (Ollama's keep_alive and OLLAMA_KEEP_ALIVE: a duration such as 10m, or whole seconds such as -1; a request's own keep_alive wins): 0 unloads it once idle, a negative value keeps it loaded."`
	MaxModels int       `name:"max-models" default:"0" help:"Without MODEL: models loaded at once (0: no limit); the least recently used idle model is unloaded to make room, and with every model busy a request waits for one to finish."`
	MaxMemory int64     `name:"max-memory" default:"0" placeholder:"BYTES" help:"Without MODEL: bytes of models loaded at once, each counted as its file plus its slots' full KV caches at -c/-np/-ctk/-ctv (0: no limit); the least recently used idle models are unloaded to make room."`
}

// keepAlive is --keep-alive: a Go duration ("10m", "-1s") or, as Ollama's OLLAMA_KEEP_ALIVE reads it, a
// whole number of seconds ("-1", "300").
type keepAlive time.Duration

// UnmarshalText reads a duration, else whole seconds; anything else is an error naming the value.
func (k *keepAlive) UnmarshalText(b []byte) error {
	if d, err := time.ParseDuration(string(b)); err == nil {
		*k = keepAlive(d)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n > int64(time.Duration(1<<63-1)/time.Second) || n < -int64(time.Duration(1<<63-1)/time.Second) {
		return fmt.Errorf("%q is neither a duration (10m, 1h) nor whole seconds (-1, 300)", b)
	}
	*k = keepAlive(time.Duration(n) * time.Second)
	return nil
}

// serveStore is bankml serve without a model: every model of the store, loaded on demand (storeserve). The
// proof flags work as with a model (openHistory, the setup checkProof loaded): one history, one log and one
// key shared by every model it loads, each receipt naming its model by model_sha256; the history and the log
// are closed once, after the router (every model's server) is.
func (c *serveCmd) serveStore(ctx context.Context, addr, match string, proof proofSetup, log *slog.Logger, stderr errWriter) error {
	if len(c.Alias) > 0 || c.Unpinned || c.Manifest != "" {
		return errors.New("serve: without MODEL (serving the store) -a/--alias, --unpinned and --manifest do not apply: every model of the store is pinned by its manifest and named NAME:TAG")
	}
	s, err := c.open()
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	l, signer, tlog, err := c.openHistory(ctx, proof, stderr, log)
	if err != nil {
		return err
	}
	if l != nil {
		defer l.Close()
	}
	if tlog != nil {
		defer closeLog(tlog, stderr) // after the router's models, before the history
	}
	r, err := storeserve.New(storeserve.Options{
		Store: s, Pull: pullOptions(stderr, c.From),
		Serve:     c.serveOptions(l, tlog, signer, log, match),
		KeepAlive: time.Duration(c.StoreServe.KeepAlive), NoKeepAlive: c.StoreServe.KeepAlive == 0, MaxModels: c.StoreServe.MaxModels, MaxMemory: c.StoreServe.MaxMemory, Log: log,
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer r.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintf(stderr, "serving the store %s (models load on demand; %s)\nlistening on http://%s\n", s.Root, r.Limits(), ln.Addr())
	hs := serve.NewHTTPServer(r.Handler(), time.Duration(c.Timeout)*time.Second, log)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), serve.DefaultGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	fmt.Fprintln(stderr, "stopped")
	return nil
}
