package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair (posix_openpt, unlockpt, ptsname):
// the master, which the test types into, and the slave, which bankml reads
// as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close(); master.Close() })
	return master, slave
}

// TestRunChatOnATerminal: with standard input on a terminal, bankml run --chat
// is an interactive loop: a "> " marker on standard error before each
// message, keys typed as a user types them (a backspace included; the test writes each line to the
// pseudo-terminal's master once the marker is shown), the turns equal to
// the reference's, nothing but the answers on standard output; Ctrl-D on an
// empty line ends it, and so does Ctrl-C at the prompt (as in llama-cli).
func TestRunChatOnATerminal(t *testing.T) {
	fx := newChatFixture(t)
	for _, tc := range []struct {
		name  string
		keys  []string // what is typed at the 1st, 2nd, ... marker
		users []string
	}{
		{"two turns, Ctrl-D", []string{"What colour is the sky?\r", "And at sunn\x7fset?\r", "\x04"}, []string{"What colour is the sky?", "And at sunset?"}},
		{"Ctrl-C at the prompt", []string{"Hello!\r", "\x03"}, []string{"Hello!"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := refChat(t, fx.rm, fx.tmpl, 0, []int{12}, "", tc.users)
			master, slave := openPTY(t)
			go io.Copy(io.Discard, master) // nothing is expected: echo goes to stderr
			e := &syncBuffer{}
			var o strings.Builder
			var got []chatTurn
			done := make(chan int)
			go func() {
				done <- run([]string{"run", fx.path, "--chat", "-t", "2", "-n", "12"}, slave, &o, e, func(c *cli) {
					c.Run.onTurn = func(t chatTurn) { got = append(got, t) }
				})
			}()
			typed := 0
			deadline := time.Now().Add(2 * time.Minute)
			var code int
		loop:
			for {
				select {
				case code = <-done:
					break loop
				case <-time.After(20 * time.Millisecond):
				}
				if typed < len(tc.keys) && strings.Count(e.String(), "> ") > typed {
					if _, err := master.WriteString(tc.keys[typed]); err != nil {
						t.Fatal(err)
					}
					typed++
				}
				if time.Now().After(deadline) {
					t.Fatalf("no end after typing %d of %d inputs; stderr:\n%s", typed, len(tc.keys), e.String())
				}
			}
			if code != 0 || typed != len(tc.keys) {
				t.Fatalf("exit %d after %d of %d inputs; stderr:\n%s", code, typed, len(tc.keys), e.String())
			}
			checkTurns(t, fx.rm, want, got, o.String(), e.String())
			if !strings.Contains(e.String(), "/bye or Ctrl-D ends the conversation, /? lists the commands") {
				t.Errorf("no banner on standard error:\n%s", e.String())
			}
		})
	}
}

// interruptingWriter sends the process SIGINT (Ctrl-C) at its first write,
// then gives the signal a moment to arrive before the write returns.
type interruptingWriter struct {
	strings.Builder
	sent bool
}

func (w *interruptingWriter) Write(p []byte) (int, error) {
	if !w.sent {
		w.sent = true
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			return 0, err
		}
		time.Sleep(500 * time.Millisecond)
	}
	return w.Builder.Write(p)
}

// TestRunChatCtrlCStopsTheAnswer: Ctrl-C while an answer is generated stops
// that answer after the token being printed, not the program: its text joins
// the conversation, and the next message's turn takes the cache as the
// reference's does after a one-token answer.
func TestRunChatCtrlCStopsTheAnswer(t *testing.T) {
	fx := newChatFixture(t)
	users := []string{"Write a long story about a dragon.", "Go on."}
	want, _ := refChat(t, fx.rm, fx.tmpl, 0, []int{1, 12}, "", users)
	var o interruptingWriter
	e := &syncBuffer{}
	var got []chatTurn
	code := run([]string{"run", fx.path, "--chat", "-t", "2", "-n", "12"}, strings.NewReader(strings.Join(users, "\n")), &o, e, func(c *cli) {
		c.Run.onTurn = func(t chatTurn) { got = append(got, t) }
	})
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, e.String())
	}
	if len(got) > 0 && got[0].Stop != "interrupt" {
		t.Errorf("turn 1 stopped by %q, want interrupt", got[0].Stop)
	}
	if !strings.Contains(e.String(), "stopped: interrupted") {
		t.Errorf("no interrupted turn on standard error:\n%s", e.String())
	}
	checkTurns(t, fx.rm, want, got, o.String(), e.String())
}

// TestRunChatHelperProcess is not a test of its own: TestRunChatCtrlCOnATerminal
// runs the test binary through it as bankml, in a session of its own.
func TestRunChatHelperProcess(t *testing.T) {
	if os.Getenv("BANKML_CHAT_HELPER") != "1" {
		t.Skip("the bankml process of TestRunChatCtrlCOnATerminal, run only by it")
	}
	args := os.Args
	for len(args) > 0 && args[0] != "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		t.Fatal("no bankml arguments after --")
	}
	os.Exit(run(args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// TestRunChatCtrlCOnATerminal: bankml run --chat on the controlling terminal
// of its session (a pseudo-terminal), Ctrl-C typed as a user types it, so that
// the terminal raises SIGINT while an answer is generated and hands the key to
// the line editor at the prompt, as in a shell. Each answer is stopped by its
// own first Ctrl-C and the conversation goes on; Ctrl-C at the prompt ends the
// conversation at once with status 0 (llama-cli's loop), whether or not an
// answer was stopped before it; nothing typed is dropped or left unanswered.
func TestRunChatCtrlCOnATerminal(t *testing.T) {
	path := chatModel(t)
	type step struct {
		until func(out string) bool // what the output must show before keys are typed
		keys  string
	}
	prompts := func(n int) func(string) bool { // the n-th "> " marker is shown (the line editor reads)
		return func(out string) bool { return strings.Count(out, "> ") >= n }
	}
	answering := func(n int) func(string) bool { // the n-th answer has printed some text
		return func(out string) bool {
			parts := strings.Split(out, "> Hi\r\n")
			return len(parts) > n && len(parts[n]) >= 16
		}
	}
	for _, tc := range []struct {
		name        string
		steps       []step
		interrupted int // how many "stopped: interrupted" summaries
	}{
		{"Ctrl-C stops each answer, /exit ends", []step{
			{prompts(1), "Hi\r"}, {answering(1), "\x03"},
			{prompts(2), "Hi\r"}, {answering(2), "\x03"},
			{prompts(3), "/exit\r"},
		}, 2},
		{"Ctrl-C at an idle prompt ends the conversation", []step{{prompts(1), "\x03"}}, 0},
		{"Ctrl-C at the prompt after a stopped answer ends the conversation", []step{
			{prompts(1), "Hi\r"}, {answering(1), "\x03"}, {prompts(2), "\x03"},
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master, slave := openPTY(t)
			out := &syncBuffer{}
			go io.Copy(out, master)
			cmd := exec.Command(os.Args[0], "-test.run=^TestRunChatHelperProcess$", "--",
				"run", path, "--chat", "-t", "1", "-c", "4096", "-n", "-1", "--ignore-eos")
			cmd.Env = append(os.Environ(), "BANKML_CHAT_HELPER=1")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.After(2 * time.Minute)
			var err error
			typed := 0
		loop:
			for {
				select {
				case err = <-done:
					break loop
				case <-deadline:
					_ = cmd.Process.Kill()
					t.Fatalf("no end after %d of %d inputs; terminal:\n%s", typed, len(tc.steps), out.String())
				case <-time.After(10 * time.Millisecond):
				}
				if typed < len(tc.steps) && tc.steps[typed].until(out.String()) {
					if _, err := master.WriteString(tc.steps[typed].keys); err != nil {
						t.Fatal(err)
					}
					typed++
				}
			}
			time.Sleep(100 * time.Millisecond) // the last output still on its way through the terminal
			got := out.String()
			if err != nil || typed != len(tc.steps) {
				t.Fatalf("exit %v after %d of %d inputs; terminal:\n%s", err, typed, len(tc.steps), got)
			}
			if n := strings.Count(got, "stopped: interrupted"); n != tc.interrupted {
				t.Errorf("%d answers stopped by Ctrl-C, want %d; terminal:\n%s", n, tc.interrupted, got)
			}
			if n := strings.Count(got, "stopped: "); n != tc.interrupted {
				t.Errorf("%d answers, want %d (each stopped by Ctrl-C); terminal:\n%s", n, tc.interrupted, got)
			}
		})
	}
}
