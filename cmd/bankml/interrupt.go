package main

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// signals is one run's record of the signal that stopped its command: run makes one, hands it to the command
// (kong binds it to the Run methods' *signals parameter) and reads it for the exit status (interruptedStatus).
type signals struct {
	caught atomic.Int32 // the signal a notifyContext context was last canceled by (0: none)
}

// notifyContext is signal.NotifyContext for a command: a context canceled when one of sigs arrives, and the
// function that stops catching them. It also records the signal, so that the command's context.Canceled exits
// with that signal's status (interruptedStatus). Every command that catches a signal catches it here.
//
// A signal the process was started with ignored stays ignored: signal.Notify would install a handler for it,
// so that `nohup bankml quantize …` stopped when the terminal closed (SIGHUP), and a command started in the
// background by a non-interactive shell (SIGINT ignored) stopped on a Ctrl-C meant for the shell.
func (sg *signals) notifyContext(sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	var caughtSigs []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			caughtSigs = append(caughtSigs, s)
		}
	}
	if len(caughtSigs) > 0 {
		signal.Notify(ch, caughtSigs...)
	}
	go func() {
		select {
		case s := <-ch:
			if n, ok := s.(syscall.Signal); ok {
				sg.caught.Store(int32(n))
			}
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel()
	}
}

// interruptedStatus is the exit status and the word of a command a signal stopped (it returned
// context.Canceled): 128 plus the signal's number, as a shell reports a process that signal killed, and the
// shell's word for it: SIGINT (Ctrl-C) 130 "interrupted", SIGTERM 143 "terminated", SIGHUP 129 "hung up".
// A command that caught no signal through notifyContext was stopped by Ctrl-C: 130.
func (sg *signals) interruptedStatus() (int, string) {
	n := syscall.Signal(sg.caught.Load())
	switch n {
	case syscall.SIGTERM:
		return 128 + int(n), "terminated"
	case syscall.SIGHUP:
		return 128 + int(n), "hung up"
	}
	return 128 + int(syscall.SIGINT), "interrupted"
}
