package clients

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/testdata"
)

// The bankml binary the process tests run, built once per test binary.
var (
	bankmlOnce sync.Once
	bankmlPath string
	bankmlErr  error
	bankmlDir  string
)

// TestMain removes the binary the process tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if chatShim != nil {
		chatShim.Close()
	}
	if bankmlDir != "" {
		os.RemoveAll(bankmlDir)
	}
	os.Exit(code)
}

// bankmlBinary builds cmd/bankml into a temporary folder (once).
func bankmlBinary(t testing.TB) string {
	t.Helper()
	bankmlOnce.Do(func() {
		bankmlDir, bankmlErr = os.MkdirTemp("", "bankml-serve-test")
		if bankmlErr != nil {
			return
		}
		bankmlPath = filepath.Join(bankmlDir, "bankml")
		cmd := exec.Command("go", "build", "-o", bankmlPath, "./cmd/bankml")
		cmd.Dir = testdata.ModuleRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			bankmlErr = fmt.Errorf("go build ./cmd/bankml: %v\n%s", err, out)
		}
	})
	if bankmlErr != nil {
		t.Fatal(bankmlErr)
	}
	return bankmlPath
}

// serveProcess is a running `bankml serve`.
type serveProcess struct {
	URL    string // http://127.0.0.1:PORT
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

// freePort asks the kernel for a free loopback port.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe runs `bankml serve MODEL --unpinned --listen 127.0.0.1:PORT
// args...` and waits (at most a minute) until /health answers 200. The
// process is killed at the end of the test if it still runs.
func startServe(t testing.TB, model string, args ...string) *serveProcess {
	t.Helper()
	addr := freePort(t)
	argv := append([]string{"serve", model, "--unpinned", "--listen", addr}, args...)
	p := &serveProcess{URL: "http://" + addr, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bankmlBinary(t), argv...)
	p.cmd.Stderr = &syncWriter{w: p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("bankml %v exited before answering: %v\n%s", argv, err, p.Stderr())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("bankml %v: no /health in a minute\n%s", argv, p.Stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process.
func (p *serveProcess) kill() {
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	err := <-p.done
	p.done <- err
}

// Stderr is what the server has logged so far.
func (p *serveProcess) Stderr() string {
	w := p.cmd.Stderr.(*syncWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	return p.stderr.String()
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
