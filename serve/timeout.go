package serve

import (
	"io"
	"net/http"
	"time"
)

// DefaultTimeout is llama-server's default read/write timeout (-to/--timeout; common_params.timeout_read
// and timeout_write, 3600 seconds at the reference's commit).
const DefaultTimeout = 3600 * time.Second

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
// The write deadline is cleared when a request starts and set once more when its handler returns, for
// net/http's final flush.
func withIOTimeouts(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{}) // a previous exchange's deadline on this connection
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, d: d}
		}
		tw := &deadlineWriter{ResponseWriter: w, rc: rc, d: d}
		next.ServeHTTP(tw, r)
		tw.extend()
	})
}

// deadlineBody moves the connection's read deadline d ahead before each Read, and clears it at the end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	d    time.Duration
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.done {
		return b.ReadCloser.Read(p)
	}
	_ = b.rc.SetReadDeadline(time.Now().Add(b.d))
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.clear()
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

// deadlineWriter moves the connection's write deadline d ahead before each write and flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) extend() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

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
