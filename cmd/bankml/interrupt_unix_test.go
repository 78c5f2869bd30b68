//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// interruptWriter is a command's standard output that sends the process SIGINT once the output holds after.
type interruptWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	after string
	sent  bool
}

func (w *interruptWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent && strings.Contains(w.buf.String(), w.after) {
		w.sent = true
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	}
	return len(p), nil
}

// TestAnInterruptedWriteExits130SayingInterrupted: Ctrl-C (SIGINT) during quantize's or synth's write exits
// 130 with one line "bankml: CMD: interrupted", as run --chat and a shell report an interrupted command, and
// leaves neither OUT nor its temporary file.
func TestAnInterruptedWriteExits130SayingInterrupted(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.gguf")
	if code, _, stderr := runCLI("synth", in, "--arch", "qwen3", "--preset", "tiny", "--type", "F32"); code != 0 {
		t.Fatalf("synth: exit %d %s", code, stderr)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		after string // the output after which SIGINT is sent ("": once the temporary file exists)
		want  string
	}{
		{name: "an interrupted quantize exits 130 saying interrupted",
			args:  []string{"quantize", in, filepath.Join(dir, "q", "out.gguf"), "--type", "ptqtp", "--planes", "3", "-t", "1"},
			after: "[", want: "bankml: quantize: interrupted\n"},
		{name: "an interrupted synth exits 130 saying interrupted",
			args: []string{"synth", filepath.Join(dir, "s", "out.gguf"), "--arch", "qwen3", "--preset", "bonsai-1.7b", "--type", "F16"},
			want: "bankml: synth: interrupted\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outDir := filepath.Dir(tc.args[2])
			if tc.args[0] == "synth" {
				outDir = filepath.Dir(tc.args[1])
			}
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				t.Fatal(err)
			}
			stdout := &interruptWriter{after: tc.after}
			var stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- run(tc.args, strings.NewReader(""), stdout, &stderr) }()
			if tc.after == "" { // SIGINT once the write has begun (the command catches it by then)
				deadline := time.Now().Add(time.Minute)
				for {
					if left, _ := os.ReadDir(outDir); len(left) > 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("no temporary file after a minute")
					}
					time.Sleep(time.Millisecond)
				}
				stdout.mu.Lock()
				stdout.sent = true
				stdout.mu.Unlock()
				if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
			var code int
			select {
			case code = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the command did not stop")
			}
			if code != 130 || stderr.String() != tc.want {
				t.Errorf("exit %d, stderr %q; want 130 and %q", code, stderr.String(), tc.want)
			}
			if left, _ := os.ReadDir(outDir); len(left) != 0 {
				t.Errorf("left %v", left)
			}
		})
	}
}
