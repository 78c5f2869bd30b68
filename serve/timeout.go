package serve

import (
	"io"
	"log/slog"
	"net/http"
	"time"
)

// DefaultTimeout is llama-server's default read/write timeout (-to/--timeout; common_params.timeout_read
// and timeout_write, 3600 seconds at the reference's commit).
const DefaultTimeout = 3600 * time.Second

// NewHTTPServer is the http.Server a bankml listener runs h on (Server.Serve, and bankml serve without a
// MODEL for the store's routes): every socket read and write of an exchange gets d (withIOTimeouts,
// llama-server's -to/--timeout; DefaultTimeout when d <= 0), a request's head at most 30 s (or d when
// shorter), and the server's own errors go to log (when not nil) as warnings.
func NewHTTPServer(h http.Handler, d time.Duration, log *slog.Logger) *http.Server {
	if d <= 0 {
		d = DefaultTimeout
	}
	hs := &http.Server{
		Handler:           withIOTimeouts(h, d),
		ReadHeaderTimeout: min(30*time.Second, d), // bankml's own bound on a request's head
	}
	if log != nil {
		hs.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	}
	return hs
}

// withIOTimeouts gives every socket read of a request's body and every write of its answer d to complete,
// as cpp-httplib's set_read_timeout and set_write_timeout do for llama-server's -to/--timeout: each read
// waits at most d for data (SocketStream::wait_readable), each write at most d for the socket to take it
// (wait_writable). It is a timeout per operation, not per exchange: a streamed answer longer than d is not
// cut, nor an answer that takes longer than d to generate before its first byte; a client that sends
// nothing or reads nothing for d loses its connection (the handler's read or write fails, and a stream
// stops). net/http's ReadTimeout and WriteTimeout would instead bound the whole exchange, so the
// deadlines are moved forward before each operation through http.ResponseController.
//
// The read deadline is cleared when the body is read to its end (or closed), so that the server's
// background read, which watches for the client going away while an answer is generated, is not cut.
// When a read of the body fails (a timeout), the deadline is left in the past: net/http, before it
// writes the answer's head, reads what is left of a small unread body to keep the connection, and that
// read must fail at once, so that the answer (400 for a generating route) goes out with "Connection:
// close" and the connection is closed, as cpp-httplib answers a body read that timed out (400, and no
// keep-alive after an error: Server::write_response_core). A body the handler left unread is given d
// once more, when the answer starts, for that same read of net/http (cpp-httplib drains an unconsumed
// body under its read timeout too, end of Server::process_request). The write deadline is cleared when a
// request starts and set once more when its handler returns, for net/http's final flush.
func withIOTimeouts(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{}) // a previous exchange's deadline on this connection
		tw := &deadlineWriter{ResponseWriter: w, rc: rc, d: d}
		if r.Body != nil && r.Body != http.NoBody {
			tw.body = &deadlineBody{ReadCloser: r.Body, rc: rc, d: d}
			r.Body = tw.body
		}
		next.ServeHTTP(tw, r)
		tw.extend()
	})
}

// deadlineBody moves the connection's read deadline d ahead before each Read; it clears the deadline at
// the body's end and leaves it passed after a failed Read.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	d    time.Duration
	done bool // read to its end, closed, failed, or left unread: the deadline is no longer moved
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.done {
		return b.ReadCloser.Read(p)
	}
	_ = b.rc.SetReadDeadline(time.Now().Add(b.d))
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.clear()
	case err != nil:
		b.done = true
		_ = b.rc.SetReadDeadline(time.Unix(1, 0)) // every later read fails at once
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.clear()
	return b.ReadCloser.Close()
}

func (b *deadlineBody) clear() {
	if !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

// maxDrain is how much of a body left unread deadlineBody.unread reads, as net/http's
// maxPostHandlerReadBytes (256 KiB) before it writes an answer's head.
const maxDrain = 256 << 10

// unread reads up to maxDrain bytes of the rest of a body the handler left unread, with d to do it, before
// the answer starts, as net/http would do with no deadline when it writes the answer's head. After a failed
// read the deadline stays passed, so that net/http's own read fails at once and the connection is closed
// after the answer; after the end, net/http's background read has cleared it; with more left, net/http reads
// up to maxDrain more under the same deadline and closes the connection. Once only: the background read
// must keep no deadline.
func (b *deadlineBody) unread() {
	if b.done {
		return
	}
	b.done = true
	_ = b.rc.SetReadDeadline(time.Now().Add(b.d))
	_, _ = io.CopyN(io.Discard, b.ReadCloser, maxDrain)
}

// deadlineWriter moves the connection's write deadline d ahead before each write and flush; before the
// first, it gives a body left unread d (deadlineBody.unread).
type deadlineWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	d    time.Duration
	body *deadlineBody // nil: no body
}

func (w *deadlineWriter) extend() {
	if w.body != nil {
		w.body.unread()
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController.Flush calls.
func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
