package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/bankml/bankml/ledger"
	"github.com/bankml/bankml/provenance"
)

// witnessCmd is `bankml witness`: a C2SP tlog-witness (ledger.Witness) over HTTP.
type witnessCmd struct {
	Key    string   `name:"key" required:"" type:"path" placeholder:"FILE" help:"The witness's private key (bankml key new; its cosignatures use the derived cosignature/v1 key, printed at start)."`
	Log    []string `name:"log" required:"" placeholder:"VKEY" help:"The verifier key of a log to witness (inline or a file such as the operator's FILE.pub); its name is the log's origin; repeatable."`
	State  string   `name:"state" required:"" type:"path" placeholder:"FILE" help:"Where the witness keeps the last checkpoint it cosigned per log (created when missing; written before every answer)."`
	Listen string   `name:"listen" default:"127.0.0.1:8081" help:"HOST:PORT to listen on; POST /add-checkpoint is served there."`
}

func (c *witnessCmd) Run(stderr errWriter, sigs *signals) error {
	s, err := provenance.LoadSigner(c.Key)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	skey, err := os.ReadFile(c.Key)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	var logs []string
	for _, l := range c.Log {
		if b, err := os.ReadFile(l); err == nil {
			l = strings.TrimSpace(string(b))
		}
		logs = append(logs, l)
	}
	w, err := ledger.NewWitness(string(skey), logs, c.State)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	cosig, err := ledger.WitnessVerifierKey(s.Public().VerifierKey())
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	fmt.Fprintf(stderr, "witness %s: cosignature key %s\n", w.Name(), cosig)
	fmt.Fprintf(stderr, "listening on http://%s (POST /add-checkpoint)\n", ln.Addr())
	ctx, stop := sigs.notifyContext(os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("witness: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("witness: %w", err)
	}
	fmt.Fprintln(stderr, "stopped")
	return nil
}
