//go:build unix

package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// signalWriter is a command's output that sends the process sig once the output holds after, and then holds
// that write until the command has caught the signal (and a little longer), so that the signal lands while the
// command is still in the step that wrote it.
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	after string
	sig   syscall.Signal
	sent  bool
	nohup bool     // the signal is ignored: the write is not held
	sigs  *signals // the run's signal record (watch, passed to run)
}

// watch is run's option that gives w the run's signal record, so that a held write can see the command catch
// the signal.
func (w *signalWriter) watch(c *cli) {
	w.mu.Lock()
	w.sigs = c.sigs
	w.mu.Unlock()
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	send := !w.sent && w.after != "" && strings.Contains(w.buf.String(), w.after)
	w.sent = w.sent || send
	sigs := w.sigs
	w.mu.Unlock()
	if send {
		_ = syscall.Kill(os.Getpid(), w.sig)
		if w.nohup {
			return len(p), nil
		}
		for deadline := time.Now().Add(10 * time.Second); sigs.caught.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestASignalStoppingACommandExitsWithTheShellsStatus: SIGINT, SIGTERM and SIGHUP stopping quantize's or synth's
// write exit 128 plus the signal's number (130, 143, 129), as a shell reports a process each one killed, with
// one line naming what stopped it, and leave neither OUT nor its temporary file.
func TestASignalStoppingACommandExitsWithTheShellsStatus(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.gguf")
	if code, _, stderr := runCLI("synth", in, "--arch", "qwen3", "--preset", "tiny", "--type", "F32"); code != 0 {
		t.Fatalf("synth: exit %d %s", code, stderr)
	}
	signals := []struct {
		name string
		sig  syscall.Signal
		code int
		word string
	}{{"SIGINT", syscall.SIGINT, 130, "interrupted"}, {"SIGTERM", syscall.SIGTERM, 143, "terminated"}, {"SIGHUP", syscall.SIGHUP, 129, "hung up"}}
	for _, s := range signals {
		for _, tc := range []struct {
			name  string
			args  []string
			after string // the output after which the signal is sent ("": once the temporary file exists)
		}{
			{name: "quantize stopped by " + s.name + " exits with its status",
				args:  []string{"quantize", in, filepath.Join(dir, "q", "out.gguf"), "--type", "ptqtp", "--planes", "3", "-t", "1"},
				after: "["},
			{name: "synth stopped by " + s.name + " exits with its status",
				args: []string{"synth", filepath.Join(dir, "s", "out.gguf"), "--arch", "qwen3", "--preset", "bonsai-1.7b", "--type", "F16"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				outDir := filepath.Dir(tc.args[2])
				if tc.args[0] == "synth" {
					outDir = filepath.Dir(tc.args[1])
				}
				if err := os.MkdirAll(outDir, 0o755); err != nil {
					t.Fatal(err)
				}
				stdout := &signalWriter{after: tc.after, sig: s.sig}
				var stderr bytes.Buffer
				done := make(chan int, 1)
				go func() { done <- run(tc.args, strings.NewReader(""), stdout, &stderr, stdout.watch) }()
				if tc.after == "" { // the signal once the write has begun (the command catches it by then)
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
					if err := syscall.Kill(os.Getpid(), s.sig); err != nil {
						t.Fatal(err)
					}
				}
				var code int
				select {
				case code = <-done:
				case <-time.After(2 * time.Minute):
					t.Fatal("the command did not stop")
				}
				want := "bankml: " + tc.args[0] + ": " + s.word + "\n"
				if code != s.code || stderr.String() != want {
					t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), s.code, want)
				}
				if left, _ := os.ReadDir(outDir); len(left) != 0 {
					t.Errorf("left %v", left)
				}
			})
		}
	}
}

// TestServeStoppedWhileItAdmitsExitsAsEveryCommand: SIGINT or SIGTERM while serve admits its model (before it
// listens) stops it at once with the status and line every command a signal stops gives (130 "interrupted",
// 143 "terminated"), not exit 1, and it never listens.
func TestServeStoppedWhileItAdmitsExitsAsEveryCommand(t *testing.T) {
	model := storiesPath(t)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		code int
		want string
	}{
		{name: "SIGINT while serve admits its model exits 130 saying interrupted", sig: syscall.SIGINT, code: 130, want: "bankml: serve: interrupted\n"},
		{name: "SIGTERM while serve admits its model exits 143 saying terminated", sig: syscall.SIGTERM, code: 143, want: "bankml: serve: terminated\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The signal is sent as admission writes its "admitted:" line, and that write is held until serve
			// has caught it: admission has not returned yet.
			stderr := &signalWriter{after: "admitted:", sig: tc.sig}
			done := make(chan int, 1)
			go func() {
				done <- run([]string{"serve", model, "--unpinned", "--listen", "127.0.0.1:0", "-t", "1"}, strings.NewReader(""), &bytes.Buffer{}, stderr, stderr.watch)
			}()
			var code int
			select {
			case code = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("serve did not stop")
			}
			got := stderr.String()
			if code != tc.code || !strings.HasSuffix(got, "\n"+tc.want) || strings.Contains(got, "listening on") {
				t.Errorf("exit %d, stderr\n%s\nwant exit %d, ending %q, never listening", code, got, tc.code, tc.want)
			}
		})
	}
}

// TestTrainStoppedBySIGTERMSavesItsCheckpointAndExits143: SIGTERM (a service manager, a timeout) or SIGHUP
// while train takes steps stops it as Ctrl-C does, the checkpoint saved first, with the signal's status.
func TestTrainStoppedBySIGTERMSavesItsCheckpointAndExits143(t *testing.T) {
	teacher := storiesPath(t)
	heldout := filepath.Join(t.TempDir(), "heldout.txt")
	if err := os.WriteFile(heldout, []byte("Once upon a time there was a little girl named Lily. She loved to play outside in the park."), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		code int
		want string
	}{
		{name: "SIGTERM while train takes steps saves the checkpoint and exits 143", sig: syscall.SIGTERM, code: 143, want: "bankml: train: terminated\n"},
		{name: "SIGHUP while train takes steps saves the checkpoint and exits 129", sig: syscall.SIGHUP, code: 129, want: "bankml: train: hung up\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			stderr := &signalWriter{after: "step 1/", sig: tc.sig}
			done := make(chan int, 1)
			go func() {
				done <- run([]string{"train", "--teacher", teacher, "--heldout", heldout, "--out", out,
					"--stories", "4", "--story-tokens", "24", "--steps", "100000", "--batch", "1", "--seq", "16", "--warmup", "0",
					"--checkpoint-every", "0", "--mode", "float", "--n-embd", "16", "--n-head", "2", "--n-head-kv", "1",
					"--n-ff", "32", "--export", "f32", "-t", "1"}, strings.NewReader(""), &bytes.Buffer{}, stderr, stderr.watch)
			}()
			var code int
			select {
			case code = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("train did not stop")
			}
			got := stderr.String()
			if code != tc.code || !strings.HasSuffix(got, "\n"+tc.want) {
				t.Errorf("exit %d, stderr ends\n%s\nwant exit %d, ending %q", code, got[max(0, len(got)-300):], tc.code, tc.want)
			}
			if _, err := os.Stat(filepath.Join(out, "checkpoint.bin")); err != nil {
				t.Errorf("no checkpoint: %v", err)
			}
		})
	}
}

// TestASignalIgnoredAtStartStaysIgnored: a command started with SIGHUP ignored (nohup) runs on when SIGHUP
// comes (the terminal closed), rather than stopping as it does where SIGHUP is not ignored.
func TestASignalIgnoredAtStartStaysIgnored(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.gguf")
	if code, _, stderr := runCLI("synth", in, "--arch", "qwen3", "--preset", "tiny", "--type", "F32"); code != 0 {
		t.Fatalf("synth: exit %d %s", code, stderr)
	}
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "quantize under nohup finishes its write after SIGHUP",
			args: []string{"quantize", in, filepath.Join(dir, "out.gguf"), "--type", "ptqtp", "--planes", "3", "-t", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout := &signalWriter{after: "[", sig: syscall.SIGHUP, nohup: true}
			var stderr bytes.Buffer
			code := run(tc.args, strings.NewReader(""), stdout, &stderr, stdout.watch)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q; want 0", code, stderr.String())
			}
			if _, err := os.Stat(tc.args[2]); err != nil {
				t.Errorf("no OUT: %v", err)
			}
		})
	}
}

// TestAPullStoppedBySIGTERMExitsWithItsStatus: SIGTERM while pull downloads (the mirror has sent part of the file
// and stalls) ends the download at once with 143 and one line saying so, as quantize's and synth's do, and the
// model is not in the store.
func TestAPullStoppedBySIGTERMExitsWithItsStatus(t *testing.T) {
	_, models := storeEnv(t)
	file, err := os.ReadFile(filepath.Join(models, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	stalled := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(file)))
		_, _ = w.Write(file[:len(file)/2])
		w.(http.Flusher).Flush()
		once.Do(func() { close(stalled) })
		<-r.Context().Done()
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"pull", "stories260K", "--from", srv.URL}, strings.NewReader(""), &stdout, &stderr)
	}()
	select {
	case <-stalled:
	case <-time.After(time.Minute):
		t.Fatal("pull did not reach the mirror within a minute")
	}
	time.Sleep(50 * time.Millisecond) // the half file read
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		t.Fatal("pull did not stop on SIGTERM")
	}
	if want := "bankml: pull: terminated\n"; code != 143 || !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q; want 143 and a last line %q", code, stderr.String(), want)
	}
	if code, out, _ := bankml(t, "list"); code != 0 || strings.Contains(out, "stories260K") {
		t.Errorf("after the stopped pull, list: %d %q; want no stories260K", code, out)
	}
}
