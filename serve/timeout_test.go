package serve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestIOTimeouts checks withIOTimeouts against cpp-httplib's per-operation read/write timeouts
// (llama-server's -to/--timeout): an answer streamed for longer than the timeout arrives whole, and so does
// one whose first byte comes after the timeout; a client that stops sending its body, or stops reading a
// stream, makes the handler's read or write fail.
func TestIOTimeouts(t *testing.T) {
	const d = 400 * time.Millisecond
	chunks := func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		for i := range 5 { // 5 × 200 ms: 1 s, more than d
			fmt.Fprintf(w, "data: %d\n\n", i)
			if err := rc.Flush(); err != nil {
				t.Errorf("flush: %v", err)
				return
			}
			time.Sleep(d / 2)
		}
	}
	late := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("body: %v", err)
		}
		time.Sleep(2 * d) // generating before the first byte
		fmt.Fprintf(w, "late %s", body)
	}
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		body    string
		want    string
	}{
		{"a stream longer than the timeout", chunks, "", "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n"},
		{"an answer later than the timeout", late, "x", "late x"},
	} {
		srv := httptest.NewServer(withIOTimeouts(c.handler, d))
		for round := range 2 { // the second request reuses the connection, after its deadlines passed
			resp, err := http.Post(srv.URL, "text/plain", strings.NewReader(c.body))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(b) != c.want {
				t.Errorf("%s (round %d): %q, %v; want %q", c.name, round, b, err, c.want)
			}
			time.Sleep(2 * d)
		}
		srv.Close()
	}

	// A body that stops coming: the handler's read fails after about d.
	readErr := make(chan error, 1)
	srv := httptest.NewServer(withIOTimeouts(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), d))
	t.Cleanup(srv.Close)
	sendRaw(t, srv, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\nonly part of it")
	select {
	case err := <-readErr:
		if err == nil {
			t.Error("a stalled body was read without an error")
		}
	case <-time.After(20 * d):
		t.Error("a stalled body did not time out")
	}

	// A client that reads nothing of a stream: a write fails after about d once the socket's buffers fill.
	writeErr := make(chan error, 1)
	srv2 := httptest.NewServer(withIOTimeouts(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		chunk := []byte(strings.Repeat("x", 1<<16))
		for {
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
			if err := rc.Flush(); err != nil {
				writeErr <- err
				return
			}
		}
	}), d))
	t.Cleanup(srv2.Close)
	conn2 := sendRaw(t, srv2, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	_, _ = bufio.NewReader(conn2).Peek(1) // the answer started; nothing more is read
	select {
	case err := <-writeErr:
		if err == nil || !strings.Contains(err.Error(), "timeout") {
			t.Errorf("a stalled reader: %v, want a timeout", err)
		}
	case <-time.After(30 * d):
		t.Error("a stalled reader did not time out")
	}
}

// sendRaw opens a connection to srv and writes req to it as it is; the connection closes with the test.
func sendRaw(t *testing.T, srv *httptest.Server, req string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestStalledBodyAnswered: a client that announces a Content-Length, sends part of the body and then
// nothing is answered and dropped within about the timeout, as cpp-httplib does (its body read times out:
// 400 with "Connection: close", Server::process_request and write_response_core). A /completion body
// that stops gets the 400; a body a route does not read (GET /health) gets its answer once the read of
// what is left times out; either way the connection is closed after the answer.
func TestStalledBodyAnswered(t *testing.T) {
	const d = 300 * time.Millisecond
	s := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	srv := httptest.NewServer(withIOTimeouts(s.Handler(), d))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		req    string
		status int
	}{
		{"POST /completion HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"prompt\": \"Once", http.StatusBadRequest},
		{"GET /health HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"a\": ", http.StatusOK},
	} {
		const n = 3 // connections at once, each answered
		errs := make(chan error, n)
		for range n {
			conn := sendRaw(t, srv, c.req)
			go func() { errs <- stalledAnswer(conn, c.status, 20*d) }()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Errorf("%q: %v", c.req, err)
			}
		}
	}
}

// stalledAnswer reads one answer from conn, wants status and "Connection: close", and then the end of the
// connection, all within limit.
func stalledAnswer(conn net.Conn, status int, limit time.Duration) error {
	_ = conn.SetReadDeadline(time.Now().Add(limit))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("answer body: %w", err)
	}
	if resp.StatusCode != status || !resp.Close {
		return fmt.Errorf("answer %d (close %v) %s; want %d and Connection: close", resp.StatusCode, resp.Close, body, status)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return fmt.Errorf("after the answer: %v, want the connection closed (EOF)", err)
	}
	return nil
}
