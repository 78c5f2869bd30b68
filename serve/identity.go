package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/internal/fsutil"
	"github.com/bankml/bankml/provenance"
)

// verifier is the per-answer re-check of the model file. The file was hashed at admission; before every
// answer (and on /health) its identity (admit.FileIdentity: device, inode, size, mtime) is compared with the
// one its hash is of. While it is unchanged the model answers. When it changed (a `touch`, a copy of the
// same bytes, a new file), the file is hashed again in the background and answers and /health are held as
// 503 "re-verifying" meanwhile: the same sha256 serves again (logged), another sha256 is a 503 naming both
// hashes and what to do, until the file changes again (restored, say), which is re-verified the same way.
// The model in memory is never reloaded: a file that hashes the same holds the bytes it was loaded from.
type verifier struct {
	path, sha256 string // the model file and the sha256 it was admitted with
	log          *slog.Logger
	stop         context.Context // cancels a re-hash when the server closes
	// hash hashes the file at path (provenance.HashReader over the file, cancelled with ctx); tests replace it.
	hash func(ctx context.Context, path string) (string, error)

	mu       sync.Mutex
	verified admit.FileIdentity // the identity whose bytes hash to sha256
	hashing  bool               // a re-hash runs: answers are held
	change   string             // what changed, for the held answers' message
	failed   *admit.FileIdentity
	failure  string        // the 503's message while failed is the file's identity
	done     chan struct{} // closed when the running re-hash ends (tests wait on it)
}

func newVerifier(m *admit.Model, log *slog.Logger, stop context.Context) *verifier {
	return &verifier{path: m.Path, sha256: m.SHA256, verified: m.Identity, log: log, stop: stop, hash: hashFile}
}

// hashFile is provenance.HashReader over the file at path, stopped when ctx is cancelled.
func hashFile(ctx context.Context, path string) (string, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum, _, err := provenance.HashReader(ctxReader{ctx, f}, nil)
	return sum, err
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// identity is the identity the served bytes were last verified with (/props).
func (v *verifier) identity() admit.FileIdentity {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.verified
}

// check returns nil when the model may answer, else a 503 unavailable_error *APIError: held while the file
// is re-hashed, or naming the sha256 it has now.
func (v *verifier) check() error {
	got, err := admit.StatIdentity(v.path)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		v.log.Error("model file re-check failed", "path", v.path, "err", err)
		return unavailable(fmt.Sprintf("model file re-check failed: %s: no answer", pathless(err)))
	}
	switch {
	case v.hashing:
		return v.held()
	case v.failed != nil && v.failed.Diff(got) == "":
		return unavailable(v.failure)
	case v.failed == nil && v.verified.Diff(got) == "":
		return nil
	}
	if v.failed != nil {
		v.change = "the model file changed again"
	} else {
		v.change = v.verified.Diff(got)
	}
	v.hashing, v.failed, v.done = true, nil, make(chan struct{})
	v.log.Warn("model file changed on disk: re-verifying its sha256; answers are held meanwhile", "path", v.path, "change", v.change)
	go v.rehash(v.done)
	return v.held()
}

// pathless is err for a client: a *fs.PathError (a failed stat or open of the model file) without the path,
// which only the server's log names.
func pathless(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + " of the model file: " + pe.Err.Error()
	}
	return err.Error()
}

func (v *verifier) held() error {
	return unavailable(fmt.Sprintf("model file re-verifying: %s; its sha256 is being checked again, no answer meanwhile: retry shortly", v.change))
}

func unavailable(msg string) *APIError { return &APIError{Type: TypeUnavailable, Message: msg} }

// rehash hashes the file until it holds still while hashed, then decides (see verifier).
func (v *verifier) rehash(done chan struct{}) {
	defer close(done)
	for {
		before, err := admit.StatIdentity(v.path)
		sum := ""
		if err == nil {
			sum, err = v.hash(v.stop, v.path)
		}
		if v.stop.Err() != nil {
			return
		}
		after, serr := admit.StatIdentity(v.path)
		if err == nil && serr == nil && before.Diff(after) != "" {
			time.Sleep(10 * time.Millisecond) // still being written: hash it again once it holds still
			continue
		}
		if err == nil {
			err = serr
		}
		v.mu.Lock()
		v.hashing = false
		switch {
		case err != nil:
			v.failed = &before
			v.failure = fmt.Sprintf("model file re-check failed: %s and hashing it again failed: %s: no answer; restore the admitted file (sha256 %s) or restart bankml serve", v.change, pathless(err), v.sha256)
			v.log.Error("model file re-check failed", "path", v.path, "err", err)
		case sum == v.sha256:
			v.verified = after
			v.log.Info("model file re-verified: same sha256, serving again", "path", v.path, "sha256", sum, "change", v.change)
		default:
			v.failed = &after
			v.failure = fmt.Sprintf("model file changed: its sha256 is now %s, admitted %s: no answer; restore the admitted file, or restart bankml serve to admit the new one (with its pin)", sum, v.sha256)
			v.log.Error("model file changed: another sha256; no answers until it is restored or the server restarted", "path", v.path, "sha256", sum, "admitted", v.sha256)
		}
		v.mu.Unlock()
		return
	}
}
